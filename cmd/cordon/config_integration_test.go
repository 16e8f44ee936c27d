//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHomeWorkspace: the home directory (or an ancestor, or /) is refused
// as the workspace with one line and exit 125, unless
// --allow-home-workspace, which warns.
func TestHomeWorkspace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	marker := filepath.Join(e.home, "planted")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"run in home", []string{"run", "--workspace", e.home, "--", "touch", marker}, "cordon: the workspace " + e.home + " is your home directory: a command there could plant files that run later (~/.bashrc, ~/.config/...); cd into a project, or pass --workspace DIR (or --allow-home-workspace to insist)"},
		{"run in an ancestor", []string{"run", "--workspace", filepath.Dir(e.home), "--", "touch", marker}, "is an ancestor of your home directory"},
		{"run in /", []string{"run", "--workspace", "/", "--", "touch", marker}, "cordon: the workspace / is the root directory: "},
		{"strict", []string{"run", "--mode", "strict", "--workspace", e.home, "--", "touch", marker}, "is your home directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.run(tc.args...)
			if r.code != 125 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, want 125 and %q:\n%s", r.code, tc.want, r)
			}
			checkOneCordonLine(t, r)
			if exists(marker) {
				t.Errorf("the command ran")
			}
		})
	}
	t.Run("default workspace is the current directory", func(t *testing.T) {
		cmd := e.command(t.Context(), "run", "--", "touch", marker)
		cmd.Dir = e.home
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(interface{ ExitCode() int }); !ok || ee.ExitCode() != 125 || !strings.Contains(string(out), "is your home directory") {
			t.Errorf("run from the home directory: %v\n%s", err, out)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		r := e.run("run", "--allow-home-workspace", "--workspace", e.home, "--", "sh", "-c", "echo ok")
		if r.code != 0 || r.stdout != "ok\n" {
			t.Fatalf("--allow-home-workspace: %s", r)
		}
		var warnings []string
		for _, l := range strings.Split(strings.TrimRight(userStderr(r.stderr), "\n"), "\n") {
			if strings.HasPrefix(l, "cordon: warning: ") {
				warnings = append(warnings, l)
			}
		}
		if len(warnings) != 1 || !strings.Contains(warnings[0], e.home+" is your home directory") {
			t.Errorf("want one warning about the home directory:\n%s", r)
		}
	})
	t.Run("mode off", func(t *testing.T) {
		r := e.run("run", "--no-sandbox", "--workspace", e.home, "--", "true")
		if r.code != 0 || strings.Contains(r.stderr, "warning") {
			t.Errorf("--no-sandbox in the home directory: %s", r)
		}
	})
}

// TestReadOnlyCommandsFromHome: the commands that only read (violations,
// policy, status, cache) run from the home directory and from /, where
// cordon run refuses; cordon policy prints the policy for that directory
// (no plan: a run would make none) and says in one line that cordon run
// refuses it.
func TestReadOnlyCommandsFromHome(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, dir := range []string{e.home, "/"} {
		for _, args := range [][]string{{"violations"}, {"violations", "--since", "0", "--json"}, {"policy"}, {"policy", "--explain", "--", "true"}, {"status"}, {"cache"}} {
			t.Run(dir+" "+strings.Join(args, " "), func(t *testing.T) {
				cmd := e.command(t.Context(), args...)
				cmd.Dir = dir
				var out, errb strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Run(); err != nil {
					t.Fatalf("cordon %v from %s: %v\nstdout: %s\nstderr: %s", args, dir, err, out.String(), errb.String())
				}
				if strings.Contains(errb.String(), "cd into a project, or pass --workspace") {
					t.Errorf("cordon %v from %s refused the workspace:\n%s", args, dir, errb.String())
				}
				if args[0] != "policy" {
					return
				}
				if !strings.Contains(out.String(), "workspace: "+dir+"\n") || strings.Contains(out.String(), "# plan") {
					t.Errorf("cordon policy from %s does not print the policy for %s, or prints a plan cordon run would not make:\n%s", dir, dir, out.String())
				}
				var notes []string
				for _, l := range strings.Split(userStderr(errb.String()), "\n") {
					if strings.Contains(l, "cordon run refuses") {
						notes = append(notes, l)
					}
				}
				want := "cordon: note: cordon run refuses the workspace " + dir + " "
				if len(notes) != 1 || !strings.HasPrefix(notes[0], want) || !strings.Contains(notes[0], "--allow-home-workspace") {
					t.Errorf("want one line %q... naming --allow-home-workspace, got:\n%s", want, errb.String())
				}
			})
		}
	}
	t.Run("insisted", func(t *testing.T) {
		cmd := e.command(t.Context(), "policy", "--allow-home-workspace")
		cmd.Dir = e.home
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "cordon run refuses") {
			t.Errorf("cordon policy --allow-home-workspace from the home directory: %v\n%s", err, out)
		}
	})
}

// fakeKey is shaped like a private key; the tests check it never appears.
const fakeKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ-FAKE-KEY-MATERIAL-5e1f\n-----END OPENSSH PRIVATE KEY-----\n"

// TestConfigFilesReadSafely: a .cordon.yaml that a previous run replaced
// with a link to a secret, or with a FIFO, and a config directory inside
// the workspace, are refused with one line, promptly, without printing
// anything from the file.
func TestConfigFilesReadSafely(t *testing.T) {
	t.Parallel()
	t.Run("symlink to a key", func(t *testing.T) {
		e := newEnv(t)
		key := filepath.Join(e.home, ".ssh", "id_rsa")
		writeFile(t, key, fakeKey)
		if err := os.Symlink(key, filepath.Join(e.ws, ".cordon.yaml")); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"policy"}, {"run", "--", "true"}} {
			r := e.run(args...)
			if r.code != 125 || !strings.Contains(r.stderr, ".cordon.yaml: is a symbolic link inside a writable directory") {
				t.Errorf("%q: exit %d, want 125 and the symlink error:\n%s", args, r.code, r)
			}
			checkOneCordonLine(t, r)
			if strings.Contains(r.all(), "FAKE-KEY") || strings.Contains(r.all(), "OPENSSH") {
				t.Errorf("%q printed the key:\n%s", args, r)
			}
		}
	})
	t.Run("fifo", func(t *testing.T) {
		e := newEnv(t)
		if err := syscall.Mkfifo(filepath.Join(e.ws, ".cordon.yaml"), 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := e.run("policy")
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("cordon policy took %s with a FIFO .cordon.yaml", d)
		}
		if r.code != 125 || !strings.Contains(r.stderr, ".cordon.yaml: not a regular file (a FIFO)") {
			t.Errorf("exit %d, want 125 and the FIFO error:\n%s", r.code, r)
		}
		checkOneCordonLine(t, r)
	})
	t.Run("not yaml", func(t *testing.T) {
		e := newEnv(t)
		writeFile(t, filepath.Join(e.ws, ".cordon.yaml"), fakeKey)
		r := e.run("policy")
		if r.code != 125 || strings.Contains(r.all(), "FAKE-KEY") || strings.Contains(r.all(), "OPENSSH") {
			t.Errorf("exit %d, want 125 without the content:\n%s", r.code, r)
		}
		checkOneCordonLine(t, r)
	})
	t.Run("XDG_CONFIG_HOME in the workspace", func(t *testing.T) {
		e := newEnv(t)
		xdg := filepath.Join(e.ws, "xdg")
		writeFile(t, filepath.Join(xdg, "cordon", "config.yaml"), "sandbox:\n  mode: off\n")
		e.extra = append(e.extra, "XDG_CONFIG_HOME="+xdg)
		r := e.run("policy")
		if r.code != 125 || !strings.Contains(r.stderr, "config.yaml:2: sandbox.mode: off (weaker than the current standard) cannot be set by a file inside the workspace") {
			t.Errorf("exit %d, want 125 and the tighten-only error:\n%s", r.code, r)
		}
		checkOneCordonLine(t, r)
		writeFile(t, filepath.Join(xdg, "cordon", "config.yaml"), "sandbox:\n  filesystem:\n    deny: [\"**/*.key\"]\n")
		if r := e.run("policy"); r.code != 0 || !strings.Contains(r.stdout, "'**/*.key'") {
			t.Errorf("a tightening config there: %s", r)
		}
	})
}
