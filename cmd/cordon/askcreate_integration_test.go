//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/audit"
)

// TestAskCreate: cordon run --ask holds an open that creates a file
// outside the policy (~/new.txt: the home is too broad to allow, and the
// sandbox's home is empty) while it asks at the terminal, on bubblewrap
// (the watch creates the file on the host) and the Landlock-only backend
// (its supervisor). o creates it, by descriptor, with the program's mode
// less its umask, and the program writes through the descriptor handed
// in; d fails the open with EACCES and creates nothing; w creates it and
// saves the file's path under filesystem.write (the next run, without a
// terminal, appends to it unasked). A protected name that is absent (a
// shell rc file, a git hook), cordon's own config directory, a new lock
// file (~/.gitconfig.lock) and a name that is a dangling symbolic link are refused without a question, and
// nothing is created. git writes its config under --ask (the renames
// onto its private copy still reach cordon).
func TestAskCreate(t *testing.T) {
	t.Parallel()
	eachBackend(t, testAskCreate)
}

func testAskCreate(t *testing.T, e *sandboxEnv, backend string) {
	a := newTermEnv(t, e)
	userConfig := filepath.Join(e.home, ".config", "cordon", "config.yaml")
	stateLog := filepath.Join(e.home, ".local", "state", "cordon", "audit.jsonl")
	writeFile(t, userConfig, "sandbox:\n  audit:\n    enabled: true\n")
	for _, tc := range []struct {
		name, key string
		code      int
		screen    string
		rule      string
	}{
		{"once", "o", 0, "", "asked: once"},
		{"deny", "d", 2, "Permission denied", "asked: deny"},
		{"workspace", "w", 0, "", "asked: for this workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(e.home, "new-"+tc.name+".txt")
			question := "cordon: allow writing " + file + " by sh? [o]nce / [w]orkspace / [d]eny (deny in 30s)"
			win := backend + tc.name
			status := a.term(t, win, "run", "--ask", "--backend", backend, "--", "sh", "-c", "umask 027; echo NEW-"+tc.name+" > "+file)
			a.waitFor(t, win, question, 60*time.Second)
			a.tmuxRun(t, "send-keys", "-t", win, tc.key)
			code := a.waitExit(t, status, 60*time.Second)
			scr := a.screen(t, win)
			if code != tc.code || !strings.Contains(scr, tc.screen) {
				t.Fatalf("exit %d, want %d and %q on the screen:\n%s", code, tc.code, tc.screen, scr)
			}
			fi, err := os.Stat(file)
			switch {
			case tc.code != 0 && err == nil:
				t.Errorf("denied, yet %s was created", file)
			case tc.code == 0 && err != nil:
				t.Fatalf("allowed, yet %s is not on the host: %v", file, err)
			case tc.code == 0:
				if got := readFile(t, file); got != "NEW-"+tc.name+"\n" {
					t.Errorf("%s holds %q", file, got)
				}
				if fi.Mode().Perm() != 0o640 {
					t.Errorf("%s has mode %v, want 0640 (0666 less the umask 027)", file, fi.Mode().Perm())
				}
			}
			var rec *audit.Record
			recs, _, _ := audit.Read(stateLog, audit.Filter{})
			for i := range recs {
				if recs[i].Path == file {
					rec = &recs[i]
				}
			}
			if rec == nil || rec.Rule != tc.rule || rec.Operation != "file-write" {
				t.Errorf("audit record of %s: %+v, want rule %q", file, rec, tc.rule)
			}
			cfg := readFile(t, userConfig)
			if saved := strings.Contains(cfg, file); saved != (tc.key == "w") {
				t.Errorf("user config holds %s: %v:\n%s", file, saved, cfg)
			}
			if tc.key == "w" {
				r := e.run("run", "--backend", backend, "--", "sh", "-c", "echo AGAIN >> "+file)
				if r.code != 0 || readFile(t, file) != "NEW-workspace\nAGAIN\n" {
					t.Errorf("the saved answer did not let the next run write it: %s; it holds %q", r, readFile(t, file))
				}
			}
		})
	}
	t.Run("git writes its config", func(t *testing.T) {
		// With --ask alone the helper sends only the opens, and the
		// renames onto a config's private copy (plan.Plan.GitConfigs).
		git := func(args ...string) *exec.Cmd {
			c := exec.Command("git", append([]string{"-C", e.ws}, args...)...)
			c.Env = e.environ() // the fake home's, never the real one's
			return c
		}
		if out, err := git("init", "-q").CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
		win := backend + "git"
		status := a.term(t, win, "run", "--ask", "--backend", backend, "--", "git", "config", "user.email", "ask@example.com")
		code := a.waitExit(t, status, 60*time.Second)
		if scr := a.screen(t, win); code != 0 || strings.Contains(scr, "cordon: allow") {
			t.Errorf("git config under --ask: exit %d; screen:\n%s", code, scr)
		}
		if out, _ := git("config", "--local", "user.email").Output(); strings.TrimSpace(string(out)) != "ask@example.com" {
			t.Errorf("the host's config has user.email %q", out)
		}
	})
	t.Run("never askable", func(t *testing.T) {
		mkdir(t, filepath.Join(e.ws, ".git", "hooks"))
		if err := os.Symlink(filepath.Join(e.home, "link-target"), filepath.Join(e.home, "dangling")); err != nil {
			t.Fatal(err)
		}
		for i, tc := range []struct{ path, made string }{
			{filepath.Join(e.home, ".bashrc"), ""},
			{filepath.Join(e.ws, ".git", "hooks", "post-commit"), ""},
			{filepath.Join(e.home, ".config", "cordon", "new.yaml"), ""},
			{filepath.Join(e.home, ".gitconfig.lock"), ""},
			{filepath.Join(e.home, "dangling"), filepath.Join(e.home, "link-target")},
		} {
			win := backend + "never" + string(rune('a'+i))
			status := a.term(t, win, "run", "--ask", "--backend", backend, "--", "sh", "-c", "echo PLANTED > "+tc.path)
			code := a.waitExit(t, status, 60*time.Second)
			if scr := a.screen(t, win); code == 0 || strings.Contains(scr, "cordon: allow") {
				t.Errorf("%s: exit %d, want a refusal without a question; screen:\n%s", tc.path, code, scr)
			}
			made := tc.made
			if made == "" {
				made = tc.path
			}
			if _, err := os.Stat(made); err == nil {
				t.Errorf("%s was created", made)
			}
		}
	})
}

// TestAskCountsTreeChanges: under --ask, in a workspace of enough
// directories (2,000) for bubblewrap to count its tree changes, one
// filter both holds the opens and sends the calls the count needs: a run
// whose only change is a directory made (mkdir: no open with O_CREAT) that
// turns stage into a repository with a core.fsmonitor is walked after it,
// and stage is disarmed; and an open outside the policy that creates
// nothing (dd's truncation of an existing file) is still asked about, and
// goes on with a yes.
func TestAskCountsTreeChanges(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		a := newTermEnv(t, e)
		for i := range 2000 {
			mkdir(t, filepath.Join(e.ws, "src", fmt.Sprint(i/50), fmt.Sprint(i)))
		}
		// HEAD but no objects: not a repository until the run makes one.
		stage := filepath.Join(e.ws, "stage")
		writeFile(t, filepath.Join(stage, "HEAD"), "ref: refs/heads/main\n")
		writeFile(t, filepath.Join(stage, "config"), "[core]\n\tfsmonitor = echo FSMON\n")
		win := backend + "mkdir"
		status := a.term(t, win, "run", "--ask", "--backend", backend, "--", "mkdir", "stage/objects")
		code := a.waitExit(t, status, 60*time.Second)
		scr := a.screen(t, win)
		if code != 0 {
			t.Fatalf("mkdir under --ask: exit %d:\n%s", code, scr)
		}
		if cfg := readFile(t, filepath.Join(stage, "config")); strings.Contains(cfg, "\n\tfsmonitor") || !strings.Contains(scr, "planted git config stage/config: core.fsmonitor") {
			t.Errorf("the repository a run under --ask made with mkdir alone was not found after it (config %q):\n%s", cfg, scr)
		}

		// An open without O_CREAT, which the count alone would not send.
		file := filepath.Join(e.home, "counted.txt")
		writeFile(t, file, "BEFORE\n")
		win = backend + "asked"
		status = a.term(t, win, "run", "--ask", "--backend", backend, "--", "dd", "if=/dev/null", "of="+file, "conv=nocreat", "status=none")
		a.waitFor(t, win, "cordon: allow writing "+file+" by dd?", 60*time.Second)
		a.tmuxRun(t, "send-keys", "-t", win, "o")
		if code := a.waitExit(t, status, 60*time.Second); code != 0 || readFile(t, file) != "" {
			t.Errorf("the asked open in a counted workspace: exit %d, %s holds %q:\n%s", code, file, readFile(t, file), a.screen(t, win))
		}
	})
}
