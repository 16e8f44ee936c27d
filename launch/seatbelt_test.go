package launch

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/plan"
)

// TestSeatbeltRefusedOffMac: a Seatbelt plan is refused by Run, as a
// set-up failure (exit 125), before anything starts: off macOS because
// only macOS has sandbox-exec, on macOS until its launcher is built.
func TestSeatbeltRefusedOffMac(t *testing.T) {
	pl := &plan.Plan{Backend: backend.Seatbelt, Argv: []string{plan.SandboxExec, "-p", "(version 1)", "/nonexistent/cmd"}, Command: []string{"/nonexistent/cmd"}}
	_, err := Run(context.Background(), pl, Stdio{})
	var se *SetupError
	if !errors.As(err, &se) {
		t.Fatalf("Run: %v, want a *SetupError", err)
	}
	want := errSeatbeltElsewhere
	if runtime.GOOS == "darwin" {
		want = errSeatbeltLauncher
	}
	if !errors.Is(err, want) {
		t.Errorf("Run: %v, want %v", err, want)
	}
	if err := refuseUnrunnable(&plan.Plan{Backend: backend.Bwrap}); err != nil {
		t.Errorf("a bwrap plan is refused: %v", err)
	}
}
