package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

// goProxyDefault is Go's own default GOPROXY.
const goProxyDefault = "https://proxy.golang.org,direct"

// sandboxCache returns the policy's sandbox cache when the command may
// write to it, else "".
func sandboxCache(p *policy.Policy) string {
	c := p.SandboxCache
	if c == "" || p.Mode == policy.ModeOff || !slices.Contains(p.Write, c) || policy.DeniedBy(p.Deny, c) != "" {
		return ""
	}
	return c
}

// cacheEnv is the environment that points the tools' caches into the
// sandbox cache, when the command may write there: Go's build and module
// caches (with the host's module cache, read-only, as the first module
// proxy, so modules already downloaded are not fetched again), npm's and
// pip's caches. The host's own caches stay read-only: a sandbox that could
// write them could plant code in the user's next build outside. hostProxy
// is the GOPROXY the host's settings carry over ("" for Go's default).
// Names the policy sets or passes are left alone.
func cacheEnv(p *policy.Policy, opts Options, getenv func(string) (string, bool), hostProxy string) map[string]string {
	c := sandboxCache(p)
	if c == "" {
		return nil
	}
	env := map[string]string{
		"GOCACHE":          filepath.Join(c, "go-build"),
		"GOMODCACHE":       filepath.Join(c, GoModDir),
		"npm_config_cache": filepath.Join(c, "npm"),
		"PIP_CACHE_DIR":    filepath.Join(c, "pip"),
	}
	proxy := goProxyDefault // a GOPROXY the policy passes or sets replaces all of it (buildEnv)
	if hostProxy != "" {
		proxy = hostProxy
	}
	dl := filepath.Join(hostModCache(opts, getenv), "cache", "download")
	if fi, err := os.Stat(dl); err == nil && fi.IsDir() && !strings.ContainsAny(dl, ",| ") { // GOPROXY separators
		proxy = "file://" + dl + "," + proxy
	}
	env["GOPROXY"] = proxy
	// GOPATH and GOCACHEPROG (gocache.go).
	for k, v := range goEnv(p, c, opts, getenv) {
		env[k] = v
	}
	return env
}

// hostModCache is the host's Go module cache: $GOMODCACHE, else the first
// $GOPATH entry's pkg/mod, else ~/go/pkg/mod.
func hostModCache(opts Options, getenv func(string) (string, bool)) string {
	if v, ok := getenv("GOMODCACHE"); ok && filepath.IsAbs(v) {
		return v
	}
	if v, ok := getenv("GOPATH"); ok && v != "" {
		if first, _, _ := strings.Cut(v, string(os.PathListSeparator)); filepath.IsAbs(first) {
			return filepath.Join(first, "pkg", "mod")
		}
	}
	return filepath.Join(opts.Home, "go", "pkg", "mod")
}
