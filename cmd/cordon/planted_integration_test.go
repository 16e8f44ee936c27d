//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestMountTakenAwayByAnotherRun: a run (C) that made a nested repository
// takes away the mounts another run (A) keeps on it, by removing the
// paths they stand on (the kernel lets a process remove a mount point of
// another mount namespace, and detaches the mount there); A then writes a
// core.fsmonitor into the config and a hook into the hooks placeholder's
// place. A's check, which trusted its mounts, looked at neither, and the
// host's git ran both (found by an attack). It now sees that the kept
// files are not those it recorded, and disarms what A wrote. C on either
// backend.
func TestMountTakenAwayByAnotherRun(t *testing.T) {
	t.Parallel()
	requireTool(t, "git")
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		hostGit(t, e, e.root, "init", "-q", e.ws)
		marker := filepath.Join(e.root, "RAN")
		wait := func(f string) string {
			return `i=0; while [ ! -e ` + f + ` ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done; `
		}
		// C: a repository without hooks (A's plan puts a placeholder
		// there); once A runs, its config and A's placeholder go.
		writeFile(t, filepath.Join(e.ws, "c.sh"), `git init -q --template= n && touch made; `+wait("ready")+
			`rm -f n/.git/config && rmdir n/.git/hooks && touch detached`)
		writeFile(t, filepath.Join(e.ws, "a.sh"), `touch ready; `+wait("detached")+
			`printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch `+marker+`; false"\n' > n/.git/config && `+
			`mkdir -p n/.git/hooks && printf '#!/bin/sh\ntouch `+marker+`\n' > n/.git/hooks/pre-commit && chmod +x n/.git/hooks/pre-commit`)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c := e.command(ctx, "run", "--backend", backend, "--", "sh", "c.sh")
		var cOut bytes.Buffer
		c.Stdout, c.Stderr = &cOut, &cOut
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 150; i++ {
			if _, err := os.Stat(filepath.Join(e.ws, "made")); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		a := e.run("run", "--backend", "bwrap", "--", "sh", "a.sh")
		if err := c.Wait(); err != nil {
			t.Fatalf("run C: %v\n%s", err, cOut.String())
		}
		if _, err := os.Stat(filepath.Join(e.ws, "detached")); err != nil {
			t.Fatalf("run C did not take the mounts away\nA: %s\nC: %s", a, cOut.String())
		}
		if a.code != 0 {
			t.Fatalf("run A failed: %s", a)
		}
		// A reports what it wrote; C's check, when it runs after A's
		// writes, may find and disarm some of it first (in the
		// repository C made).
		for _, want := range []string{"fsmonitor", "pre-commit"} {
			if !strings.Contains(a.stderr+cOut.String(), want) {
				t.Errorf("neither run reported what A planted (%s)\nA: %s\nC: %s", want, a, cOut.String())
			}
		}
		n := filepath.Join(e.ws, "n")
		writeFile(t, filepath.Join(n, "f"), "f\n")
		for _, args := range [][]string{{"status"}, {"add", "f"}, {"commit", "-qm", "host"}} {
			cmd := exec.Command("git", append([]string{"-C", n}, args...)...)
			cmd.Env = append(e.environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
				"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
			_ = cmd.Run()
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("the host's git ran what run A planted\nA: %s", a)
		}
	})
}
