package launch

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/cordon-sandbox/cordon/internal/monitor"
	"github.com/cordon-sandbox/cordon/internal/monitor/seatbeltlog"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// The log stream's timing (macOS's violation monitor, runSeatbelt).
const (
	// logReady bounds the wait for the stream's first line (its
	// "Filtering the log data using ..." header) before the command
	// starts: a stream that says nothing by then fails the run.
	logReady = 5 * time.Second
	// logGrace is how long the stream is read once the command has
	// ended. The kernel hands its Sandbox messages to logd, which
	// passes them on to log stream asynchronously: a denial made just
	// before the command exits reaches the stream some tens of
	// milliseconds later, more on a loaded machine. Half a second
	// covers that at a cost a person barely notices.
	logGrace = 500 * time.Millisecond
	// logQuiet and logGraceMax: while denials still arrive (within
	// logQuiet of the end of the grace), reading goes on, up to
	// logGraceMax after the command ended.
	logQuiet    = 200 * time.Millisecond
	logGraceMax = 2 * time.Second
)

// runSeatbelt runs a Seatbelt plan: its Argv (/usr/bin/sandbox-exec -p
// PROFILE ... -- command) runs directly, as runNone runs a command: in its
// own process group, which receives forwarded signals and, on timeout,
// SIGTERM then SIGKILL, and which is killed whole when the context is
// cancelled and when the command ends. Its TMPDIR (pl.PrivateTmp) is
// created before and removed after. A filtered network's proxies are
// started first on the host's 127.0.0.1 (startSeatbeltNet) and the
// profile that runs allows connecting to their two ports; they stop once
// the command has ended, and what they refused is in Result.NetRefused.
// A proxy that cannot start fails the run (a *SetupError): the command
// never runs with the network unfiltered. This was compiled for macOS but
// never run there: the proxy's side and the profile are tested on Linux,
// sandbox-exec with that profile is not. There is no helper on macOS, so
// the resource limits of the plan are not enforced: each one set is said
// in Result.Degraded.
//
// With Stdio.Watch, the violation monitor is macOS's log: a log stream of
// the denials tagged with the plan's Seatbelt.Tag (package seatbeltlog)
// starts before the command, which runs only once the stream has printed
// its first line; a stream that cannot start fails the run (a
// *SetupError), never runs it unwatched. Once the command has ended the
// stream is read for a grace period (logGrace: the log delivers late),
// then stopped; Result.Monitor counts the denials it reported.
func runSeatbelt(ctx context.Context, pl *plan.Plan, stdio Stdio) (*result.Result, error) {
	if len(pl.Argv) == 0 {
		return nil, &SetupError{Err: fmt.Errorf("launch: the Seatbelt plan has no command")}
	}
	pl, nr, err := startSeatbeltNet(pl, stdio)
	if err != nil {
		return nil, &SetupError{Err: err}
	}
	defer nr.close()
	if pl.PrivateTmp != "" {
		// The command's TMPDIR, inside cordon's state directory (the
		// profile allows it again there); removed after the run.
		if err := os.MkdirAll(pl.PrivateTmp, 0o700); err != nil {
			return nil, &SetupError{Err: fmt.Errorf("creating the run's temporary directory: %w", err)}
		}
		defer os.RemoveAll(pl.PrivateTmp)
	}
	if err := nr.writeBundle(); err != nil {
		return nil, &SetupError{Err: err}
	}
	var lw *logWatch
	if stdio.Watch != nil {
		if lw, err = startSeatbeltWatch(pl, stdio.Watch); err != nil {
			return nil, &SetupError{Err: err}
		}
	}
	res, err := runNone(ctx, pl, stdio)
	// The command has ended: stop the proxy (its last tunnels with it)
	// and gather what it refused.
	nr.close()
	if res != nil {
		res.NetRefused, res.NetRefusedMore = nr.refusals(), nr.refusedMore()
	}
	if lw != nil {
		n, degraded := lw.stop(time.Now(), logGrace, logQuiet, logGraceMax)
		if res != nil {
			res.Monitor = &result.Monitor{Calls: n, FromLog: true}
			if degraded != "" {
				res.Degraded = append(res.Degraded, degraded)
			}
		}
	}
	if res != nil {
		res.Degraded = append(res.Degraded, unenforcedLimits(pl)...)
	}
	return res, err
}

// startSeatbeltWatch starts the log stream of pl's denials, passed to
// watch.
func startSeatbeltWatch(pl *plan.Plan, watch func(monitor.Event)) (*logWatch, error) {
	if pl.Seatbelt == nil {
		return nil, fmt.Errorf("launch: the Seatbelt plan has no profile tag to watch its denials by")
	}
	argv, err := seatbeltlog.Argv(pl.Seatbelt.Tag)
	if err != nil {
		return nil, fmt.Errorf("the violation monitor: %w", err)
	}
	p, err := seatbeltlog.NewParser(pl.Seatbelt.Tag)
	if err != nil {
		return nil, fmt.Errorf("the violation monitor: %w", err)
	}
	lw, err := startLogWatch(argv, p, watch, logReady)
	if err != nil {
		return nil, fmt.Errorf("the violation monitor (cordon test, on_violation: warn or log, --audit-log) reads the denials from macOS's log, and %w; the command was not run", err)
	}
	return lw, nil
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
