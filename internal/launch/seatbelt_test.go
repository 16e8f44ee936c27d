package launch

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/plan"
)

// TestSeatbeltRefusedOffMac: off macOS, a Seatbelt plan is refused by
// Run, as a set-up failure (exit 125), before anything starts: only macOS
// has sandbox-exec.
func TestSeatbeltRefusedOffMac(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("macOS runs Seatbelt plans")
	}
	pl := &plan.Plan{Backend: backend.Seatbelt, Argv: []string{plan.SandboxExec, "-p", "(version 1)", "/nonexistent/cmd"}, Command: []string{"/nonexistent/cmd"}}
	_, err := Run(context.Background(), pl, Stdio{})
	var se *SetupError
	if !errors.As(err, &se) {
		t.Fatalf("Run: %v, want a *SetupError", err)
	}
	if !errors.Is(err, errSeatbeltElsewhere) {
		t.Errorf("Run: %v, want %v", err, errSeatbeltElsewhere)
	}
	if err := refuseUnrunnable(&plan.Plan{Backend: backend.Bwrap}); err != nil {
		t.Errorf("a bwrap plan is refused: %v", err)
	}
}
