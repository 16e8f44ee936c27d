//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// TestPlantedWithoutCreating: a run that adds no name to any directory
// and changes no permission is not walked after it (its listener counted
// no tree change), yet what such a run can do to what existed is still
// found and disarmed, on both backends: a key that runs a program appended
// to the config of a repository in the sandbox cache (which the walk
// before the run searches for the guard alone, and where nothing is kept
// read-only), and an executable hook there rewritten. The run writes only
// through existing files (dd conv=nocreat, and no redirection, which opens
// with O_CREAT). The workspace holds enough directories (2,000) for
// bubblewrap to count.
func TestPlantedWithoutCreating(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		bf := []string{"--backend", backend}
		for i := range 2000 {
			mkdir(t, filepath.Join(e.ws, "src", fmt.Sprint(i/50), fmt.Sprint(i)))
		}
		// The first run makes the sandbox cache.
		if r := e.sh("true", bf...); r.code != 0 {
			t.Fatalf("first run: %s", r)
		}
		cache := filepath.Join(e.home, ".cache", "cordon", "sandbox", policy.SandboxCacheName(e.ws))
		if _, err := os.Stat(cache); err != nil {
			t.Fatalf("no sandbox cache after a run: %v", err)
		}
		y := filepath.Join(cache, "y")
		mkdir(t, filepath.Join(y, "objects"))
		writeFile(t, filepath.Join(y, "HEAD"), "ref: refs/heads/main\n")
		writeFile(t, filepath.Join(y, "config"), "[core]\n\tbare = true\n")
		writeFile(t, filepath.Join(y, "hooks", "post-checkout"), "#!/bin/sh\necho fine\n")
		if err := os.Chmod(filepath.Join(y, "hooks", "post-checkout"), 0o755); err != nil {
			t.Fatal(err)
		}
		script := `C=$(dirname "$GOCACHE")
printf '[core]\n\tfsmonitor = echo FSMON\n' | dd of="$C/y/config" conv=nocreat,notrunc oflag=append status=none &&
printf '#!/bin/sh\necho HOOK-RAN\n' | dd of="$C/y/hooks/post-checkout" conv=nocreat status=none`
		r := e.sh(script, bf...)
		if r.code != 0 {
			t.Fatalf("the run failed: %s", r)
		}
		cfg, _ := os.ReadFile(filepath.Join(y, "config"))
		if fi, err := os.Stat(filepath.Join(y, "hooks", "post-checkout")); err != nil || fi.Mode()&0o111 != 0 || strings.Contains(string(cfg), "\n\tfsmonitor") {
			t.Errorf("the sandbox cache's repository is still armed (hook %v, %v; config %q):\n%s", fi.Mode(), err, cfg, r)
		}
		for _, w := range []string{filepath.Join(y, "config") + ": core.fsmonitor", filepath.Join(y, "hooks", "post-checkout")} {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("no warning %q:\n%s", w, r)
			}
		}
	})
}

// TestPlantedThroughDescriptors: a repository a command makes, from
// another thread, in a directory it reaches through a descriptor opened
// before it renamed that directory's parent, is still found and disarmed:
// the creating calls are counted whatever path they name, and the check
// walks.
func TestPlantedThroughDescriptors(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		mkdir(t, filepath.Join(e.ws, "a", "x"))
		py := `import os, threading
d = os.open("a/x", os.O_RDONLY | os.O_DIRECTORY)
os.rename("a", "b")
def plant():
    os.mkdir("r", dir_fd=d)
    os.mkdir("r/objects", dir_fd=d)
    for name, text in (("HEAD", b"ref: refs/heads/main\n"), ("config", b"[core]\n\tfsmonitor = echo FSMON\n")):
        f = os.open("r/" + name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=d)
        os.write(f, text)
t = threading.Thread(target=plant)
t.start()
t.join()
`
		r := e.run("run", "--backend", backend, "--", "/usr/bin/python3", "-I", "-B", "-c", py)
		if r.code != 0 {
			t.Fatalf("the run failed: %s", r)
		}
		cfg, _ := os.ReadFile(filepath.Join(e.ws, "b", "x", "r", "config"))
		if !strings.Contains(r.stderr, "b/x/r/config: core.fsmonitor") || strings.Contains(string(cfg), "\n\tfsmonitor") {
			t.Errorf("b/x/r, a repository made through a descriptor of a renamed directory, was not disarmed (config %q):\n%s", cfg, r)
		}
	})
}
