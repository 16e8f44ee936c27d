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

// TestPlantedDisarmed: a confined command creates a repository with an
// executable pre-commit hook and core.fsmonitor; after the run cordon
// warns about both, records them in the audit log and disarms them, so
// that git on the host runs neither. With --no-disarm they stay armed but
// are still reported. Both backends.
func TestPlantedDisarmed(t *testing.T) {
	t.Parallel()
	const script = `git init -q new && printf '#!/bin/sh\necho HOOK-RAN\n' > new/.git/hooks/pre-commit && chmod +x new/.git/hooks/pre-commit && git -C new config core.fsmonitor "echo FSMON >&2"`
	for _, backend := range []string{"bwrap", "landlock"} {
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/keep=%v", backend, keep), func(t *testing.T) {
				e := newEnv(t)
				if backend == "landlock" {
					requireLandlock(t)
				}
				flags := []string{"--backend", backend}
				if keep {
					flags = append(flags, "--no-disarm")
				}
				r := e.sh(script, flags...)
				if r.code != 0 {
					t.Fatalf("run failed: %s", r)
				}
				var warnings []string
				for _, l := range strings.Split(r.stderr, "\n") {
					if strings.HasPrefix(l, "cordon: warning: ") {
						warnings = append(warnings, l)
					}
				}
				if len(warnings) != 2 || !strings.Contains(r.stderr, "planted git hook new/.git/hooks/pre-commit") ||
					!strings.Contains(r.stderr, "planted git config new/.git/config: core.fsmonitor") {
					t.Fatalf("want two warnings, one per planted file: %q\n%s", warnings, r)
				}
				if keep == strings.Contains(r.stderr, "disarmed (") {
					t.Errorf("warnings do not match --no-disarm=%v: %q", keep, warnings)
				}
				repo := filepath.Join(e.ws, "new")
				hook, err := os.Stat(filepath.Join(repo, ".git", "hooks", "pre-commit"))
				if err != nil {
					t.Fatal(err)
				}
				if keep != (hook.Mode()&0o111 != 0) {
					t.Errorf("hook mode %v with --no-disarm=%v", hook.Mode(), keep)
				}
				// Git on the host, as the user would run it next.
				writeFile(t, filepath.Join(repo, "f"), "x\n")
				out := hostGit(t, e, repo, "status", "--short") + hostGit(t, e, repo, "add", "f") + hostGit(t, e, repo, "commit", "-q", "-m", "m")
				ran := strings.Contains(out, "FSMON") || strings.Contains(out, "HOOK-RAN")
				if ran != keep {
					t.Errorf("host git with --no-disarm=%v ran planted code: %v\n%s", keep, ran, out)
				}
				log := readFile(t, filepath.Join(e.home, ".local", "state", "cordon", "audit.jsonl"))
				want := `"action":"denied"`
				if keep {
					want = `"action":"warned"`
				}
				if n := strings.Count(log, `"rule":"planted:`); n != 2 || strings.Count(log, want) != 2 ||
					!strings.Contains(log, `"rule":"planted:core.fsmonitor"`) || !strings.Contains(log, `"rule":"planted:hook"`) {
					t.Errorf("audit log, want two %s planted records:\n%s", want, log)
				}
			})
		}
	}
}

// hostGit runs git on the host in dir with the test's fake home and
// returns its combined output; it fails the test if git fails.
func hostGit(t *testing.T, e *sandboxEnv, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(e.environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestDisarmNotBlocked: a run cannot keep a planted file armed by making
// its directory unwritable or by taking the names it would be renamed to
// (found by an attack): the file is renamed aside all the same, and the
// directory gets its mode back.
func TestDisarmNotBlocked(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		r := e.run("run", "--backend", backend, "--", "sh", "-c",
			`mkdir -p p q && echo script-shell=/x > p/.npmrc && chmod 555 p && `+
				`echo script-shell=/x > q/.npmrc && for i in "" $(seq 1 100); do echo x > "q/.npmrc.cordon-disarmed${i:+.$i}"; done`)
		for _, f := range []string{"p/.npmrc", "q/.npmrc"} {
			if exists(filepath.Join(e.ws, f)) {
				t.Errorf("%s was left armed: %s", f, r)
			}
		}
		if fi, err := os.Stat(filepath.Join(e.ws, "p")); err != nil || fi.Mode().Perm() != 0o555 {
			t.Errorf("p's mode was not given back: %v %v", fi.Mode(), err)
		}
		_ = os.Chmod(filepath.Join(e.ws, "p"), 0o755) // for the clean-up
	})
}

// TestGitDirOfExecutableFiles: a repository whose objects and refs are
// executable files, which git takes for a git directory as readily as
// directories (it tests them with access(2)), is checked after the run
// like any other (found by an attack): the run made one with a
// core.fsmonitor and a gitlink to it, and the host's git status in the
// gitlink's directory ran the program.
func TestGitDirOfExecutableFiles(t *testing.T) {
	t.Parallel()
	requireTool(t, "git")
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		hostGit(t, e, e.root, "init", "-q", e.ws)
		marker := filepath.Join(e.root, "RAN")
		script := `mkdir -p n x && git init -q --bare x && rm -rf x/objects x/refs && ` +
			`printf '#!/bin/sh\n' > x/objects && printf '#!/bin/sh\n' > x/refs && chmod +x x/objects x/refs && ` +
			`printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch ` + marker + `; false"\n' > x/config && ` +
			`echo "gitdir: ../x" > n/.git`
		r := e.run("run", "--backend", backend, "--", "sh", "-c", script)
		if r.code != 0 {
			t.Fatalf("the run failed: %s", r)
		}
		if !strings.Contains(r.stderr, "fsmonitor") {
			t.Errorf("the planted core.fsmonitor was not reported: %s", r)
		}
		cmd := exec.Command("git", "-C", filepath.Join(e.ws, "n"), "status")
		cmd.Env = append(e.environ(), "GIT_CONFIG_NOSYSTEM=1")
		_ = cmd.Run() // git may refuse the disarmed repository; what matters is that nothing ran
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("the host's git status ran the planted core.fsmonitor\n%s", r)
		}
	})
}
