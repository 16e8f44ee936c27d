package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/gocacheprog"
	"github.com/cordon-sandbox/cordon/policy"
)

// What the go command inside the sandbox uses beside GOCACHE and GOMODCACHE
// (see cacheEnv): the sandbox cache's directories for it, and where the
// bwrap backend shows the host's module download cache.
const (
	// goPathDir is the sandbox's GOPATH in the sandbox cache: the checksum
	// database's signed tree head (pkg/sumdb) and go install's binaries
	// (bin) go there, as the host's GOPATH stays read-only.
	goPathDir = "gopath"
	// goModDir is the sandbox's module cache in the sandbox cache.
	goModDir = "go-mod"
	// HostModProxy is where the bwrap backend binds the host's module
	// download cache (read-only) when the sandbox's own module cache is
	// shown at the host module cache's path (see goModRemap): the host's
	// own path is then the sandbox's.
	HostModProxy = "/run/cordon/host-modcache"
)

// goEnv is the go command's share of cacheEnv: GOPATH in the sandbox cache
// (the host's stays read-only, and go get and go mod tidy must write the
// checksum database's tree head there), and GOCACHEPROG, cordon's build
// cache program, which reads the sandbox's build cache and then the
// host's, and writes only the sandbox's. GOCACHEPROG names the helper at
// HelperPath; the Landlock-only backend renames it (landlockGoCacheProg).
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
	if v, ok := quoteFields(HelperPath, gocacheprog.Command, filepath.Join(c, "go-build"), host); ok {
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
	host := hostGoPath(opts, getenv)
	if host == "" {
		return
	}
	hostSum := filepath.Join(host, "pkg", "sumdb")
	names, err := readDirNames(hostSum)
	if err != nil {
		return
	}
	for _, name := range names {
		dst := filepath.Join(c, goPathDir, "pkg", "sumdb", name, "latest")
		if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		b, err := readRegular(filepath.Join(hostSum, name, "latest"), 64<<10)
		if err != nil || len(b) == 0 {
			continue
		}
		if os.MkdirAll(filepath.Dir(dst), 0o700) != nil {
			continue
		}
		tmp := dst + ".cordon-seed"
		if os.WriteFile(tmp, b, 0o600) != nil || os.Rename(tmp, dst) != nil {
			os.Remove(tmp)
		}
	}
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

// goModRemap is, on the bwrap backend, the host module cache's path at
// which the sandbox's own module cache is shown (GOMODCACHE inside), or ""
// when the remap does not apply. The go command puts a package's
// directory in the key of its compiled output (unless -trimpath), so a
// dependency compiled from the sandbox's module cache at another path
// would never match what the host's build cache holds for it: at the
// host's path, a first build in a new workspace finds its dependencies
// compiled. The host's module cache is then hidden at its path, and its
// download cache is shown read-only at HostModProxy for the file://
// module proxy. It applies when the sandbox cache is writable, the policy
// neither sets nor passes GOMODCACHE, and the host's module cache is a
// readable directory that no write path, deny or deny_write rule reaches
// into.
func goModRemap(p *policy.Policy, opts Options, getenv func(string) (string, bool)) string {
	c := sandboxCache(p)
	if c == "" || policyNames(p, "GOMODCACHE") {
		return ""
	}
	mod := hostModCache(opts, getenv)
	if !filepath.IsAbs(mod) || !policy.CoveredBy(mod, p.Read) || policy.DeniedBy(p.Deny, mod) != "" ||
		policy.CoveredBy(mod, p.HostWrites()) || policy.Within(c, mod) {
		return ""
	}
	for _, rules := range [][]string{p.Deny, p.DenyWrite, p.HostWrites()} {
		for _, r := range rules {
			if filepath.IsAbs(r) && policy.Within(r, mod) {
				return ""
			}
		}
	}
	if fi, err := os.Stat(mod); err != nil || !fi.IsDir() {
		return ""
	}
	if fi, err := os.Stat(filepath.Join(c, goModDir)); err != nil || !fi.IsDir() {
		return ""
	}
	return mod
}

// bindGoModCache adds the mounts of goModRemap: the sandbox's module cache
// over the host's, and the host's download cache at HostModProxy. It
// returns the remapped path, or "".
func (b *bwrapBuilder) bindGoModCache(getenv func(string) (string, bool)) string {
	mod := goModRemap(b.p, b.opts, getenv)
	if mod == "" {
		return ""
	}
	if dl := filepath.Join(mod, "cache", "download"); policy.DeniedBy(b.p.Deny, dl) == "" {
		if fi, err := os.Stat(dl); err == nil && fi.IsDir() {
			if src, err := filepath.EvalSymlinks(dl); err == nil {
				b.add(opRead, src, HostModProxy)
			}
		}
	}
	b.add(opWrite, filepath.Join(sandboxCache(b.p), goModDir), mod)
	b.plan.Notes = append(b.plan.Notes, fmt.Sprintf("the sandbox's module cache is shown at %s (GOMODCACHE), so dependencies the host compiled are found in its build cache; the host's module downloads are at %s, read-only", mod, HostModProxy))
	return mod
}

// remapGoEnv rewrites env for a remapped module cache mod: GOMODCACHE, if
// it is the sandbox's, becomes mod, and a file:// GOPROXY entry for mod's
// download cache (hidden at its path) becomes HostModProxy.
func remapGoEnv(env []string, c, mod string) {
	dl := "file://" + filepath.Join(mod, "cache", "download")
	for i, e := range env {
		k, v, _ := strings.Cut(e, "=")
		switch k {
		case "GOMODCACHE":
			if v == filepath.Join(c, goModDir) {
				env[i] = k + "=" + mod
			}
		case "GOPROXY":
			parts := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' })
			for _, part := range parts {
				if strings.TrimSuffix(part, "/") == dl {
					v = strings.Replace(v, part, "file://"+HostModProxy, 1)
				}
			}
			env[i] = k + "=" + v
		}
	}
}

// landlockGoCacheProg points GOCACHEPROG at cordon's own binary on the
// host, where the Landlock-only backend runs the command (there is no
// HelperPath there), and returns that binary for the read allowlist; ""
// when env has no GOCACHEPROG of cordon's. When the binary cannot be
// named or is denied, GOCACHEPROG is emptied: the go command then uses
// GOCACHE alone.
func landlockGoCacheProg(env []string, denied func(string) bool) string {
	for i, e := range env {
		rest, ok := strings.CutPrefix(e, "GOCACHEPROG="+HelperPath+" ")
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
