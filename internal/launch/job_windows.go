package launch

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/windows"

	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// runJob runs a Job Object plan (Windows): the command starts suspended,
// goes into a Job Object with the plan's limits and
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, and only then runs, so that no
// process of its tree starts outside the job. The timeout, a cancelled
// context and an interrupt of cordon terminate the whole job at once
// (Windows has no SIGTERM to send first), and so does the end of the
// command (what it left running) and the death of cordon (Windows closes
// the job's last handle). Files and network are not confined: the plan
// says so in Degraded and cordon run says so on stderr.
//
// It is tested under Wine (job_windows_test.go), which terminates the job
// on timeout and on cordon's death but enforces none of its limits; it
// was not run on Windows itself.
func runJob(ctx context.Context, pl *plan.Plan, stdio Stdio) (*result.Result, error) {
	return runInJob(ctx, pl, stdio, pl.Limits)
}

// runNone runs an unconfined plan (mode off) on Windows: in a Job Object
// without limits, for the clean-up of the command's tree only.
func runNone(ctx context.Context, pl *plan.Plan, stdio Stdio) (*result.Result, error) {
	return runInJob(ctx, pl, stdio, limits.Limits{})
}

// runInJob runs pl's Argv in a new Job Object with the limits l.
func runInJob(ctx context.Context, pl *plan.Plan, stdio Stdio, l limits.Limits) (*result.Result, error) {
	if len(pl.Argv) == 0 {
		return nil, &SetupError{Err: errors.New("launch: the plan has no command")}
	}
	res := &result.Result{Backend: pl.Backend, Degraded: pl.Degraded}
	job, err := limits.NewJob(l)
	if err != nil {
		return nil, &SetupError{Err: err}
	}
	defer job.Close()
	cmd := directCommand(pl, stdio, &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP})
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
	if err := job.Assign(pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, &SetupError{Err: err}
	}
	if err := limits.Resume(pid); err != nil {
		_ = job.Kill()
		_ = cmd.Wait()
		return nil, &SetupError{Err: err}
	}
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()
	var timeout <-chan time.Time
	if d := pl.Timeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	timedOut := false
loop:
	for {
		select {
		case <-sigs:
			_ = job.Kill()
		case <-timeout:
			timedOut = true
			_ = job.Kill()
		case <-ctx.Done():
			_ = job.Kill()
		case <-waitc:
			break loop
		}
	}
	_ = job.Kill() // what the command left running
	res.Usage = usage(cmd.ProcessState, time.Since(start))
	res.Usage.PeakMemoryKB = int64(job.PeakMemory() / 1024)
	fillExit(res, cmd.ProcessState)
	if timedOut {
		res.TimedOut = true
		res.ExitCode = result.ExitTimeout
	}
	return res, nil
}

// forwarded are the signals that end a Windows run: Ctrl-C and Ctrl-Break
// reach the command's console themselves, and cordon terminates the job.
var forwarded = []os.Signal{os.Interrupt, syscall.SIGTERM}

// fillExit sets res's exit code from ps: Windows has no signals, so an
// exit code is all there is.
func fillExit(res *result.Result, ps *os.ProcessState) {
	if ps == nil {
		res.ExitCode = result.ExitSetup
		return
	}
	res.ExitCode = ps.ExitCode()
}

// usage is the command's wall and CPU time; the job's peak memory is
// added by runInJob.
func usage(ps *os.ProcessState, wall time.Duration) result.Usage {
	u := result.Usage{Wall: wall}
	if ps == nil {
		return u
	}
	u.User = ps.UserTime()
	u.System = ps.SystemTime()
	return u
}

// IsTerminal reports whether f is a console.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(f.Fd()), &mode) == nil
}
