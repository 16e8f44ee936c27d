// Package launch runs one confined command, from its policy to its
// result.Result, the same way for every front end (cordon run, the MCP
// server's run_command, the library's Sandbox.Run: RunCommand). It builds
// the plan (package plan) with the host's facts and falls back to the
// Landlock-only backend where bubblewrap cannot start; prepares the
// placeholders and locks of the workspace; serves the host side of the
// network (the filtering proxy, forwarded ports) and the violation
// monitor's supervisor; starts bubblewrap or the helper with their
// descriptors; forwards signals, passes a terminal through a private pty,
// enforces the timeout and the limits by killing the whole tree; and after
// the command checks what it planted (package planted), classifies what
// was denied, writes the audit records and words the report lines the
// front end prints. Run alone runs an already built plan.Plan. A Session
// keeps one bwrap sandbox for many commands (Request.Session), each
// started in it by the helper's session server (helperspec.SessionCommand).
//
// It owns the order of those steps and the host-side processes. It must
// not decide policy (package policy, package plan) or print: every line
// reaches the user through the Result and the caller.
//
// The bwrap and Landlock-only runs are built only for Linux. On macOS a
// Seatbelt plan's argv (sandbox-exec) runs in its own process group, as
// mode off does (seatbelt_darwin.go); on Windows a Job plan runs in a Job
// Object (job_windows.go), which was compiled and vetted on Linux but not
// run on Windows. A backend not built for the running system is refused
// with a *SetupError that names the system, never run unconfined.
package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/ask"
	"github.com/cordon-sandbox/cordon/internal/monitor"
	"github.com/cordon-sandbox/cordon/internal/net/netproxy"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// Stdio are the command's standard streams, and how it is attached to the
// process that runs it. An *os.File is passed to the command as is; any
// other reader or writer is copied through a pipe.
type Stdio struct {
	// Stdin is the command's standard input (nil: /dev/null).
	Stdin io.Reader
	// Stdout is the command's standard output (nil: /dev/null).
	Stdout io.Writer
	// Stderr is the command's standard error (nil: /dev/null).
	Stderr io.Writer
	// ForwardSignals passes SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
	// SIGUSR2 received by this process on to the command (the CLI does;
	// a library host usually handles its own signals).
	ForwardSignals bool
	// OwnsChildren says that every child of this process belongs to the
	// run (cordon run). Without a pid namespace (the Landlock-only
	// backend), a child subreaper that owns its children kills and reaps
	// what is left of the command's tree when the command ends, processes
	// that left its process group included: they come back to it as
	// orphans.
	OwnsChildren bool
	// NoUsage says that the caller ignores Result.Usage (cordon run
	// without --json): then Run does not wait for bwrap's init to die to
	// count the command's CPU time, which saves about a millisecond.
	NoUsage bool
	// NetEvents, when not nil, receives every decision of the run's
	// network proxy as it is made, from the proxy's goroutines
	// (RunCommand records each in Request.Audit).
	NetEvents func(netproxy.Event)
	// CredentialUses, when not nil, receives every request that carried
	// a credential's placeholder to its host (RunCommand records each in
	// Request.Audit), from the proxy's goroutines.
	CredentialUses func(netproxy.CredentialUse)
	// NetAsk, when not nil, is asked about each connection to a target no
	// allow entry names, held meanwhile (netproxy.Config.Ask).
	NetAsk func(ctx context.Context, host string, port int) bool
	// Console, when not nil, is where questions are asked
	// (Request.Ask): on a terminal, the command's pseudo-terminal is
	// copied through it (Linux).
	Console *ask.Console
	// Watch, when not nil, turns the violation monitor on (bubblewrap and
	// Landlock-only runs): it receives every watched call of the command's
	// tree (monitor.Event), from the monitor's goroutine, one at a time,
	// after the call went on to the kernel. On a Seatbelt run (macOS) it
	// receives instead every denial the system log reported of the run
	// (package seatbeltlog), once for each time it happened. Run returns
	// once the last has been received.
	Watch func(monitor.Event)
	// WatchOptions tune the monitor (the trees whose symbolic links it
	// follows).
	WatchOptions monitor.Options

	// said holds the degraded lines already printed, when a run that fell
	// back to the Landlock-only backend runs a second time (RunCommand):
	// the host's facts (no cgroup) are said once.
	said *[]string
	// WalksServed says that a walk server answered the plan's walks
	// (RunCommand sets it): the check after the run asks it too, which
	// costs less than counting the run's tree changes.
	WalksServed bool
}

// sayDegraded prints the run-time degradation n on stderr, unless this
// request already did.
func (s Stdio) sayDegraded(n string) {
	if s.Stderr == nil {
		return
	}
	if s.said != nil {
		if slices.Contains(*s.said, n) {
			return
		}
		*s.said = append(*s.said, n)
	}
	fmt.Fprintln(s.Stderr, "cordon: degraded: "+n)
}

// SetupError is a failure before the command ran (exit status 125).
type SetupError struct {
	Err error
	// UserNS reports that bwrap could not make its namespaces here (no
	// user namespace, or no /proc of its own in one): with --backend auto
	// the caller may fall back to the Landlock-only backend.
	UserNS bool
}

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// ExecError is a command that could not be executed (126 or 127).
type ExecError struct {
	// Code is 126 or 127.
	Code int
	// Msg says why.
	Msg string
}

func (e *ExecError) Error() string { return e.Msg }

// Run executes pl and waits for it. A returned error means the command did
// not run (a *SetupError or *ExecError); otherwise the Result carries its
// exit status. Cancelling ctx kills the sandbox.
func Run(ctx context.Context, pl *plan.Plan, stdio Stdio) (*result.Result, error) {
	return run(ctx, pl, stdio, nil)
}

// run is Run with the workspace lock taken before pl was built
// (buildLocked), or nil.
func run(ctx context.Context, pl *plan.Plan, stdio Stdio, held *workspaceLock) (*result.Result, error) {
	if pl.Timeout < 0 {
		return nil, &SetupError{Err: fmt.Errorf("the plan's timeout %s is negative: give a positive duration, or 0 for none", pl.Timeout)}
	}
	if err := refuseUnrunnable(pl); err != nil {
		return nil, err
	}
	switch pl.Backend {
	case backend.Bwrap, backend.Landlock:
		return runSandbox(ctx, pl, stdio, held)
	case backend.None:
		return runNone(ctx, pl, stdio)
	case backend.Seatbelt:
		return runSeatbelt(ctx, pl, stdio)
	case backend.Job:
		return runJob(ctx, pl, stdio)
	}
	return nil, &SetupError{Err: fmt.Errorf("launch: unknown backend %q", pl.Backend)}
}

// directCommand is the command of a plan that cordon starts itself, with
// no helper (mode off; the Seatbelt and Job Object backends): pl's argv,
// environment and directory, stdio's streams, and the system's attributes.
func directCommand(pl *plan.Plan, stdio Stdio, attr *syscall.SysProcAttr) *exec.Cmd {
	cmd := &exec.Cmd{Path: pl.Argv[0], Args: pl.Argv, Env: pl.Env, Dir: pl.Dir, SysProcAttr: attr}
	if stdio.Stdin != nil {
		cmd.Stdin = stdio.Stdin
	}
	if stdio.Stdout != nil {
		cmd.Stdout = stdio.Stdout
	}
	if stdio.Stderr != nil {
		cmd.Stderr = stdio.Stderr
	}
	return cmd
}

// startError words the failure to start a directCommand as a shell would
// (127 not found, 126 not executable), else as a set-up failure.
func startError(pl *plan.Plan, err error) error {
	var ee *exec.Error
	if errors.Is(err, os.ErrNotExist) || errors.As(err, &ee) {
		return &ExecError{Code: result.ExitNotFound, Msg: fmt.Sprintf("%s: command not found", pl.Command[0])}
	}
	if errors.Is(err, os.ErrPermission) {
		return &ExecError{Code: result.ExitCannotExec, Msg: fmt.Sprintf("%s: permission denied", pl.Command[0])}
	}
	return &SetupError{Err: fmt.Errorf("starting %s: %w", pl.Command[0], err)}
}
