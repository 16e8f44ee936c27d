package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/host/probe"
	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// withBwrapPath makes the sandbox use the bwrap at path (sandbox.bwrap_path).
func withBwrapPath(path string) Option {
	return func(s *settings) { s.layer.BwrapPath = config.Ptr(path) }
}

// TestRunEnvEveryBackend: Run gives the command cmd.Env on every backend,
// not only under bwrap: on the Landlock-only backend chosen at once (no
// bwrap), after the fall back from a bwrap that cannot create a user
// namespace, and in mode off. On the Landlock-only backend TMPDIR stays
// the plan's private temporary directory (the host's /tmp is out of
// reach), whatever cmd.Env says, and the command can write there.
func TestRunEnvEveryBackend(t *testing.T) {
	home, ws := fakeHost(t)
	if r := probe.Detect(probe.Options{}); r.Landlock.ABI < 1 {
		testenv.SkipOrFail(t, "Landlock is unavailable: the Landlock-only backend cannot run here")
	}
	// A bwrap that fails as bwrap does where user namespaces are
	// forbidden.
	noUserNS := filepath.Join(home, "bin", "bwrap")
	if err := os.MkdirAll(filepath.Dir(noUserNS), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(noUserNS, []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(home, ".local", "state", "cordon")
	// Builtins only: as a normal user without a cgroup, the profile's
	// process limit is RLIMIT_NPROC, which counts the user's other
	// processes.
	script := `echo "X=$X"; echo "TMPDIR=$TMPDIR"; echo data > "$TMPDIR/f" && read -r l < "$TMPDIR/f" && echo "$l"`
	for _, tc := range []struct {
		name     string
		opts     []Option
		landlock bool // TMPDIR is a private directory under the state directory
	}{
		{"landlock at once", []Option{withBwrapPath(filepath.Join(home, "no", "bwrap"))}, true},
		{"fallback", []Option{withBwrapPath(noUserNS)}, true},
		{"mode off", []Option{WithMode("off")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := New(append([]Option{WithWorkspace(ws), WithEnv("X=policy")}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			hostTmp := filepath.Join(ws, "hosttmp")
			if err := os.MkdirAll(hostTmp, 0o755); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			cmd := exec.Command("/bin/sh", "-c", script)
			cmd.Dir = ws
			cmd.Env = []string{"PATH=/usr/bin:/bin", "X=cmd", "TMPDIR=" + hostTmp}
			cmd.Stdout, cmd.Stderr = &out, &errb
			res, err := sb.Run(context.Background(), cmd)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, errb.String())
			}
			backend, code := res.Backend, res.ExitCode
			lines := strings.Split(out.String(), "\n")
			if code != 0 || len(lines) < 3 || lines[0] != "X=cmd" || lines[2] != "data" {
				t.Fatalf("exit %d, stdout %q, stderr %q: want X=cmd and a write to TMPDIR", code, out.String(), errb.String())
			}
			tmp := strings.TrimPrefix(lines[1], "TMPDIR=")
			if tc.landlock {
				if backend != "landlock" || !strings.HasPrefix(tmp, stateDir+"/") {
					t.Errorf("backend %s, TMPDIR %q: want landlock and the private directory under %s", backend, tmp, stateDir)
				}
			} else if tmp != hostTmp {
				t.Errorf("TMPDIR %q, want cmd.Env's %q", tmp, hostTmp)
			}
		})
	}
}

// TestWrapLandlockOnly: a wrapped command runs on the Landlock-only
// backend too, without the supervisor (nothing on the host serves it),
// which its helper says on a degraded line. The helper there is a Go program started on the host,
// whose runtime may open files (the cgroup CPU limit) at the descriptor
// numbers Wrap leaves empty (the status socket's, the command's stderr's):
// the helper must go by what the spec says it was given, not by what is
// open.
func TestWrapLandlockOnly(t *testing.T) {
	home, ws := fakeHost(t)
	if r := probe.Detect(probe.Options{}); r.Landlock.ABI < 1 {
		testenv.SkipOrFail(t, "Landlock is unavailable: the Landlock-only backend cannot run here")
	}
	for _, tc := range []struct {
		name       string
		fileStderr bool // cmd.Stderr is an *os.File: Wrap hands it over at FdStderr
	}{{"buffer stderr", false}, {"file stderr", true}} {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := New(WithWorkspace(ws), WithWritePaths(ws), withBwrapPath(filepath.Join(home, "no", "bwrap")))
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			var out bytes.Buffer
			cmd := exec.Command("sh", "-c", `echo wrapped; echo oops >&2; echo x > ok-`+strings.ReplaceAll(tc.name, " ", "-")+`; cat "$HOME/.ssh/id_rsa"`)
			cmd.Dir = ws
			cmd.Stdout = &out
			errPath := filepath.Join(t.TempDir(), "stderr")
			if tc.fileStderr {
				f, err := os.Create(errPath)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				cmd.Stderr = f
			} else {
				cmd.Stderr = &out
			}
			if err := sb.Wrap(cmd); err != nil {
				t.Fatal(err)
			}
			err = cmd.Run()
			stderr := out.String()
			if tc.fileStderr {
				b, _ := os.ReadFile(errPath)
				stderr = string(b)
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("wrapped run on the Landlock-only backend: %v\nstdout+stderr: %q\nstderr: %q", err, out.String(), stderr)
			}
			if !strings.Contains(out.String(), "wrapped") || !strings.Contains(stderr, "oops") || strings.Contains(out.String()+stderr, "SECRET-KEY-31") {
				t.Errorf("stdout %q, stderr %q", out.String(), stderr)
			}
			// Nothing serves the supervisor: the helper says so.
			if !strings.Contains(stderr, "cordon: degraded: no supervisor (the command was started with Wrap") {
				t.Errorf("a wrapped Landlock-only run does not say it runs without the supervisor: %q", stderr)
			}
		})
	}
}
