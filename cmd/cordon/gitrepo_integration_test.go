//go:build linux

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// repoLayout is a repository made by the host's git in the fake home:
// proj (the usual workspace) with tracked files at its top and in
// mono/svc, an untracked mono/.env, a submodule lib, and a linked
// worktree proj-wt beside it.
type repoLayout struct {
	proj, worktree, lib string
}

func newRepoLayout(t *testing.T, e *sandboxEnv) repoLayout {
	t.Helper()
	writeFile(t, filepath.Join(e.home, ".gitconfig"), "[user]\n\tname = T\n\temail = t@example.com\n[protocol \"file\"]\n\tallow = always\n[init]\n\tdefaultBranch = main\n")
	src := filepath.Join(e.root, "libsrc")
	writeFile(t, filepath.Join(src, "l.txt"), "lib\n")
	e.mustGit(src, "init", "-q")
	e.mustGit(src, "add", ".")
	e.mustGit(src, "commit", "-qm", "lib")
	l := repoLayout{proj: e.ws, worktree: filepath.Join(e.home, "src", "proj-wt"), lib: filepath.Join(e.ws, "lib")}
	writeFile(t, filepath.Join(l.proj, "top.txt"), "top\n")
	writeFile(t, filepath.Join(l.proj, "mono", "m.txt"), "m\n")
	writeFile(t, filepath.Join(l.proj, "mono", "svc", "s.txt"), "s\n")
	e.mustGit(l.proj, "init", "-q")
	e.mustGit(l.proj, "add", ".")
	e.mustGit(l.proj, "commit", "-qm", "one")
	e.mustGit(l.proj, "submodule", "add", "-q", src, "lib")
	e.mustGit(l.proj, "commit", "-qm", "submodule")
	e.mustGit(l.proj, "worktree", "add", "-q", l.worktree)
	writeFile(t, filepath.Join(l.proj, "mono", ".env"), "ENV-SECRET-4d2\n")
	return l
}

// TestGitOutsideTopLevel: in a linked worktree, a sub-directory of a
// repository and a submodule checkout, git status, diff, add, commit and
// log work inside the sandbox, on both backends. The shared git
// directory's config and hooks stay read-only where the backend can keep
// them so (always under bubblewrap; for a linked worktree also on the
// Landlock-only backend, which grants only what git writes there); where
// it cannot, what the run planted there is disarmed after it. Either way
// the config and hooks are as before, and git on the host runs nothing
// the sandbox wrote. In a sub-directory, git sees no file outside the
// workspace as deleted, and the .env of the work tree above stays
// unreadable.
func TestGitOutsideTopLevel(t *testing.T) {
	t.Parallel()
	for _, layout := range []string{"worktree", "subdir", "submodule"} {
		for _, backend := range []string{"bwrap", "landlock"} {
			t.Run(layout+"/"+backend, func(t *testing.T) {
				e := newEnv(t)
				if backend == "landlock" {
					requireLandlock(t)
				}
				l := newRepoLayout(t, e)
				ws, gitDir, file := l.worktree, filepath.Join(l.proj, ".git"), "top.txt"
				switch layout {
				case "subdir":
					ws, file = filepath.Join(l.proj, "mono", "svc"), "s.txt"
				case "submodule":
					ws, gitDir, file = l.lib, filepath.Join(l.proj, ".git", "modules", "lib"), "l.txt"
				}
				e.ws = ws
				config := readFile(t, filepath.Join(gitDir, "config"))
				hooks := listing(t, filepath.Join(gitDir, "hooks"))
				flags := []string{"--backend", backend}

				script := fmt.Sprintf(`set -e
git status --porcelain
echo change >> %[1]s
git diff --stat
git add %[1]s
git commit -qm inside
git log --oneline -1
git status --porcelain
echo done`, file)
				r := e.sh(script, flags...)
				if r.code != 0 || !strings.Contains(r.stdout, "done") || !strings.Contains(r.stdout, "inside") {
					t.Fatalf("git inside failed:\n%s", r)
				}
				if n := strings.Count(r.stderr, "cordon: note: the workspace is a"); n != 1 {
					t.Errorf("want one note saying what was added for the repository, got %d:\n%s", n, r.stderr)
				}
				for _, line := range strings.Split(r.stdout, "\n") {
					if strings.HasPrefix(line, " D") || strings.HasPrefix(line, "D ") {
						t.Errorf("git inside sees a file as deleted: %q\n%s", line, r)
					}
				}
				if out := e.mustGit(ws, "log", "--oneline", "-1"); !strings.Contains(out, "inside") {
					t.Errorf("the commit made inside is not on the host: %s", out)
				}
				if layout == "subdir" {
					s := e.sh(`cat ../.env; echo evil > ../m.txt; echo evil > ../../top.txt`, flags...)
					if s.code == 0 || strings.Contains(s.all(), "ENV-SECRET-4d2") || !strings.Contains(s.stderr, "Permission denied") {
						t.Errorf("the .env above the workspace was readable, or the work tree above writable:\n%s", s)
					}
				} else if s := e.sh(`cat `+filepath.Join(l.proj, "top.txt"), flags...); s.code == 0 {
					t.Errorf("the main work tree is readable from a %s:\n%s", layout, s)
				}

				// Planting in the shared git directory.
				// The Landlock-only backend's supervisor refuses them
				// as bubblewrap's read-only mounts do.
				protectedInside := true
				attempts := []string{
					fmt.Sprintf(`printf '#!/bin/sh\necho HOOK-RAN\n' > %[1]s/hooks/pre-commit && chmod +x %[1]s/hooks/pre-commit`, gitDir),
					`git config core.fsmonitor "echo FSMON >&2"`,
				}
				if backend == "bwrap" {
					attempts = append(attempts, fmt.Sprintf(`mv %[1]s/hooks %[1]s/h2`, gitDir), `echo 'gitdir: /tmp' > .git`)
				}
				for _, a := range attempts {
					r := e.sh(a, flags...)
					if protectedInside && r.code == 0 {
						t.Errorf("%q succeeded:\n%s", a, r)
					}
					if !protectedInside && (r.code != 0 || !strings.Contains(r.stderr, "cordon: warning: planted git")) {
						t.Errorf("%q: want it to run and be reported as planted:\n%s", a, r)
					}
				}
				if protectedInside {
					if got := readFile(t, filepath.Join(gitDir, "config")); got != config {
						t.Errorf("the shared config changed:\n%s\nwas:\n%s", got, config)
					}
					if d := diffListing(hooks, listing(t, filepath.Join(gitDir, "hooks"))); d != "" {
						t.Errorf("the shared hooks changed:\n%s", d)
					}
				}
				e.hostGitRunsNothing(ws, l.proj)
			})
		}
	}
}

// TestGitPlantedGitfile: a .git file in the workspace that names a denied
// directory, a directory that is no git directory, or another project's
// git directory that does not name the workspace back makes nothing
// visible: cordon warns, git inside finds no repository, and nothing of
// the other directory can be read or written. Both backends.
func TestGitPlantedGitfile(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"ssh", "plain", "other", "otherworktree"} {
		for _, backend := range []string{"bwrap", "landlock"} {
			t.Run(target+"/"+backend, func(t *testing.T) {
				e := newEnv(t)
				if backend == "landlock" {
					requireLandlock(t)
				}
				l := newRepoLayout(t, e)
				writeFile(t, filepath.Join(e.home, ".ssh", "id_rsa"), "SSH-KEY-91c\n")
				e.mustGit(e.sibling, "init", "-q")
				e.mustGit(e.sibling, "add", ".")
				e.mustGit(e.sibling, "commit", "-qm", "sibling")
				var dir, want string
				switch target {
				case "ssh":
					dir, want = filepath.Join(e.home, ".ssh"), "not a git directory"
				case "plain":
					dir, want = e.sibling, "not a git directory"
				case "other":
					dir, want = filepath.Join(e.sibling, ".git"), "does not name it back"
				case "otherworktree":
					dir, want = filepath.Join(l.proj, ".git", "worktrees", "proj-wt"), "does not name it back"
				}
				e.ws = filepath.Join(e.home, "src", "planted")
				writeFile(t, filepath.Join(e.ws, ".git"), "gitdir: "+dir+"\n")
				r := e.sh(fmt.Sprintf(`git log; git status; cat %[1]s/config %[1]s/HEAD %[1]s/notes.txt %[2]s/.ssh/id_rsa; ls %[1]s; echo x > %[1]s/x`, dir, e.home), "--backend", backend)
				if !strings.Contains(r.stderr, "cordon: warning: ") || !strings.Contains(r.stderr, want) {
					t.Errorf("want a warning saying %q:\n%s", want, r)
				}
				if strings.Contains(r.stderr, "cordon: note: the workspace is") {
					t.Errorf("something was added for the planted .git:\n%s", r)
				}
				for _, leak := range []string{"SSH-KEY-91c", "SIBLING-SECRET-7f3a", "sibling", "[core]", "refs/heads"} {
					if strings.Contains(r.all(), leak) {
						t.Errorf("%q leaked through the planted .git:\n%s", leak, r)
					}
				}
				if exists(filepath.Join(dir, "x")) {
					t.Errorf("the run wrote into %s", dir)
				}
				p := e.run("policy", "--backend", backend)
				if p.code != 0 || !strings.Contains(p.stdout, "refused:") || strings.Contains(p.stdout, "\n  write:\n    - "+dir) {
					t.Errorf("cordon policy does not show the refusal:\n%s", p)
				}
			})
		}
	}
}

// TestGitWorktreesConcurrent: runs in a repository and in its linked
// worktree at once share the placeholders mounted in the common git
// directory; when the first run ends it must not remove one that the
// other still relies on (its read-only mount would be detached, and the
// other run could then create the file: here a config.worktree that
// runs a program). Only the last run removes them.
func TestGitWorktreesConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	l := newRepoLayout(t, e)
	c := filepath.Join(l.proj, ".git")
	wait := `echo ready; for i in $(seq 200); do [ -e go ] && break; sleep 0.05; done; `
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	main, mainErr, _ := startCordon(t, e, ctx, "run", "--", "sh", "-c", wait+"true")
	e.ws = l.worktree
	wt, wtErr, wtOut := startCordon(t, e, ctx, "run", "--", "sh", "-c", wait+fmt.Sprintf(
		`printf '[core]\n\tfsmonitor = echo FSMON >&2\n' > %[1]s/config.worktree && echo WROTE; echo ../x > %[1]s/commondir && echo WROTE; true`, c))
	writeFile(t, filepath.Join(l.proj, "go"), "")
	if code := waitCode(t, main); code != 0 {
		t.Fatalf("the run in the repository: exit %d\n%s", code, mainErr)
	}
	writeFile(t, filepath.Join(l.worktree, "go"), "")
	out := readAllTimeout(t, wtOut, cmdTimeout)
	if code := waitCode(t, wt); code != 0 {
		t.Fatalf("the run in the worktree: exit %d\n%s", code, wtErr)
	}
	if strings.Contains(string(out), "WROTE") {
		t.Errorf("the run in the worktree wrote the common directory after the other run ended:\n%s\n%s", out, wtErr)
	}
	for _, p := range []string{"config.worktree", "commondir"} {
		if exists(filepath.Join(c, p)) {
			t.Errorf("placeholder %s left after both runs", p)
		}
	}
	e.hostGitRunsNothing(l.worktree)
}
