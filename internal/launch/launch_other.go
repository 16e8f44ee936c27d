//go:build !linux

package launch

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"

	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// errLinuxOnly says that the bubblewrap and Landlock-only backends, and
// what serves them (the helper, the workspace lock, Wrap), are built only
// for Linux.
var errLinuxOnly = fmt.Errorf("the bwrap and Landlock-only backends are built only for Linux, not for %s; use --backend auto", runtime.GOOS)

// runSandbox refuses: see errLinuxOnly.
func runSandbox(context.Context, *plan.Plan, Stdio, *workspaceLock) (*result.Result, error) {
	return nil, &SetupError{Err: errLinuxOnly}
}

// workspaceLock is the lock of a bubblewrap run's workspace: there are
// none outside Linux.
type workspaceLock struct{}

// release does nothing: there is no lock outside Linux.
func (*workspaceLock) release() {}

// lockKey is the key of a bubblewrap run's workspace lock: there are none
// outside Linux.
func lockKey(string, string) string { return "" }

// acquireLock refuses: see errLinuxOnly.
func acquireLock(string, string, func(string) bool) (*workspaceLock, error) {
	return nil, errLinuxOnly
}

// BecomeSubreaper is built only for Linux (prctl PR_SET_CHILD_SUBREAPER):
// elsewhere it returns an error saying so. cordon's own commands ignore
// it; the runs outside Linux kill the command's process group or Job
// Object instead.
func BecomeSubreaper() error {
	return fmt.Errorf("launch: becoming a child subreaper is built only for Linux, not for %s", runtime.GOOS)
}

// Wrap is built only for Linux (it prepares a bwrap or Landlock-only
// command for a caller to start): elsewhere it returns an error saying so.
func Wrap(*plan.Plan, *exec.Cmd) (func(), error) {
	return nil, errors.New("launch: Wrap needs a bwrap or Landlock-only plan, " + errLinuxOnly.Error())
}
