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

// gitConfigRefused starts the line a run says when a git command in it
// could not write a git directory's config file that has no private copy
// (config.worktree).
const gitConfigRefused = "cordon: warning: a git command could not write "

// gitConfigKept starts the line a run says for each key it set in its
// copy of a config and did not write back.
const gitConfigKept = "cordon: warning: git config: the run set "

// TestGitConfigWrites: the git commands that write the repository's
// config (git config, git remote add, git branch -u, git submodule add
// and init) work inside on a private copy of the config, and what they
// set reaches the host's config after the run; a key that runs a program
// (core.fsmonitor, core.hooksPath, core.sshCommand, include.path,
// includeIf, an alias with "!", submodule.*.update with "!",
// url.*.insteadOf to ext::, remote.*.uploadpack) or an ext:: URL never
// does, each said in one line, and the run exits 1 where the command
// exited 0. A config file with no copy (config.worktree) stays read-only:
// the run says so in one line naming what to run outside. Host git runs
// nothing the command set, and a run that writes no config says nothing.
// Both backends.
func TestGitConfigWrites(t *testing.T) {
	t.Parallel()
	type tc struct {
		script string
		// host are keys (git config --local --get-all) and their values
		// on the host after the run; planted are the keys it sets that
		// must not reach the host (one line each, exit 1); refused: the
		// write is refused, git's own status and one line.
		host    map[string]string
		planted []string
		refused bool
	}
	const dangerous = `git config core.fsmonitor "touch $MARKER"; git config core.hooksPath hooks; git config core.sshCommand "touch $MARKER";
git config include.path ../x.cfg; git config includeIf.gitdir:/.path ../x.cfg; git config alias.st "!touch $MARKER";
git config submodule.lib.update "!touch $MARKER"; git config "url.ext::sh -c touch% $MARKER.insteadOf" https://;
git config remote.origin.uploadpack "touch $MARKER"; git config remote.evil.url "ext::sh -c touch% $MARKER"; true`
	cases := map[string]tc{
		"git config":                     {script: `git config user.email x@example.com && git config user.email`, host: map[string]string{"user.email": "x@example.com"}},
		"git remote add":                 {script: `git remote add up "$SRC" && git fetch -q up`, host: map[string]string{"remote.up.url": "$SRC", "remote.up.fetch": "+refs/heads/*:refs/remotes/up/*"}},
		"git branch -u":                  {script: `git branch -u origin/main topic && git rev-parse -q --verify topic@{upstream}`, host: map[string]string{"branch.topic.remote": "origin", "branch.topic.merge": "refs/heads/main"}},
		"git submodule add":              {script: `git submodule add -q "$SRC" mod2 && git submodule status`, host: map[string]string{"submodule.mod2.url": "$SRC", "submodule.mod2.active": "true"}},
		"git submodule init and update":  {script: `git submodule init && git submodule update && git -C lib log --oneline`, host: map[string]string{"submodule.lib.url": "$SRC"}},
		"git config --worktree, no copy": {script: `git config extensions.worktreeConfig true && git config --worktree user.name W`, refused: true},
		"keys that run programs": {script: dangerous, planted: []string{"core.fsmonitor", "core.hookspath", "core.sshcommand", "include.path", "includeif.gitdir:/.path", "alias.st",
			"submodule.lib.update", "url.ext::sh -c touch% $MARKER.insteadof", "remote.origin.uploadpack", "remote.evil.url"}},
		"git status and commit, no config": {script: `git status --short && echo x > n && git add n && git commit -qm inside`},
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
				repl := strings.NewReplacer("$SRC", src, "$MARKER", marker)
				before := readFile(t, filepath.Join(e.ws, ".git", "config"))
				r := e.sh(repl.Replace(c.script), "--backend", backend, "--allow-read", src)
				refusedLines := strings.Count(r.stderr, gitConfigRefused)
				keptLines := strings.Count(r.stderr, gitConfigKept)
				switch {
				case c.refused:
					if r.code == 0 || refusedLines != 1 || !strings.Contains(r.stderr, gitConfigRefused+".git/config.worktree: ") || !strings.Contains(r.stderr, "outside the sandbox") {
						t.Errorf("want exit != 0 and one line %q naming .git/config.worktree, saying to run it outside:\n%s", gitConfigRefused, r)
					}
				case len(c.planted) > 0:
					if r.code != 1 || keptLines != len(c.planted) || refusedLines != 0 {
						t.Errorf("exit %d, %d lines %q, want 1 and %d:\n%s", r.code, keptLines, gitConfigKept, len(c.planted), r)
					}
					for _, k := range c.planted {
						if k = repl.Replace(k); !strings.Contains(r.stderr, gitConfigKept+k+" ") {
							t.Errorf("no line for %s:\n%s", k, r)
						}
					}
				default:
					if r.code != 0 || refusedLines+keptLines != 0 {
						t.Errorf("want it to work, exit 0, nothing refused:\n%s", r)
					}
				}
				after := readFile(t, filepath.Join(e.ws, ".git", "config"))
				if len(c.host) == 0 && after != before {
					t.Errorf("the host's .git/config changed:\n%s\nwas:\n%s", after, before)
				}
				for k, v := range c.host {
					if got, _ := e.git(e.ws, "config", "--local", "--get-all", k); got != repl.Replace(v)+"\n" {
						t.Errorf("on the host, %s = %q, want %q:\n%s\nrun: %s", k, got, repl.Replace(v), after, r)
					}
				}
				if !strings.HasPrefix(after, before[:strings.Index(before, "[branch")]) {
					t.Errorf("the host's own content was not kept:\n%s\nwas:\n%s", after, before)
				}
				e.hostGitRunsNothing(e.ws)
				e.mustGit(e.ws, "fetch", "-q", "origin")
				if out, err := e.git(e.ws, "st"); err == nil || exists(marker) {
					t.Errorf("host git ran what the command set (git st: %v %s)", err, out)
				}
			})
		}
	}
}

// TestGitConfigHostGitDuring: while a command that set
// core.fsmonitor (in its copy of the config) still runs, the host's git (an editor's background git
// status) runs nothing, and the user's own git config on the host then
// works and is kept after the run. Both backends.
func TestGitConfigHostGitDuring(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
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
		line := gitConfigKept + "core.fsmonitor " // it went to the run's copy
		if n := strings.Count(stderr.String(), line); code != 1 || n != 1 {
			t.Errorf("exit %d, want 1 with one line %q:\n%s", code, line, stderr.String())
		}
		if c := readFile(t, filepath.Join(e.ws, ".git", "config")); strings.Contains(c, "fsmonitor") {
			t.Errorf("the host's config has the key:\n%s", c)
		}
		if got := e.mustGit(e.ws, "config", "user.name"); got != "Host User\n" {
			t.Errorf("the host's own git config during the run was lost: %q", got)
		}
	})
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

// TestGitConfigWatched: under the violation monitor (cordon test, which
// watches every file call), git's write of its config into the private
// copy is no denial: cordon test says nothing was denied, and the key
// reaches the host, on both backends.
func TestGitConfigWatched(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		gitConfigProject(t, e)
		r := e.run("test", "--backend", backend, "--", "git", "config", "user.email", "watched@example.com")
		if r.code != 0 || !strings.Contains(r.stderr, "nothing was denied") {
			t.Errorf("git config under cordon test: %s", r)
		}
		if got := e.mustGit(e.ws, "config", "user.email"); got != "watched@example.com\n" {
			t.Errorf("the key did not reach the host's config: %q", got)
		}
	})
}

// TestGitConfigMergeStaysHome: a run that sets a key in a nested
// repository and then puts a link to another repository's git directory
// where the nested one's was has the merge write nowhere: not into the
// other repository's config (found by an attack), and says so.
func TestGitConfigMergeStaysHome(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		gitConfigProject(t, e)
		other := filepath.Join(e.root, "other")
		e.mustGit(e.root, "init", "-q", other)
		before := readFile(t, filepath.Join(other, ".git", "config"))
		e.mustGit(e.ws, "init", "-q", "n")
		r := e.run("run", "--backend", backend, "--", "sh", "-c",
			"git -C n config user.email planted@example.com && mv n n2 && mkdir n && ln -s "+filepath.Join(other, ".git")+" n/.git")
		if got := readFile(t, filepath.Join(other, ".git", "config")); got != before {
			t.Errorf("the merge wrote into another repository's config:\n%s\n%s", got, r)
		}
		if !strings.Contains(r.stderr, "not the one the run started with") || r.code == 0 {
			t.Errorf("want a line saying the change was not written, and a failing status: %s", r)
		}
	})
}

// TestCheckPastPathMax: a directory nested deeper than a path can name
// (found by an attack: it made the whole workspace "could not be
// searched", so nothing in it was disarmed and the git config merge went
// on) is skipped and named; the rest of the workspace is checked (a
// planted .npmrc is renamed aside) and, the check being incomplete, no git
// config change reaches the host.
func TestCheckPastPathMax(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		gitConfigProject(t, e)
		r := e.run("run", "--backend", backend, "--", "sh", "-c",
			`N=$(printf %0200d 0); mkdir d0 && cd d0 && i=0; while [ $i -lt 25 ]; do mkdir $N && cd $N || break; i=$((i+1)); done; `+
				`cd `+e.ws+` && mkdir -p pkg && echo script-shell=/x > pkg/.npmrc && git config user.email deep@example.com`)
		if exists(filepath.Join(e.ws, "pkg", ".npmrc")) {
			t.Errorf("a planted .npmrc beside the deep tree was left armed: %s", r)
		}
		if !strings.Contains(r.stderr, "nested deeper than a path can name") {
			t.Errorf("the deep tree was not named: %s", r)
		}
		if got, _ := e.git(e.ws, "config", "user.email"); strings.Contains(got, "deep@") {
			t.Errorf("the run's git config reached the host though its check was incomplete: %s", r)
		}
	})
}
