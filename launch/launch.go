// Package launch runs a plan.Plan and returns its result.Result: it starts
// bubblewrap with the helper's descriptors, turns setup failures into one
// clear error, forwards signals to the command, enforces the timeout by
// killing the whole sandbox, passes a terminal through a private pty, and
// cleans up the mount points bwrap created for missing protected paths.
//
// The bwrap and Landlock-only runs are built only for Linux. On macOS a
// Seatbelt plan's argv (sandbox-exec) runs in its own process group, as
// mode off does (seatbelt_darwin.go); on Windows a Job plan runs in a Job
// Object (job_windows.go), which was compiled and vetted on Linux but not
// run on Windows. A backend not built for the running system is refused
// with a *SetupError that names the system, never run unconfined.
package launch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/netproxy"
	"github.com/cordon-sandbox/cordon/plan"
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
}

// SetupError is a failure before the command ran (exit status 125).
type SetupError struct {
	Err error
	// UserNS reports that bwrap could not create a user namespace: with
	// --backend auto the caller may fall back to the Landlock-only backend.
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

// gracePeriod is how long a timed-out command has between SIGTERM and the
// SIGKILL of the whole sandbox.
const gracePeriod = 2 * time.Second

// readyTimeout bounds how long bwrap may take to set up the sandbox (a
// variable for the supervision tests).
var readyTimeout = 30 * time.Second

// signalReadyWait is how long a signal that arrives before the helper's
// readiness report waits for it before the sandbox is killed instead.
const signalReadyWait = 500 * time.Millisecond

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

// stderrFile returns a descriptor for w: w itself if it is a file, /dev/null
// for nil, else the write end of a pipe copied into w. closeParent closes
// the parent's copy after the child started; done is closed when the copy
// has finished.
func stderrFile(w io.Writer) (f *os.File, closeParent func(), done chan struct{}, err error) {
	done = make(chan struct{})
	if file, ok := w.(*os.File); ok && file != nil {
		close(done)
		return file, func() {}, done, nil
	}
	if w == nil {
		f, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("opening %s: %w", os.DevNull, err)
		}
		close(done)
		return f, func() { f.Close() }, done, nil
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating stderr pipe: %w", err)
	}
	go func() {
		defer close(done)
		_, _ = io.Copy(w, r)
		r.Close()
	}()
	return pw, func() { pw.Close() }, done, nil
}

// setupFailure turns bwrap's stderr into one line.
func setupFailure(bwrapErr string, waitErr error) error {
	msg := strings.TrimSpace(bwrapErr)
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(msg[i+1:])
	}
	if msg == "" {
		if waitErr != nil {
			msg = waitErr.Error()
		} else {
			msg = "bwrap exited before the sandbox was ready"
		}
	}
	hint := ""
	if userNSFailure(msg) || strings.Contains(msg, "Operation not permitted") {
		hint = "; user namespaces look unavailable here: see cordon status"
	}
	return fmt.Errorf("sandbox setup failed: %s%s", msg, hint)
}

// userNSFailure recognises bwrap's messages for a user namespace it could
// not create (disabled, limited to zero, or forbidden by AppArmor).
func userNSFailure(bwrapErr string) bool {
	for _, m := range []string{"No permissions to create new namespace", "Creating new namespace failed", "setting up uid map", "creating new namespace"} {
		if strings.Contains(bwrapErr, m) {
			return true
		}
	}
	return false
}

// lockedBuffer is a bytes.Buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
