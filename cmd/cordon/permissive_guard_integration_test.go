//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// permissivePlants is a script that plants code through every protected
// path of a repository the user already has: a post-commit hook and
// core.fsmonitor in the workspace's repository, a line in the existing
// .envrc, a changed .vscode/tasks.json, core.fsmonitor in a nested
// repository, a new .envrc in a sub-directory (where nothing existed to
// keep read-only), a line in ~/.bashrc, core.fsmonitor in ~/.gitconfig and
// a git in ~/.local/bin. Each planted program touches marker.WHAT.
func permissivePlants(marker string) string {
	s := fmt.Sprintf(`M=%q
printf '#!/bin/sh\ntouch %%s.hook\n' "$M" > .git/hooks/post-commit; chmod +x .git/hooks/post-commit
git config core.fsmonitor "touch $M.fsmon"
echo "touch $M.envrc" >> .envrc
echo "{\"version\": \"2.0.0\", \"tasks\": [{\"label\": \"x\", \"command\": \"touch $M.vscode\", \"runOptions\": {\"runOn\": \"folderOpen\"}}]}" > .vscode/tasks.json
git -C sub config core.fsmonitor "touch $M.subfsmon"
mkdir -p deep && echo "touch $M.deep" > deep/.envrc
echo "touch $M.bashrc" >> ~/.bashrc
git config --global core.fsmonitor "touch $M.global"
printf '#!/bin/sh\ntouch %%s.path\n' "$M" > ~/.local/bin/git; chmod +x ~/.local/bin/git
true
`, marker)
	return s
}

// permissiveRepo makes the workspace a repository with one commit, an
// .envrc, a .vscode/tasks.json and a nested repository sub, and a
// ~/.bashrc.
func permissiveRepo(t *testing.T, e *sandboxEnv) {
	t.Helper()
	writeFile(t, filepath.Join(e.ws, ".envrc"), "export A=1\n")
	writeFile(t, filepath.Join(e.ws, ".vscode", "tasks.json"), "{}\n")
	writeFile(t, filepath.Join(e.home, ".bashrc"), "# rc\n")
	writeFile(t, filepath.Join(e.home, ".gitconfig"), "[user]\n\tname = t\n")
	mkdir(t, filepath.Join(e.home, ".local", "bin"))
	sub := filepath.Join(e.ws, "sub")
	mkdir(t, sub)
	hostGit(t, e, sub, "init", "-q")
	hostGit(t, e, sub, "commit", "-q", "--allow-empty", "-m", "sub")
	hostGit(t, e, e.ws, "init", "-q")
	writeFile(t, filepath.Join(e.ws, ".git", "info", "exclude"), "sub\ndeep\n")
	hostGit(t, e, e.ws, "add", "-A")
	hostGit(t, e, e.ws, "commit", "-q", "-m", "init")
}

// TestPermissiveKeepsTheGuard: mode permissive and cordon learn, on both
// backends, leave nothing planted armed. Under bubblewrap the existing
// protected paths stay read-only (the writes fail, and are reported as
// denied, never as happened or "left denied" when they happened); on the
// Landlock-only backend, which cannot keep them, the check after the run
// disarms each, and puts ~/.bashrc and ~/.gitconfig back as they were;
// the new .envrc in a sub-directory, which no backend keeps from being
// created, is disarmed on both. Then the host's own git commits and runs
// status in both repositories, and the shell sources .envrc and ~/.bashrc
// and runs git from its PATH: no marker appears.
func TestPermissiveKeepsTheGuard(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"bwrap", "landlock"} {
		for _, learn := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/learn=%v", backend, learn), func(t *testing.T) {
				e := newEnv(t)
				if backend == "landlock" {
					requireLandlock(t)
				}
				permissiveRepo(t, e)
				marker := filepath.Join(e.root, "marker")
				// The Landlock-only backend refuses a writable home: it
				// cannot keep cordon's own config read-only there.
				home := backend == "bwrap"
				args := []string{"run", "--mode", "permissive"}
				if learn {
					args = []string{"learn"}
				}
				args = append(args, "--backend", backend)
				if home {
					args = append(args, "--allow-write", "~")
				}
				r := e.run(append(args, "--", "sh", "-c", permissivePlants(marker))...)
				switch {
				case learn && backend == "landlock":
					if r.code != 125 || !strings.Contains(r.stderr, "cordon learn needs bubblewrap") {
						t.Fatalf("cordon learn on the Landlock-only backend: %s", r)
					}
				case r.code != 0:
					t.Fatalf("%s", r)
				}
				// Kept read-only (bubblewrap), or put back as they were
				// (the Landlock-only backend).
				for f, want := range map[string]string{".bashrc": "# rc\n", ".gitconfig": "[user]\n\tname = t\n"} {
					if got := readFile(t, filepath.Join(e.home, f)); got != want {
						t.Errorf("~/%s changed by a permissive run: %q\n%s", f, got, r)
					}
				}
				if exists(filepath.Join(e.home, ".local", "bin", "git")) {
					t.Errorf("a git planted in ~/.local/bin is left:\n%s", r)
				}
				if backend == "bwrap" {
					// Kept read-only: unchanged, and said to be denied.
					for f, want := range map[string]string{".envrc": "export A=1\n", ".vscode/tasks.json": "{}\n", "../../.bashrc": "# rc\n"} {
						if got := readFile(t, filepath.Join(e.ws, f)); got != want {
							t.Errorf("%s changed in a permissive run: %q", f, got)
						}
					}
					if exists(filepath.Join(e.ws, ".git", "hooks", "post-commit")) {
						t.Error("a hook was created in a permissive run")
					}
					if strings.Contains(r.stderr, "/.envrc by sh: protected: **/.envrc denies it, but it happened") && !strings.Contains(r.stderr, "deep/.envrc") ||
						strings.Contains(r.stderr, ".bashrc by sh: protected: **/.bashrc denies it, but it happened") {
						t.Errorf("a write kept out is said to have happened:\n%s", r.stderr)
					}
					if !learn && !strings.Contains(r.stderr, "cordon: denied: file-write ~/src/proj/.envrc by sh: protected: **/.envrc") {
						t.Errorf("the write to .envrc is not said to be denied:\n%s", r.stderr)
					}
					if !strings.Contains(r.stderr, "cordon: warning: planted deep/.envrc") {
						t.Errorf("the .envrc created in a sub-directory is not reported:\n%s", r.stderr)
					}
				}
				if learn && backend == "bwrap" {
					left := r.stdout[strings.Index(r.stdout, "# Left denied"):]
					for _, w := range []string{"~/src/proj/.envrc", "~/src/proj/.git/hooks/post-commit", "~/src/proj/sub/.git/config", "~/.bashrc"} {
						if !strings.Contains(left, "#     "+w+"\n") {
							t.Errorf("learn does not list %s as left denied:\n%s", w, r.stdout)
						}
					}
					if strings.Contains(left, "deep/.envrc") {
						t.Errorf("learn lists what happened (deep/.envrc) in its policy:\n%s", r.stdout)
					}
				}
				// The host, as the user goes on.
				writeFile(t, filepath.Join(e.ws, "f"), "x\n")
				hostGit(t, e, e.ws, "status", "--short")
				hostGit(t, e, filepath.Join(e.ws, "sub"), "status", "--short")
				hostGit(t, e, e.ws, "add", "f")
				hostGit(t, e, e.ws, "commit", "-q", "-m", "f")
				sh := exec.Command("sh", "-c", `for f in .envrc deep/.envrc ../../.bashrc; do [ -f "$f" ] && . "./$f"; done; git status >/dev/null 2>&1; true`)
				sh.Dir, sh.Env = e.ws, e.environ()
				// The user's PATH has ~/.local/bin first.
				sh.Env = append(sh.Env, "PATH="+filepath.Join(e.home, ".local", "bin")+":/usr/bin:/bin")
				if out, err := sh.CombinedOutput(); err != nil {
					t.Fatalf("sourcing the start-up files: %v\n%s", err, out)
				}
				ents, _ := os.ReadDir(e.root)
				for _, ent := range ents {
					if strings.HasPrefix(ent.Name(), "marker.") {
						t.Errorf("planted code ran on the host: %s\n%s", ent.Name(), r)
					}
				}
			})
		}
	}
}

// TestPermissiveHomeTop: in mode permissive under bubblewrap the home is
// writable whatever the policy says, and the shell start-up files at its
// top are kept all the same: an existing one stays read-only, one the run
// creates is moved aside after it, with a warning.
func TestPermissiveHomeTop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, ".bashrc"), "# rc\n")
	r := e.sh(`echo evil >> ~/.bashrc; echo evil > ~/.zshrc; echo ok > ~/other.txt; true`, "--mode", "permissive")
	if r.code != 0 {
		t.Fatal(r)
	}
	if got := readFile(t, filepath.Join(e.home, ".bashrc")); got != "# rc\n" {
		t.Errorf("~/.bashrc changed in a permissive run: %q", got)
	}
	zshrc := filepath.Join(e.home, ".zshrc")
	if exists(zshrc) || !exists(zshrc+".cordon-disarmed") || !strings.Contains(r.stderr, "cordon: warning: mode permissive: the run created "+zshrc) {
		t.Errorf("~/.zshrc, created in a permissive run, is not moved aside:\n%s", r)
	}
	if readFile(t, filepath.Join(e.home, "other.txt")) != "ok\n" {
		t.Error("mode permissive must let the other write in the home happen")
	}
}

// TestPermissiveGitLooksInHome: mode permissive leaves the home writable,
// and where the user's global git config looks there is kept all the
// same, on both backends: a hook added to the directory its
// core.hooksPath names (~/.githooks) and the file its include.path names
// (~/.gitconfig.local), created by the run, do not run on the host, nor
// does a line appended to ~/.gitconfig, a symbolic link into a dotfiles
// directory. And a guarded path the run creates is moved aside at every
// run, though an earlier run's is still beside it (~/.config/git, twice).
func TestPermissiveGitLooksInHome(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			e := newEnv(t)
			if backend == "landlock" {
				requireLandlock(t)
			}
			marker := filepath.Join(e.root, "marker")
			const global = "[core]\n\thooksPath = ~/.githooks\n[include]\n\tpath = ~/.gitconfig.local\n"
			writeFile(t, filepath.Join(e.home, "dotfiles", "gitconfig"), global)
			if err := os.Symlink("dotfiles/gitconfig", filepath.Join(e.home, ".gitconfig")); err != nil {
				t.Fatal(err)
			}
			mkdir(t, filepath.Join(e.home, ".githooks"))
			hostGit(t, e, e.ws, "init", "-q")
			script := fmt.Sprintf(`M=%q
printf '#!/bin/sh\ntouch %%s.hook\n' "$M" > ~/.githooks/post-commit; chmod +x ~/.githooks/post-commit
printf '[core]\n\tfsmonitor = touch %%s.include\n' "$M" > ~/.gitconfig.local
mkdir -p ~/.config/git; printf '[core]\n\tfsmonitor = touch %%s.xdg\n' "$M" > ~/.config/git/config
printf '[core]\n\tfsmonitor = touch %%s.global\n' "$M" >> ~/.gitconfig
true`, marker)
			for run := range 2 {
				r := e.sh(script, "--mode", "permissive", "--backend", backend)
				if r.code != 0 {
					t.Fatalf("run %d: %s", run, r)
				}
				if got := readFile(t, filepath.Join(e.home, "dotfiles", "gitconfig")); got != global {
					t.Errorf("run %d: ~/.gitconfig's target changed: %q\n%s", run, got, r)
				}
				if exists(filepath.Join(e.home, ".config", "git")) {
					t.Fatalf("run %d: ~/.config/git, created by the run, is left in place:\n%s", run, r)
				}
				writeFile(t, filepath.Join(e.ws, "f"), fmt.Sprintf("%d\n", run))
				out := hostGit(t, e, e.ws, "status", "--short") + hostGit(t, e, e.ws, "add", "f") + hostGit(t, e, e.ws, "commit", "-q", "-m", "f")
				ents, _ := os.ReadDir(e.root)
				for _, ent := range ents {
					if strings.HasPrefix(ent.Name(), "marker.") {
						t.Fatalf("run %d: planted code ran on the host: %s\n%s\nrun: %s", run, ent.Name(), out, r)
					}
				}
			}
		})
	}
}
