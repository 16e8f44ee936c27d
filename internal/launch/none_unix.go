//go:build unix

package launch

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// runNone runs an unconfined plan (mode off). The command gets its own
// process group, which receives forwarded signals and, on timeout, SIGTERM
// then SIGKILL. Without a pid namespace, children that leave the group
// (setsid) cannot be found: mode off confines nothing.
func runNone(ctx context.Context, pl *plan.Plan, stdio Stdio) (*result.Result, error) {
	res := &result.Result{Backend: pl.Backend, Degraded: pl.Degraded}
	cmd := directCommand(pl, stdio, &syscall.SysProcAttr{Setpgid: true})
	sigs := make(chan os.Signal, 8)
	if stdio.ForwardSignals {
		signal.Notify(sigs, forwarded...)
		defer signal.Stop(sigs)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, startError(pl, err)
	}
	pid := cmd.Process.Pid
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()
	var timeout, grace <-chan time.Time
	if d := pl.Timeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	timedOut := false
loop:
	for {
		select {
		case s := <-sigs:
			_ = syscall.Kill(-pid, s.(syscall.Signal))
		case <-timeout:
			timedOut = true
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			grace = time.After(gracePeriod)
		case <-grace:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		case <-ctx.Done():
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		case <-waitc:
			break loop
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL) // stragglers left in the group
	res.Usage = usage(cmd.ProcessState, time.Since(start))
	fillExit(res, cmd.ProcessState)
	if timedOut {
		res.TimedOut = true
		res.ExitCode = result.ExitTimeout
	}
	return res, nil
}
