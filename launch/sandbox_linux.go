package launch

import (
	"context"

	"github.com/cordon-sandbox/cordon/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// runSandbox runs a bwrap plan, or a Landlock-only plan, in which the
// helper runs directly on the host: no mount points to lock, no pid
// namespace (the command's process group, and the cgroup when there is
// one, are what a timeout kills), and a private directory for /tmp. Like
// os/exec's Cmd.Run it is start, then wait: start prepares the host side
// and starts bwrap (or the helper); supervise follows the helper's status
// messages, signals, the timeout and the context until the sandbox exits;
// finish disarms what the run planted and turns the end into a Result.
func runSandbox(ctx context.Context, pl *plan.Plan, stdio Stdio, held *workspaceLock) (*result.Result, error) {
	r := &sandboxRun{pl: pl, stdio: stdio, pidfd: -1, held: held,
		res: &result.Result{Backend: pl.Backend, Degraded: pl.Degraded}}
	defer r.closeAfterWait()
	if err := r.start(); err != nil {
		return nil, err
	}
	waitErr := r.supervise(ctx)
	return r.finish(waitErr)
}
