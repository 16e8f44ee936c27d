//go:build !windows

package launch

import (
	"context"
	"fmt"
	"runtime"

	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// runJob refuses: the Job Object backend runs only on Windows.
func runJob(context.Context, *plan.Plan, Stdio) (*result.Result, error) {
	return nil, &SetupError{Err: fmt.Errorf("the Windows Job Object backend runs only on Windows, not on %s; use --backend auto", runtime.GOOS)}
}
