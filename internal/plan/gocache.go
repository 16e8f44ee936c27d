package plan

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/gocacheprog"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/policy"
)

// The sandbox cache's directories for the go command, beside GOCACHE (see
// cacheEnv).
const (
	// goPathDir is the sandbox's GOPATH in the sandbox cache: the checksum
	// database's signed tree head (pkg/sumdb) and go install's binaries
	// (bin) go there, as the host's GOPATH stays read-only.
	goPathDir = "gopath"
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

// landlockGoCacheProg points GOCACHEPROG at the helper's binary on the
// host, exe (Host.Helper), where the Landlock-only backend runs the command (there is no
// helperspec.HelperPath there), and returns that binary for the read
// allowlist; "" when env has no GOCACHEPROG of cordon's. When the binary cannot be
// named or is denied, GOCACHEPROG is emptied: the go command then uses
// GOCACHE alone.
func landlockGoCacheProg(env []string, exe string, denied func(string) bool) string {
	for i, e := range env {
		rest, ok := strings.CutPrefix(e, "GOCACHEPROG="+helperspec.HelperPath+" ")
		if !ok {
			continue
		}
		q, ok := quoteFields(exe)
		if exe == "" || !ok || denied(exe) {
			env[i] = "GOCACHEPROG="
			return ""
		}
		env[i] = "GOCACHEPROG=" + q + " " + rest
		return exe
	}
	return ""
}
