//go:build !darwin

package launch

import (
	"context"
	"fmt"
	"runtime"

	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// runSeatbelt refuses: the Seatbelt backend runs only on macOS.
func runSeatbelt(context.Context, *plan.Plan, Stdio) (*result.Result, error) {
	return nil, &SetupError{Err: fmt.Errorf("the macOS Seatbelt backend runs only on macOS, not on %s; use --backend auto", runtime.GOOS)}
}
