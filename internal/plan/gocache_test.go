package plan

import (
	"github.com/cordon-sandbox/cordon/backend"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/policy"
)

// goPolicy is testPolicy with a writable sandbox cache, the host's Go
// caches (a build cache and a module cache with its download cache) and
// the reads of the development profile for them.
func goPolicy(t *testing.T) (p *policy.Policy, opts Options, cache, hostBuild, hostMod string) {
	t.Helper()
	p, opts = testPolicy(t)
	cache = filepath.Join(opts.Home, ".cache", "cordon", "sandbox", "abc")
	hostBuild = filepath.Join(opts.Home, ".cache", "go-build")
	hostMod = filepath.Join(opts.Home, "go", "pkg", "mod")
	for _, d := range []string{hostBuild, filepath.Join(hostMod, "cache", "download")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p.SandboxCache = cache
	p.Write = append(p.Write, cache)
	p.Read = append(p.Read, hostBuild, hostMod)
	return p, opts, cache, hostBuild, hostMod
}

func envValue(env []string, name string) (string, bool) {
	for _, e := range env {
		if k, v, _ := strings.Cut(e, "="); k == name {
			return v, true
		}
	}
	return "", false
}

// TestGoEnv: GOPATH goes into the sandbox cache, and GOCACHEPROG runs
// cordon's build cache program on the sandbox's build cache and the
// host's, unless the policy names the variables, or the host's cache is
// missing or not readable.
func TestGoEnv(t *testing.T) {
	tests := []struct {
		name     string
		change   func(p *policy.Policy, opts *Options, hostBuild string)
		gopath   bool
		prog     bool
		progHost string // "" means hostBuild
	}{
		{"default", func(*policy.Policy, *Options, string) {}, true, true, ""},
		{"host build cache missing", func(_ *policy.Policy, _ *Options, hb string) { os.Remove(hb) }, true, false, ""},
		{"host build cache not readable inside", func(p *policy.Policy, _ *Options, hb string) {
			p.Read = slices.DeleteFunc(p.Read, func(r string) bool { return r == hb })
		}, true, false, ""},
		{"host build cache denied", func(p *policy.Policy, _ *Options, hb string) { p.Deny = append(p.Deny, hb) }, true, false, ""},
		{"policy sets GOCACHE", func(p *policy.Policy, _ *Options, _ string) { p.Env.Set["GOCACHE"] = "/x" }, true, false, ""},
		{"policy passes GOCACHEPROG", func(p *policy.Policy, _ *Options, _ string) { p.Env.Pass = append(p.Env.Pass, "GOCACHEPROG") }, true, false, ""},
		{"policy passes GO*", func(p *policy.Policy, _ *Options, _ string) { p.Env.Pass = append(p.Env.Pass, "GO*") }, false, false, ""},
		{"host GOCACHE elsewhere", func(p *policy.Policy, opts *Options, hb string) {
			other := filepath.Join(opts.Home, "my cache")
			os.MkdirAll(other, 0o755)
			p.Read = append(p.Read, other)
			old := opts.Getenv
			opts.Getenv = func(k string) (string, bool) {
				if k == "GOCACHE" {
					return other, true
				}
				return old(k)
			}
		}, true, true, "'HOME/my cache'"},
		{"host XDG_CACHE_HOME", func(p *policy.Policy, opts *Options, hb string) {
			xdg := filepath.Join(opts.Home, "xdg")
			os.MkdirAll(filepath.Join(xdg, "go-build"), 0o755)
			p.Read = append(p.Read, xdg)
			old := opts.Getenv
			opts.Getenv = func(k string) (string, bool) {
				if k == "XDG_CACHE_HOME" {
					return xdg, true
				}
				return old(k)
			}
		}, true, true, "HOME/xdg/go-build"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, opts, cache, hostBuild, _ := goPolicy(t)
			tc.change(p, &opts, hostBuild)
			pl, err := Build(p, []string{"go", "build"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			gopath, ok := envValue(pl.Env, "GOPATH")
			if ok != tc.gopath || (ok && gopath != filepath.Join(cache, "gopath")) {
				t.Errorf("GOPATH = %q (%v), want it in the sandbox cache: %v", gopath, ok, tc.gopath)
			}
			prog, ok := envValue(pl.Env, "GOCACHEPROG")
			if ok != tc.prog {
				t.Fatalf("GOCACHEPROG = %q (set %v), want set %v", prog, ok, tc.prog)
			}
			if !ok {
				return
			}
			host := hostBuild
			if tc.progHost != "" {
				host = strings.ReplaceAll(tc.progHost, "HOME", opts.Home)
			}
			if want := helperspec.HelperPath + " __gocacheprog " + filepath.Join(cache, "go-build") + " " + host; prog != want {
				t.Errorf("GOCACHEPROG = %q, want %q", prog, want)
			}
			if v, _ := envValue(pl.Env, "GOCACHE"); v != filepath.Join(cache, "go-build") {
				t.Errorf("GOCACHE = %q: the go command still needs its own", v)
			}
		})
	}
}

// TestQuoteFields: fields are quoted as the go command splits GOCACHEPROG.
func TestQuoteFields(t *testing.T) {
	tests := []struct {
		in   []string
		want string
		ok   bool
	}{
		{[]string{"/a", "b"}, "/a b", true},
		{[]string{"/a b", "c"}, "'/a b' c", true},
		{[]string{"/it's here"}, `"/it's here"`, true},
		{[]string{`/"q"`}, `'/"q"'`, true},
		{[]string{`/'a" b`}, "", false},
		{[]string{""}, "''", true},
	}
	for _, tc := range tests {
		got, ok := quoteFields(tc.in...)
		if got != tc.want || ok != tc.ok {
			t.Errorf("quoteFields(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestGoModRemap: on the bwrap backend the sandbox's module cache is
// bound at the host module cache's path (GOMODCACHE inside), writable
// under Landlock too, and the host's module cache at HostModCache, whose
// download cache the file:// proxy then names; without the conditions,
// nothing moves.
func TestGoModRemap(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *policy.Policy, hostMod string)
		remap  bool
	}{
		{"default", func(*policy.Policy, string) {}, true},
		{"policy sets GOMODCACHE", func(p *policy.Policy, _ string) { p.Env.Set["GOMODCACHE"] = "/x" }, false},
		{"host module cache not readable", func(p *policy.Policy, m string) {
			p.Read = slices.DeleteFunc(p.Read, func(r string) bool { return r == m })
		}, false},
		{"a deny inside the host module cache", func(p *policy.Policy, m string) { p.Deny = append(p.Deny, filepath.Join(m, "x")) }, false},
		{"host module cache writable", func(p *policy.Policy, m string) { p.Write = append(p.Write, m) }, false},
		{"no sandbox cache", func(p *policy.Policy, _ string) {
			p.Write = slices.DeleteFunc(p.Write, func(w string) bool { return w == p.SandboxCache })
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, opts, cache, _, hostMod := goPolicy(t)
			tc.change(p, hostMod)
			pl, err := Build(p, []string{"go", "build"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			own := policy.GoModCacheDir(cache) // out of the sandboxes' reach
			dl := filepath.Join(hostMod, "cache", "download")
			bound := hasSeq(pl.Argv, "--bind", own, hostMod)
			proxyBound := hasSeq(pl.Argv, "--ro-bind", hostMod, HostModCache)
			mod, _ := envValue(pl.Env, "GOMODCACHE")
			proxy, _ := envValue(pl.Env, "GOPROXY")
			rw := slices.Contains(pl.Spec.Landlock.ReadWrite, hostMod)
			if !tc.remap {
				if bound || proxyBound || mod == hostMod || strings.Contains(proxy, HostModCache) {
					t.Errorf("remapped anyway: GOMODCACHE=%s GOPROXY=%s\n%s", mod, proxy, strings.Join(pl.Argv, " "))
				}
				return
			}
			if !bound || !proxyBound {
				t.Errorf("argv lacks --bind %s %s or --ro-bind %s %s:\n%s", own, hostMod, hostMod, HostModCache, strings.Join(pl.Argv, " "))
			}
			// The sandbox's bind covers the host's at that path: the
			// host's module cache is not bound there first (a mount
			// nothing could see; see dropShadowed).
			if hasSeq(pl.Argv, "--ro-bind", hostMod, hostMod) {
				t.Errorf("the host's module cache is bound at %s under the sandbox's:\n%s", hostMod, strings.Join(pl.Argv, " "))
			}
			if mod != hostMod {
				t.Errorf("GOMODCACHE = %q, want %q", mod, hostMod)
			}
			if !strings.HasPrefix(proxy, "file://"+HostModCache+"/cache/download,") || strings.Contains(proxy, dl) {
				t.Errorf("GOPROXY = %q, want file://%s/cache/download first", proxy, HostModCache)
			}
			if !rw {
				t.Errorf("Landlock does not let the command write %s: %q", hostMod, pl.Spec.Landlock.ReadWrite)
			}
		})
	}
}

// TestGoLandlockBackend: without bubblewrap the go command starts cordon's
// own binary by its host path, which the Landlock read allowlist then
// grants, and the module cache stays at the sandbox cache's path.
func TestGoLandlockBackend(t *testing.T) {
	p, opts, cache, hostBuild, hostMod := goPolicy(t)
	p.Backend = backend.Landlock
	pl, err := Build(p, []string{"go", "build"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	exe := opts.Host.Helper
	prog, _ := envValue(pl.Env, "GOCACHEPROG")
	if want := exe + " __gocacheprog " + filepath.Join(cache, "go-build") + " " + hostBuild; prog != want {
		t.Errorf("GOCACHEPROG = %q, want %q", prog, want)
	}
	if !slices.Contains(pl.Spec.Landlock.ReadOnly, exe) {
		t.Errorf("%s is not in the Landlock read allowlist %q", exe, pl.Spec.Landlock.ReadOnly)
	}
	if mod, _ := envValue(pl.Env, "GOMODCACHE"); mod != filepath.Join(cache, "go-mod") || mod == hostMod {
		t.Errorf("GOMODCACHE = %q on the Landlock-only backend", mod)
	}
	// A denied binary is not started: the go command uses GOCACHE alone.
	p.Deny = append(p.Deny, exe)
	if pl, err = Build(p, []string{"go", "build"}, opts); err != nil {
		t.Fatal(err)
	}
	if prog, _ := envValue(pl.Env, "GOCACHEPROG"); prog != "" || slices.Contains(pl.Spec.Landlock.ReadOnly, exe) {
		t.Errorf("GOCACHEPROG = %q with the binary denied", prog)
	}
}
