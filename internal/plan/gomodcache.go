package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

// HostModCache is where the bwrap backend shows the host's Go module cache,
// read-only, when the sandbox's own is shown at the host's path (see
// goModRemap): the file:// module proxy GOPROXY tries first is its
// cache/download, and the modules linked into the sandbox's module cache
// (PrepSeedGoModules) point into it.
const HostModCache = "/run/cordon/host-modcache"

// goModRemap is, on the bwrap backend, the host module cache's path at
// which the sandbox's own module cache is shown (GOMODCACHE inside), or ""
// when the remap does not apply. The go command puts a package's
// directory in the key of its compiled output (unless -trimpath), so a
// dependency compiled from the sandbox's module cache at another path
// would never match what the host's build cache holds for it: at the
// host's path, a first build in a new workspace finds its dependencies
// compiled. The host's module cache is then hidden at its path, and shown
// read-only at HostModCache. It applies when the sandbox cache is
// writable, the policy neither sets nor passes GOMODCACHE, and the host's
// module cache is a readable directory that no write path, deny or
// deny_write rule reaches into.
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
	// The directory bwrap binds there must be one no sandbox can replace
	// (a link would be bound, writable, wherever it points): not one in
	// the sandbox cache but policy.GoModCacheDir, beside it, which the
	// launcher creates (cachePreps); a real directory if it exists.
	if fi, err := os.Lstat(policy.GoModCacheDir(c)); err == nil && !fi.IsDir() || err != nil && !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return mod
}

// bindGoModCache adds the mounts of goModRemap (the host's module cache at
// HostModCache, the sandbox's over the host's path) and has the launcher
// link the workspace's modules in (PrepSeedGoModules). It returns the
// remapped path, or "".
func (b *bwrapBuilder) bindGoModCache(getenv func(string) (string, bool)) string {
	mod := goModRemap(b.p, b.opts, getenv)
	if mod == "" {
		return ""
	}
	src, err := filepath.EvalSymlinks(mod)
	if err != nil {
		return ""
	}
	c := sandboxCache(b.p)
	b.add(opRead, src, HostModCache)
	b.add(opWrite, policy.GoModCacheDir(c), mod)
	b.plan.Writable = append(b.plan.Writable, mod)
	b.plan.Notes = append(b.plan.Notes, fmt.Sprintf("the sandbox's module cache is shown at %s (GOMODCACHE), so dependencies the host compiled are found in its build cache; the host's module cache is at %s, read-only", mod, HostModCache))
	if policy.DeniedBy(b.p.Deny, filepath.Join(b.p.Workspace, "go.sum")) == "" {
		b.plan.Prepare = append(b.plan.Prepare, Preparation{Kind: PrepSeedGoModules, Path: policy.GoModCacheDir(c), Workspace: b.p.Workspace, GoSum: "go.sum", From: src})
	}
	return mod
}

// remapGoEnv rewrites env for a remapped module cache mod: GOMODCACHE, if
// it is the sandbox's, becomes mod, and a file:// GOPROXY entry for mod's
// download cache (hidden at its path) points into HostModCache.
func remapGoEnv(env []string, c, mod string) {
	dl := "file://" + filepath.Join(mod, "cache", "download")
	for i, e := range env {
		k, v, _ := strings.Cut(e, "=")
		switch k {
		case "GOMODCACHE":
			if v == filepath.Join(c, GoModDir) {
				env[i] = k + "=" + mod
			}
		case "GOPROXY":
			parts := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' })
			for _, part := range parts {
				if strings.TrimSuffix(part, "/") == dl {
					v = strings.Replace(v, part, "file://"+HostModCache+"/cache/download", 1)
				}
			}
			env[i] = k + "=" + v
		}
	}
}
