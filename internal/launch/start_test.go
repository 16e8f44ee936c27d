//go:build linux

package launch

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// TestLauncherEnv: the process the launcher starts on the host (bwrap, or
// the helper on the Landlock-only backend) gets plan.LauncherEnv, only
// the helper's GOMAXPROCS=1 and never cordon's own (a nil Env would be),
// while the command's environment reaches the helper in its spec.
func TestLauncherEnv(t *testing.T) {
	commandEnv := []string{"LD_PRELOAD=/ws/evil.so", "LD_LIBRARY_PATH=/ws/lib", "GODEBUG=panicnil=1", "PATH=/usr/bin:/bin", "TOKEN=secret"}
	for _, tc := range []struct {
		name    string
		backend backend.Name
		argv    []string
	}{
		{"bwrap", backend.Bwrap, []string{"/usr/bin/bwrap", "--", helperspec.HelperPath, helperspec.HelperCommand, "--", "true"}},
		{"landlock", backend.Landlock, []string{helperspec.HelperExec, helperspec.HelperCommand, "--", "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("LD_PRELOAD", "/from/cordons/own/env.so")
			pl := &plan.Plan{Backend: tc.backend, Argv: tc.argv, Command: []string{"true"},
				Env: commandEnv, Dir: t.TempDir(), PidNamespace: tc.backend == backend.Bwrap, HelperIsChild: tc.backend == backend.Landlock}
			r := &sandboxRun{pl: pl, res: &result.Result{}}
			defer r.closeAfterWait()
			files, err := r.helperFiles()
			if err != nil {
				t.Fatal(err)
			}
			r.newCommand(files)
			if want := []string{"GOMAXPROCS=1"}; r.cmd.Env == nil || !slices.Equal(r.cmd.Env, want) {
				t.Errorf("the host process's environment is %q (nil: cordon's own), want %q", r.cmd.Env, want)
			}
			if r.cmd.Path != tc.argv[0] || !slices.Equal(r.cmd.Args, tc.argv) {
				t.Errorf("command %s %q, want the plan's argv %q", r.cmd.Path, r.cmd.Args, tc.argv)
			}
			data, err := io.ReadAll(files[helperspec.FdSpec-helperspec.FdHelperExe])
			if err != nil {
				t.Fatal(err)
			}
			var spec helperspec.Spec
			if err := json.Unmarshal(data, &spec); err != nil {
				t.Fatalf("decoding the spec %q: %v", data, err)
			}
			if !slices.Equal(spec.Env, commandEnv) {
				t.Errorf("the spec's environment is %q, want the command's %q", spec.Env, commandEnv)
			}
		})
	}
}

// TestLauncherEnvFresh: each call is a new slice holding only
// GOMAXPROCS=1, so a caller changing one cannot change another's.
func TestLauncherEnvFresh(t *testing.T) {
	want := []string{"GOMAXPROCS=1"}
	a, b := plan.LauncherEnv(), plan.LauncherEnv()
	if !slices.Equal(a, want) || !slices.Equal(b, want) {
		t.Fatalf("LauncherEnv() = %#v, %#v: want %q", a, b, want)
	}
	a[0] = "X=1"
	a = append(a, "Y=1")
	if !slices.Equal(plan.LauncherEnv(), want) || len(a) != 2 {
		t.Errorf("LauncherEnv shares its slice")
	}
}

// TestSpecWaitsForGate: the spec reaches the helper only once start has
// closed the gate (the run's journal written, the guard's snapshot
// taken), since the helper runs nothing of the command before it has its
// spec; it is encoded meanwhile.
func TestSpecWaitsForGate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend backend.Name
	}{
		{"bwrap", backend.Bwrap},
		{"landlock", backend.Landlock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := &plan.Plan{Backend: tc.backend, Argv: []string{"/bin/true"}, Command: []string{"true"},
				Env: []string{"PATH=/usr/bin:/bin"}, Dir: t.TempDir(), PidNamespace: tc.backend == backend.Bwrap, HelperIsChild: tc.backend == backend.Landlock}
			r := &sandboxRun{pl: pl, res: &result.Result{}}
			defer r.closeAfterWait()
			gate := make(chan struct{})
			r.specGate = gate
			files, err := r.helperFiles()
			if err != nil {
				t.Fatal(err)
			}
			specR := files[helperspec.FdSpec-helperspec.FdHelperExe]
			if err := specR.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			var b [1]byte
			if n, err := specR.Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the spec pipe gave %d bytes (%v) before the gate was closed, want nothing", n, err)
			}
			close(gate)
			if err := specR.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(specR)
			if err != nil {
				t.Fatal(err)
			}
			var spec helperspec.Spec
			if err := json.Unmarshal(data, &spec); err != nil {
				t.Fatalf("decoding the spec %q after the gate: %v", data, err)
			}
		})
	}
}
