//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitConfigRefused is the start of the line a run says when a git command
// in it could not write a git directory's config.
const gitConfigRefused = "cordon: warning: a git command could not write .git/config: "

// TestGitConfigRefused: the git commands that write the repository's
// config (git config, git remote add, git branch -u, git submodule add
// and init), run inside, cannot write it (it stays read-only: keys there
// run programs on the host), and the run says so in one line naming what
// to run outside; where git says it succeeded all the same (git branch -u,
// git submodule add) cordon exits 1, never 0, else with git's own status.
// The host's config is as before, and host git runs nothing the command
// tried to set. A run that writes no config says nothing. Both backends.
func TestGitConfigRefused(t *testing.T) {
	t.Parallel()
	type tc struct {
		script string
		code   int // cordon's status; -1: git's own, not 0
	}
	cases := map[string]tc{
		"git config":                       {script: `git config user.email x@example.com`, code: -1},
		"git remote add":                   {script: `git remote add up "$SRC"`, code: -1},
		"git branch -u, which exits 0":     {script: `git branch -u origin/main topic && git branch -vv`, code: 1},
		"git submodule add, which exits 0": {script: `git submodule add -q "$SRC" mod2`, code: 1},
		"git submodule init":               {script: `git submodule init`, code: -1},
		"a key that runs a program":        {script: `git config core.fsmonitor "touch $MARKER"; true`, code: 1},
		"git status and commit, no config": {script: `git status --short && echo x > n && git add n && git commit -qm inside`, code: 0},
	}
	for _, backend := range []string{"bwrap", "landlock"} {
		for name, c := range cases {
			t.Run(backend+"/"+name, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				if backend == "landlock" {
					requireLandlock(t)
				}
				src, marker := gitConfigProject(t, e)
				before := readFile(t, filepath.Join(e.ws, ".git", "config"))
				script := strings.NewReplacer("$SRC", src, "$MARKER", marker).Replace(c.script)
				r := e.sh(script, "--backend", backend, "--allow-read", src)
				n := strings.Count(r.stderr, gitConfigRefused)
				switch {
				case c.code == 0 && (r.code != 0 || n != 0):
					t.Errorf("want exit 0 and nothing said:\n%s", r)
				case c.code != 0 && n != 1:
					t.Errorf("want one line %q:\n%s", gitConfigRefused, r)
				case c.code > 0 && r.code != c.code, c.code < 0 && r.code == 0:
					t.Errorf("exit %d, want %d (-1: git's own, not 0):\n%s", r.code, c.code, r)
				}
				if c.code != 0 && !strings.Contains(r.stderr, "outside the sandbox") {
					t.Errorf("the line does not say to run it outside:\n%s", r)
				}
				if got := readFile(t, filepath.Join(e.ws, ".git", "config")); got != before {
					t.Errorf("the host's .git/config changed:\n%s\nwas:\n%s", got, before)
				}
				e.hostGitRunsNothing(e.ws)
				if exists(marker) {
					t.Errorf("host git ran what the command set")
				}
			})
		}
	}
}

// TestGitConfigRefusedHostGitDuring: while a command that tried to set
// core.fsmonitor still runs, the host's git (an editor's background git
// status) runs nothing, and the user's own git config on the host then
// works and is not taken for the command's. Both backends.
func TestGitConfigRefusedHostGitDuring(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if backend == "landlock" {
				requireLandlock(t)
			}
			_, marker := gitConfigProject(t, e)
			ready := filepath.Join(e.ws, "ready")
			ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
			defer cancel()
			cmd := e.command(ctx, "run", "--backend", backend, "--", "sh", "-c",
				`git config core.fsmonitor "touch `+marker+`"; echo > ready; while [ -e ready ]; do sleep 0.1; done`)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(cmdTimeout); !exists(ready); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the command did not get ready: %s", stderr.String())
				}
			}
			// The run goes on: git on the host, as an editor runs it.
			out := e.mustGit(e.ws, "status", "--short")
			e.mustGit(e.ws, "config", "user.name", "Host User")
			if err := os.Remove(ready); err != nil {
				t.Fatal(err)
			}
			code := waitCode(t, cmd)
			if exists(marker) {
				t.Fatalf("host git during the run ran what the command set:\n%s\n%s", out, stderr.String())
			}
			if n := strings.Count(stderr.String(), gitConfigRefused); code != 1 || n != 1 {
				t.Errorf("exit %d, want 1 with one line %q:\n%s", code, gitConfigRefused, stderr.String())
			}
			if got := e.mustGit(e.ws, "config", "user.name"); got != "Host User\n" {
				t.Errorf("the host's own git config during the run was lost: %q", got)
			}
		})
	}
}

// gitConfigProject makes the workspace a clone of a repository src (its
// branch main as origin/main, and a branch topic that tracks nothing) with
// a submodule lib whose registration in .git/config was removed (git
// submodule init writes it back), and returns src and a marker path that
// a planted program would create.
func gitConfigProject(t *testing.T, e *sandboxEnv) (src, marker string) {
	t.Helper()
	writeFile(t, filepath.Join(e.home, ".gitconfig"), "[user]\n\tname = T\n\temail = t@example.com\n[protocol \"file\"]\n\tallow = always\n[init]\n\tdefaultBranch = main\n")
	src = filepath.Join(e.root, "src")
	writeFile(t, filepath.Join(src, "s.txt"), "s\n")
	e.mustGit(src, "init", "-q")
	e.mustGit(src, "add", ".")
	e.mustGit(src, "commit", "-qm", "src")
	e.mustGit(e.root, "clone", "-q", src, e.ws)
	e.mustGit(e.ws, "branch", "-q", "--no-track", "topic")
	e.mustGit(e.ws, "submodule", "add", "-q", src, "lib")
	e.mustGit(e.ws, "commit", "-qm", "submodule")
	e.mustGit(e.ws, "config", "--remove-section", "submodule.lib")
	return src, filepath.Join(e.root, "PLANTED-RAN")
}
