//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitConfigOfTheHome: git inside reads the configuration and runs
// the hooks it does outside when the user's global config includes a file
// of the home (~/.gitconfig.local setting user.email) and names a hooks
// directory there (core.hooksPath = ~/.githooks): found by using cordon,
// where a commit failed for want of an identity, and a pre-commit hook
// that refuses every commit on the host let the sandbox's commit through
// without a word. Both stay read-only inside. Both backends.
func TestGitConfigOfTheHome(t *testing.T) {
	t.Parallel()
	requireTool(t, "git")
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		writeFile(t, filepath.Join(e.home, ".gitconfig"), "[include]\n\tpath = ~/.gitconfig.local\n[core]\n\thooksPath = ~/.githooks\n")
		writeFile(t, filepath.Join(e.home, ".gitconfig.local"), "[user]\n\tname = Home User\n\temail = home@example.com\n")
		hook := filepath.Join(e.home, ".githooks", "pre-commit")
		writeFile(t, hook, "#!/bin/sh\necho the user\\'s hook refuses >&2\nexit 1\n")
		if err := os.Chmod(hook, 0o755); err != nil {
			t.Fatal(err)
		}
		hostGit(t, e, e.root, "init", "-q", e.ws)
		writeFile(t, filepath.Join(e.ws, "a.txt"), "a\n")

		r := e.run("run", "--backend", backend, "--", "sh", "-c", "git add a.txt && git commit -qm one")
		if r.code == 0 || !strings.Contains(r.stderr, "the user's hook refuses") {
			t.Fatalf("the global pre-commit hook did not run inside: %s", r)
		}
		r = e.run("run", "--backend", backend, "--", "sh", "-c",
			"echo x >> ~/.gitconfig.local; echo y >> ~/.githooks/pre-commit; git -c core.hooksPath=/nonexistent commit -qm one && git log -1 --format=%ae")
		if r.code != 0 || strings.TrimSpace(r.stdout) != "home@example.com" {
			t.Fatalf("a commit without the hook did not take the included identity: %s", r)
		}
		for _, f := range []string{filepath.Join(e.home, ".gitconfig.local"), hook} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(string(b), "x\n") || strings.HasSuffix(string(b), "y\n") {
				t.Errorf("%s was written from inside: %q", f, b)
			}
		}
	})
}
