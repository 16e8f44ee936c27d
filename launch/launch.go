// Package launch runs a plan.Plan and returns its result.Result: it starts
// bubblewrap with the helper's descriptors, turns setup failures into one
// clear error, forwards signals to the command, enforces the timeout by
// killing the whole sandbox, passes a terminal through a private pty, and
// cleans up the mount points bwrap created for missing protected paths.
package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/helper"
	"github.com/cordon-sandbox/cordon/plan"
	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
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

// readyTimeout bounds how long bwrap may take to set up the sandbox.
const readyTimeout = 30 * time.Second

// signalReadyWait is how long a signal that arrives before the helper's
// readiness report waits for it before the sandbox is killed instead.
const signalReadyWait = 500 * time.Millisecond

// forwarded are the signals passed on to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// Run executes pl and waits for it. A returned error means the command did
// not run (a *SetupError or *ExecError); otherwise the Result carries its
// exit status. Cancelling ctx kills the sandbox.
func Run(ctx context.Context, pl *plan.Plan, stdio Stdio) (*result.Result, error) {
	switch pl.Backend {
	case plan.BackendBwrap, plan.BackendLandlock:
		return runSandbox(ctx, pl, stdio)
	case plan.BackendNone:
		return runNone(ctx, pl, stdio)
	}
	return nil, &SetupError{Err: fmt.Errorf("launch: unknown backend %q", pl.Backend)}
}

// runSandbox runs a bwrap plan, or a Landlock-only plan, in which the
// helper runs directly on the host: no mount points to lock, no pid
// namespace (the command's process group, and the cgroup when there is
// one, are what a timeout kills), and a private directory for /tmp.
func runSandbox(ctx context.Context, pl *plan.Plan, stdio Stdio) (*result.Result, error) {
	res := &result.Result{Backend: pl.Backend, Degraded: pl.Degraded}
	bwrap := pl.Backend == plan.BackendBwrap
	if bwrap {
		lock, err := lockWorkspace(pl)
		if err != nil {
			return nil, &SetupError{Err: err}
		}
		defer lock.release()
	}
	if pl.PrivateTmp != "" {
		if err := os.MkdirAll(pl.PrivateTmp, 0o700); err != nil {
			return nil, &SetupError{Err: fmt.Errorf("creating a private temporary directory: %w", err)}
		}
		defer os.RemoveAll(pl.PrivateTmp)
	}

	group, notes, err := newGroup(pl)
	if err != nil {
		return nil, &SetupError{Err: err}
	}
	if group != nil {
		defer group.Close()
		defer sweepGroups()()
	}
	for _, n := range notes {
		res.Degraded = append(res.Degraded, n)
		if stdio.Stderr != nil {
			fmt.Fprintln(stdio.Stderr, "cordon: degraded: "+n)
		}
	}
	spec := pl.Spec
	spec.WaitGo = group != nil

	exe, err := os.Open(plan.HelperSelf)
	if err != nil {
		return nil, &SetupError{Err: fmt.Errorf("opening cordon's own binary: %w", err)}
	}
	defer exe.Close()
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, &SetupError{Err: fmt.Errorf("creating spec pipe: %w", err)}
	}
	defer specR.Close()
	specJSON, err := json.Marshal(spec)
	if err != nil {
		specW.Close()
		return nil, &SetupError{Err: fmt.Errorf("encoding helper spec: %w", err)}
	}
	go func() {
		_, _ = specW.Write(specJSON)
		specW.Close()
	}()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, &SetupError{Err: fmt.Errorf("creating status socket: %w", err)}
	}
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, &SetupError{Err: fmt.Errorf("status socket: %w", err)}
	}
	statusHost := os.NewFile(uintptr(fds[0]), "status")
	statusChild := os.NewFile(uintptr(fds[1]), "status-child")
	defer statusHost.Close()
	bwErrR, bwErrW, err := os.Pipe()
	if err != nil {
		statusChild.Close()
		return nil, &SetupError{Err: fmt.Errorf("creating stderr pipe: %w", err)}
	}

	// Warnings about what the run planted are printed last, after the
	// host terminal is restored (a raw terminal would garble them).
	warnTo := stdio.Stderr
	var warnings []string
	defer func() {
		for _, w := range warnings {
			if warnTo != nil {
				fmt.Fprintln(warnTo, w)
			}
		}
	}()
	term, err := newTerminal(pl, &stdio)
	if err != nil {
		statusChild.Close()
		bwErrR.Close()
		bwErrW.Close()
		return nil, &SetupError{Err: err}
	}
	defer term.close()

	// The command's stderr travels to the helper as a descriptor: a
	// non-file writer gets a pipe and a copier.
	realStderr, closeStderr, stderrDone, err := stderrFile(stdio.Stderr)
	if err != nil {
		statusChild.Close()
		bwErrR.Close()
		bwErrW.Close()
		return nil, &SetupError{Err: err}
	}
	cmd := &exec.Cmd{
		Path:       pl.Argv[0],
		Args:       pl.Argv,
		Env:        pl.Env,
		Dir:        "/", // bwrap changes directory itself (--chdir)
		Stderr:     bwErrW,
		ExtraFiles: []*os.File{exe, specR, statusChild, realStderr},
		SysProcAttr: &syscall.SysProcAttr{
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if !bwrap {
		cmd.Dir = pl.Dir
	}
	if stdio.Stdin != nil {
		cmd.Stdin = stdio.Stdin
	}
	if stdio.Stdout != nil {
		cmd.Stdout = stdio.Stdout
	}
	if term != nil {
		cmd.SysProcAttr.Setsid = true
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0
	} else {
		cmd.SysProcAttr.Setpgid = true
	}
	sigs := make(chan os.Signal, 8)
	if stdio.ForwardSignals {
		signal.Notify(sigs, forwarded...)
		defer signal.Stop(sigs)
	}

	// What exists now is the user's; what the run plants is checked for
	// after it (see guard).
	guarded := startGuard(pl)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		closeStderr()
		<-stderrDone
		statusChild.Close()
		bwErrR.Close()
		bwErrW.Close()
		return nil, &SetupError{Err: fmt.Errorf("starting %s: %w", pl.Argv[0], err)}
	}
	statusChild.Close()
	bwErrW.Close()
	closeStderr()
	term.start(cmd.Process.Pid)
	// Move the outer process (bwrap, or the helper itself without bwrap)
	// into the cgroup now, while the sandbox is being set up: on cgroup
	// v1 the first move waits for an RCU grace period (about 10 ms), which
	// would otherwise add to every run once the helper is ready.
	// Processes it forks after the move are born inside; enterGroup
	// checks, and moves what is not.
	var outerAdded chan error
	if group != nil {
		outerAdded = make(chan error, 1)
		outer := cmd.Process.Pid
		go func() { outerAdded <- group.Add(outer) }()
		defer func() {
			if outerAdded != nil {
				<-outerAdded // never leave a move racing with Close
			}
		}()
	}

	// bwrap's own stderr: collected until the helper is ready, so a setup
	// failure becomes one clear line; passed through afterwards.
	var bwErr lockedBuffer
	bwErrDone := make(chan struct{})
	go func() {
		defer close(bwErrDone)
		_, _ = io.Copy(&bwErr, bwErrR)
		bwErrR.Close()
	}()

	type status struct {
		pid      int
		ready    bool
		degraded []string // what the helper could not enforce
		execErr  *ExecError
	}
	statusCh := make(chan status, 1)
	stc := statusCh
	go func() {
		var st status
		buf := make([]byte, 4096)
		oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
		for {
			n, oobn, _, _, err := unix.Recvmsg(int(statusHost.Fd()), buf, oob, 0)
			if err != nil || n == 0 {
				break
			}
			switch buf[0] {
			case helper.MsgReady:
				st.ready = true
				if n > 1 {
					st.degraded = strings.Split(string(buf[1:n]), "\n")
				}
				if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
					for _, m := range msgs {
						if c, err := unix.ParseUnixCredentials(&m); err == nil {
							st.pid = int(c.Pid)
						}
					}
				}
				statusCh <- st
				st = status{pid: st.pid, ready: true}
			case helper.MsgExecFailed:
				code, msg, _ := strings.Cut(string(buf[1:n]), " ")
				c, _ := strconv.Atoi(code)
				st.execErr = &ExecError{Code: c, Msg: msg}
			}
		}
		if !st.ready || st.execErr != nil {
			statusCh <- st
		}
		close(statusCh)
	}()

	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()

	var (
		cmdPid   int
		timedOut bool
		execErr  *ExecError
		timeout  <-chan time.Time
		grace    <-chan time.Time
		ready    bool
	)
	if d, err := time.ParseDuration(pl.Timeout); err == nil && pl.Timeout != "" {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	setupTimer := time.NewTimer(readyTimeout)
	defer setupTimer.Stop()
	var groupErr error
	killAll := func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		if !bwrap {
			// No pid namespace: the command's process group.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		if group != nil {
			_ = group.Kill()
		}
	}
	// In a child subreaper (cordon's own processes are), bwrap's init is
	// reaped here after the sandbox ends, for the command's CPU time.
	reaper := isSubreaper()
	var initPid int
	onStatus := func(st status, ok bool) {
		if !ok {
			stc = nil
			return
		}
		if st.ready && !ready {
			ready = true
			cmdPid = st.pid
			setupTimer.Stop()
			if bwrap && reaper && !stdio.NoUsage {
				// bwrap's init inside the pid namespace: see reapInit.
				if pp, err := parentPid(cmdPid); err == nil && pp != cmd.Process.Pid {
					initPid = pp
				}
			}
			if group != nil {
				// The helper waits for this before exec.
				outer := cmd.Process.Pid
				if !bwrap {
					outer = cmdPid // the helper itself; its parent is cordon
				}
				outerErr := <-outerAdded
				outerAdded = nil
				if err := enterGroup(group, outer, cmdPid, outerErr == nil); err != nil {
					groupErr = err
					killAll()
				} else if _, err := statusHost.Write([]byte{helper.MsgGo}); err != nil {
					groupErr = fmt.Errorf("releasing the helper: %w", err)
					killAll()
				}
			}
			for _, d := range st.degraded {
				res.Degraded = append(res.Degraded, d)
				if stdio.Stderr != nil {
					fmt.Fprintln(stdio.Stderr, "cordon: degraded: "+d)
				}
			}
		}
		if st.execErr != nil {
			execErr = st.execErr
		}
	}
	var waitErr error
loop:
	for {
		select {
		case st, ok := <-stc:
			onStatus(st, ok)
		case <-setupTimer.C:
			if !ready {
				killAll()
			}
		case s := <-sigs:
			if cmdPid == 0 && stc != nil {
				// The helper may have reported readiness an instant
				// before the signal came (select picks at random, and
				// the status reader may not have run yet): wait for it
				// briefly rather than kill a command that is running.
				select {
				case st, ok := <-stc:
					onStatus(st, ok)
				case <-time.After(signalReadyWait):
				}
			}
			if cmdPid > 0 {
				signalTree(cmdPid, s.(syscall.Signal))
			} else {
				killAll()
			}
		case <-timeout:
			timedOut = true
			timeout = nil
			if cmdPid > 0 {
				signalTree(cmdPid, syscall.SIGTERM)
				grace = time.After(gracePeriod)
			} else {
				killAll()
			}
		case <-grace:
			killAll()
		case <-ctx.Done():
			killAll()
		case waitErr = <-waitc:
			break loop
		}
	}
	// Drain the status channel: the helper may have reported just before
	// the sandbox ended.
	for st := range statusCh {
		if st.ready {
			ready = true
		}
		if st.execErr != nil {
			execErr = st.execErr
		}
	}
	<-bwErrDone
	<-stderrDone
	term.wait()
	if !bwrap && reaper && stdio.OwnsChildren {
		sweepOrphans()
	}
	if ready {
		// The command ran: disarm what it planted, before the lock is
		// released (and placeholders are removed).
		warnings = guarded.finish(res)
	}
	res.Usage = usage(cmd.ProcessState, time.Since(start))
	switch {
	case initPid > 0:
		addUsage(&res.Usage, reapInit(initPid))
	case bwrap && !reaper && ready && !stdio.NoUsage:
		res.Usage.Incomplete = append(res.Usage.Incomplete, incompleteCPU)
	}
	groupUsage(group, &res.Usage)
	if groupErr != nil {
		return nil, &SetupError{Err: groupErr}
	}
	if !ready && execErr == nil {
		msg := bwErr.String()
		return nil, &SetupError{Err: setupFailure(msg, waitErr), UserNS: userNSFailure(msg)}
	}
	// Anything bwrap said after the helper was ready belongs to the user.
	if msg := bwErr.String(); msg != "" && stdio.Stderr != nil {
		_, _ = io.WriteString(stdio.Stderr, msg)
	}
	if execErr != nil {
		return nil, execErr
	}
	fillExit(res, cmd.ProcessState)
	if timedOut {
		res.TimedOut = true
		res.ExitCode = result.ExitTimeout
	}
	return res, nil
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

// signalTree delivers sig to the command's process group, or to the
// command alone if it has none of its own.
func signalTree(pid int, sig syscall.Signal) {
	if err := syscall.Kill(-pid, sig); err != nil {
		_ = syscall.Kill(pid, sig)
	}
}

func fillExit(res *result.Result, ps *os.ProcessState) {
	if ps == nil {
		res.ExitCode = result.ExitSetup
		return
	}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		res.Signal = int(ws.Signal())
		res.ExitCode = 128 + res.Signal
	default:
		res.ExitCode = ws.ExitStatus()
		if res.ExitCode > 128 && res.ExitCode < 128+65 {
			res.Signal = res.ExitCode - 128
		}
	}
}

func usage(ps *os.ProcessState, wall time.Duration) result.Usage {
	u := result.Usage{Wall: wall}
	if ps == nil {
		return u
	}
	u.User = ps.UserTime()
	u.System = ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		u.MaxRSSKB = ru.Maxrss
	}
	return u
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
