package launch

import (
	"context"
	"fmt"
	"os"
	"runtime"

	"github.com/cordon-sandbox/cordon/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// runSeatbelt runs a Seatbelt plan: its Argv (/usr/bin/sandbox-exec -p
// PROFILE ... -- command) runs directly, as runNone runs a command: in its
// own process group, which receives forwarded signals and, on timeout,
// SIGTERM then SIGKILL, and which is killed whole when the context is
// cancelled and when the command ends. Its TMPDIR (pl.PrivateTmp) is
// created before and removed after; a filtered network is refused (no
// proxy is started here yet). There is no helper on macOS, so
// the resource limits of the plan are not enforced: each one set is said
// in Result.Degraded.
func runSeatbelt(ctx context.Context, pl *plan.Plan, stdio Stdio) (*result.Result, error) {
	if len(pl.Argv) == 0 {
		return nil, &SetupError{Err: fmt.Errorf("launch: the Seatbelt plan has no command")}
	}
	if pl.Net != nil && pl.Net.Filtered() {
		return nil, &SetupError{Err: fmt.Errorf("a filtered network (--allow-net, --deny-net) on macOS: the network proxy is not started by the macOS launcher yet; use --net deny or --net open")}
	}
	if pl.PrivateTmp != "" {
		// The command's TMPDIR, inside cordon's state directory (the
		// profile allows it again there); removed after the run.
		if err := os.MkdirAll(pl.PrivateTmp, 0o700); err != nil {
			return nil, &SetupError{Err: fmt.Errorf("creating the run's temporary directory: %w", err)}
		}
		defer os.RemoveAll(pl.PrivateTmp)
	}
	res, err := runNone(ctx, pl, stdio)
	if res != nil {
		res.Degraded = append(res.Degraded, unenforcedLimits(pl)...)
	}
	return res, err
}

// unenforcedLimits names the limits of pl that a run without a helper or
// a Job Object (macOS) does not enforce, one sentence each.
func unenforcedLimits(pl *plan.Plan) []string {
	var out []string
	say := func(what string, v int) {
		if v > 0 {
			out = append(out, fmt.Sprintf("%s (%d): not enforced on %s, which has no cordon helper to set it", what, v, runtime.GOOS))
		}
	}
	say("max processes", pl.Limits.MaxProcesses)
	say("max memory MiB", pl.Limits.MaxMemoryMB)
	say("max CPU seconds", pl.Limits.MaxCPUSeconds)
	return out
}
