package plan

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/gocacheprog"
	"github.com/cordon-sandbox/cordon/helperspec"
	"github.com/cordon-sandbox/cordon/policy"
)

// The sandbox cache's directories for the go command, beside GOCACHE (see
// cacheEnv).
const (
	// goPathDir is the sandbox's GOPATH in the sandbox cache: the checksum
	// database's signed tree head (pkg/sumdb) and go install's binaries
	// (bin) go there, as the host's GOPATH stays read-only.
	goPathDir = "gopath"
	// goModDir is the sandbox's module cache in the sandbox cache.
	goModDir = "go-mod"
)

// goEnv is the go command's share of cacheEnv: GOPATH in the sandbox cache
// (the host's stays read-only, and go get and go mod tidy must write the
// checksum database's tree head there), and GOCACHEPROG, cordon's build
// cache program, which reads the sandbox's build cache and then the
// host's, and writes only the sandbox's. GOCACHEPROG names the helper at
// helperspec.HelperPath; the Landlock-only backend renames it
// (landlockGoCacheProg).
// A name the policy sets or passes is left alone, and GOCACHEPROG is not
// set when the policy sets or passes GOCACHE, or the host's build cache is
// missing or not readable inside.
func goEnv(p *policy.Policy, c string, opts Options, getenv func(string) (string, bool)) map[string]string {
	env := map[string]string{}
	if !policyNames(p, "GOPATH") {
		env["GOPATH"] = filepath.Join(c, goPathDir)
	}
	if policyNames(p, "GOCACHE") || policyNames(p, "GOCACHEPROG") {
		return env
	}
	host := hostGoCache(opts, getenv)
	if host == "" || !policy.CoveredBy(host, p.Read) || policy.DeniedBy(p.Deny, host) != "" {
		return env
	}
	if fi, err := os.Stat(host); err != nil || !fi.IsDir() {
		return env
	}
	if v, ok := quoteFields(helperspec.HelperPath, gocacheprog.Command, filepath.Join(c, "go-build"), host); ok {
		env["GOCACHEPROG"] = v
	}
	return env
}

// policyNames reports whether the policy sets or passes the variable name
// (a pass entry "GO*" passes it too).
func policyNames(p *policy.Policy, name string) bool {
	if _, ok := p.Env.Set[name]; ok {
		return true
	}
	for _, n := range p.Env.Pass {
		if n == name {
			return true
		}
		if prefix, ok := strings.CutSuffix(n, "*"); ok && strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// hostGoCache is the host's Go build cache, as the go command finds it:
// $GOCACHE, else $XDG_CACHE_HOME/go-build, else ~/.cache/go-build; "" when
// it is off or not absolute.
func hostGoCache(opts Options, getenv func(string) (string, bool)) string {
	if v, ok := getenv("GOCACHE"); ok && v != "" {
		if !filepath.IsAbs(v) {
			return ""
		}
		return filepath.Clean(v)
	}
	if v, ok := getenv("XDG_CACHE_HOME"); ok && v != "" {
		if !filepath.IsAbs(v) {
			return "" // os.UserCacheDir refuses it, and so the go command
		}
		return filepath.Join(v, "go-build")
	}
	if opts.Home == "" {
		return ""
	}
	return filepath.Join(opts.Home, ".cache", "go-build")
}

// hostGoPath is the first entry of the host's GOPATH, else ~/go.
func hostGoPath(opts Options, getenv func(string) (string, bool)) string {
	if v, ok := getenv("GOPATH"); ok && v != "" {
		if first, _, _ := strings.Cut(v, string(os.PathListSeparator)); filepath.IsAbs(first) {
			return filepath.Clean(first)
		}
		return ""
	}
	if opts.Home == "" {
		return ""
	}
	return filepath.Join(opts.Home, "go")
}

// quoteFields joins fields as the go command splits GOCACHEPROG
// (cmd/internal/quoted): a field with a space or a quote is put in single
// quotes, or double quotes if it has a single quote; ok is false for a
// field with both kinds of quote, which cannot be written.
func quoteFields(fields ...string) (string, bool) {
	out := make([]string, len(fields))
	for i, f := range fields {
		switch {
		case f != "" && !strings.ContainsAny(f, " \t\n\r'\""):
			out[i] = f
		case !strings.Contains(f, "'"):
			out[i] = "'" + f + "'"
		case !strings.Contains(f, `"`):
			out[i] = `"` + f + `"`
		default:
			return "", false
		}
	}
	return strings.Join(out, " "), true
}

// prepareGoCache readies the sandbox cache c for the go command: it
// creates the module cache directory (the bwrap backend may bind it) and
// seeds the sandbox's checksum database tree heads from the host's
// (GOPATH/pkg/sumdb/NAME/latest), each where the sandbox has none yet, so
// that the sandbox verifies modules against a tree at least as new as the
// one the host has seen (a database showing the sandbox another history is
// caught) and needs no network to learn one. Errors are ignored: the go
// command works without either.
func prepareGoCache(c string, opts Options, getenv func(string) (string, bool)) {
	os.Mkdir(filepath.Join(c, goModDir), 0o700)
	// The module cache bwrap binds (goModBindDir) lives outside the
	// sandbox cache, in a directory no sandbox sees.
	mod := goModBindDir(c)
	if os.MkdirAll(filepath.Dir(mod), 0o700) == nil {
		os.Mkdir(mod, 0o700)
	}
	host := hostGoPath(opts, getenv)
	if host == "" {
		return
	}
	hostSum := filepath.Join(host, "pkg", "sumdb")
	names, err := readDirNames(hostSum)
	if err != nil {
		return
	}
	// Sandboxes write c: every path in it is reached through an os.Root,
	// so no link left there takes the copy outside.
	cr, err := os.OpenRoot(c)
	if err != nil {
		return
	}
	defer cr.Close()
	for _, name := range names {
		if !fs.ValidPath(name) || strings.Contains(name, "/") {
			continue
		}
		dir := path.Join(goPathDir, "pkg", "sumdb", name)
		dst := path.Join(dir, "latest")
		if _, err := cr.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		b, err := readRegular(filepath.Join(hostSum, name, "latest"), 64<<10)
		if err != nil || len(b) == 0 {
			continue
		}
		if cr.MkdirAll(dir, 0o700) != nil {
			continue
		}
		writeFileIn(cr, dst, b)
	}
}

// writeFileIn writes name in r atomically: a new temporary file (never
// one a sandbox left there, nor through a link), then a rename over name.
func writeFileIn(r *os.Root, name string, data []byte) {
	tmp := name + ".cordon-tmp"
	r.Remove(tmp)
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err != nil || cerr != nil || r.Rename(tmp, name) != nil {
		r.Remove(tmp)
	}
}

// readRegularIn reads name in r: a regular file (not a link) of at most
// limit bytes.
func readRegularIn(r *os.Root, name string, limit int64) ([]byte, error) {
	fi, err := r.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", name, limit)
	}
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// readRegular reads a regular file of at most limit bytes, not through a
// symlink.
func readRegular(path string, limit int64) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", path, limit)
	}
	return os.ReadFile(path)
}

// landlockGoCacheProg points GOCACHEPROG at cordon's own binary on the
// host, where the Landlock-only backend runs the command (there is no
// helperspec.HelperPath there), and returns that binary for the read
// allowlist; "" when env has no GOCACHEPROG of cordon's. When the binary cannot be
// named or is denied, GOCACHEPROG is emptied: the go command then uses
// GOCACHE alone.
func landlockGoCacheProg(env []string, denied func(string) bool) string {
	for i, e := range env {
		rest, ok := strings.CutPrefix(e, "GOCACHEPROG="+helperspec.HelperPath+" ")
		if !ok {
			continue
		}
		exe, err := os.Executable()
		q, ok := quoteFields(exe)
		if err != nil || !ok || denied(exe) {
			env[i] = "GOCACHEPROG="
			return ""
		}
		env[i] = "GOCACHEPROG=" + q + " " + rest
		return exe
	}
	return ""
}
