package plan

import (
	"github.com/cordon-sandbox/cordon/backend"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/globscan"
)

// TestSandboxCacheEnv: with the sandbox cache writable, the plan has the
// launcher create it (private; Build itself writes nothing), binds it read-write and points Go's, npm's and pip's caches into it, with
// the host's module cache as the first Go proxy; the policy's own settings
// win, and without the cache in Write nothing is set.
func TestSandboxCacheEnv(t *testing.T) {
	p, opts := testPolicy(t)
	cache := filepath.Join(opts.Home, ".cache", "cordon", "sandbox", "abc")
	download := filepath.Join(opts.Home, "go", "pkg", "mod", "cache", "download")
	if err := os.MkdirAll(download, 0o755); err != nil {
		t.Fatal(err)
	}
	p.SandboxCache = cache
	p.Write = append(p.Write, cache)
	pl, err := Build(p, []string{"go", "build"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pl.Prepare, Preparation{Kind: PrepDir, Path: cache, Mode: 0o700}) ||
		!slices.Contains(pl.Prepare, Preparation{Kind: PrepRecordCache, Path: cache, Workspace: p.Workspace}) {
		t.Errorf("the plan does not have the launcher create the sandbox cache private and record it: %+v", pl.Prepare)
	}
	if _, err := os.Lstat(cache); err == nil {
		t.Error("Build created the sandbox cache")
	}
	if !hasSeq(pl.Argv, "--bind", cache, cache) {
		t.Errorf("argv does not bind %s read-write:\n%s", cache, strings.Join(pl.Argv, " "))
	}
	for _, want := range []string{
		"GOCACHE=" + filepath.Join(cache, "go-build"),
		"GOMODCACHE=" + filepath.Join(cache, "go-mod"),
		"GOPROXY=file://" + download + ",https://proxy.golang.org,direct",
		"npm_config_cache=" + filepath.Join(cache, "npm"),
		"PIP_CACHE_DIR=" + filepath.Join(cache, "pip"),
	} {
		if !slices.Contains(pl.Env, want) {
			t.Errorf("env lacks %s: %q", want, pl.Env)
		}
	}

	// The policy's own value wins.
	p.Env.Set["GOCACHE"] = "/tmp/mine"
	if pl, err = Build(p, []string{"go", "build"}, opts); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pl.Env, "GOCACHE=/tmp/mine") {
		t.Errorf("a GOCACHE the policy sets was replaced: %q", pl.Env)
	}

	// Not writable (strict mode removes it, a config may leave it out):
	// no cache variables.
	p.Write = []string{p.Workspace, "/tmp"}
	delete(p.Env.Set, "GOCACHE")
	if pl, err = Build(p, []string{"go", "build"}, opts); err != nil {
		t.Fatal(err)
	}
	for _, e := range pl.Env {
		if strings.HasPrefix(e, "GOCACHE=") || strings.HasPrefix(e, "GOPROXY=") {
			t.Errorf("cache variable %s set without a writable sandbox cache", e)
		}
	}
}

// TestSandboxCacheNotScanned: deny globs are not matched inside the
// sandbox cache (sandboxes alone write there; a module cache is large), on
// either backend, and it gets no protected-path placeholders.
func TestSandboxCacheNotScanned(t *testing.T) {
	p, opts := testPolicy(t)
	cache := filepath.Join(opts.Home, ".cache", "cordon", "sandbox", "abc")
	other := filepath.Join(opts.Home, "other-write")
	for _, d := range []string{cache, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, ".env"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p.SandboxCache = cache
	p.Write = append(p.Write, cache, other)
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pl.Argv, filepath.Join(other, ".env")) {
		t.Errorf("a .env in another writable root is not masked:\n%s", strings.Join(pl.Argv, " "))
	}
	if slices.Contains(pl.Argv, filepath.Join(cache, ".env")) {
		t.Errorf("the sandbox cache was scanned for deny globs:\n%s", strings.Join(pl.Argv, " "))
	}
	for _, ph := range pl.PlaceholderPaths() {
		if strings.HasPrefix(ph, cache+"/") {
			t.Errorf("placeholder %s in the sandbox cache", ph)
		}
	}
	if !slices.Contains(pl.PlaceholderPaths(), filepath.Join(other, ".vscode")) {
		t.Errorf("no placeholders in another writable root: %q", pl.PlaceholderPaths())
	}
	q := *p
	q.Backend = backend.Landlock
	denied, _ := expandDenied(&Plan{}, &q, "", globscan.Limits{})
	if !slices.Contains(denied, filepath.Join(other, ".env")) || slices.Contains(denied, filepath.Join(cache, ".env")) {
		t.Errorf("landlock backend denied paths %q", denied)
	}
}

// TestSandboxCacheUnavailable: when the sandbox cache cannot be created
// (a read-only home, here a file in the way), the run goes on without it
// and --explain says why.
func TestSandboxCacheUnavailable(t *testing.T) {
	p, opts := testPolicy(t)
	blocker := filepath.Join(opts.Home, ".cache")
	if err := os.WriteFile(blocker, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(blocker, "cordon", "sandbox", "abc")
	p.SandboxCache = cache
	p.Write = append(p.Write, cache)
	pl, err := Build(p, []string{"go", "build"}, opts)
	if err != nil {
		t.Fatalf("Build failed instead of going on without the cache: %v", err)
	}
	if slices.Contains(pl.Argv, cache) || hasEnv(pl.Env, "GOCACHE") {
		t.Errorf("the unavailable cache is still used:\n%s\n%q", strings.Join(pl.Argv, " "), pl.Env)
	}
	if !slices.ContainsFunc(pl.Notes, func(n string) bool { return strings.HasPrefix(n, "no sandbox cache (creating "+cache) }) {
		t.Errorf("notes %q do not explain the missing cache", pl.Notes)
	}
	if !slices.Contains(p.Write, cache) {
		t.Error("Build changed the caller's policy")
	}
}
