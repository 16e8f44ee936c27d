//go:build linux

package launch

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
)

// standInArg is the first argument under which the launch test binary
// runs as a stand-in for the helper (see standInHelper).
const standInArg = "cordon-launch-test-helper"

func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == fdTableArg {
		os.Exit(fdTableChild())
	}
	if len(os.Args) == 3 && os.Args[1] == standInArg {
		os.Exit(standInHelper(os.Args[2]))
	}
	os.Exit(m.Run())
}

// standInNote is what the stand-in reports it could not enforce.
const standInNote = "stand-in: nothing enforced"

// standInHelper plays the helper's side of the status protocol on its
// descriptors (helperspec.FdSpec, FdStatus, FdStderr), without bwrap or any
// namespace, as the scenario says. It says "started", "go" (released by
// the host) and "ready" on its stdout, so a test can act at those points.
// Every wait is bounded.
func standInHelper(scenario string) int {
	spec, err := helperspec.Decode(os.NewFile(helperspec.FdSpec, "spec"))
	if err != nil {
		return 120
	}
	say := func(s string) { _, _ = os.Stdout.WriteString(s + "\n") }
	say("started")
	send := func(msg []byte) {
		cred := unix.UnixCredentials(&unix.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())})
		_ = unix.Sendmsg(helperspec.FdStatus, msg, cred, nil, 0)
	}
	ready := func() {
		send(helperspec.ReadyMessage([]string{standInNote}))
		if spec.WaitGo {
			var b [1]byte
			if n, err := unix.Read(helperspec.FdStatus, b[:]); err != nil || n != 1 || b[0] != helperspec.MsgGo {
				send(helperspec.ExecFailedMessage(125, "stand-in: not released"))
				os.Exit(125)
			}
			say("go")
		}
		say("ready")
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGTERM)
	switch scenario {
	case "exit3":
		ready()
		return 3
	case "execfail":
		send(helperspec.ExecFailedMessage(127, "nosuch: command not found inside the sandbox"))
		return 127
	case "ready-execfail":
		ready()
		send(helperspec.ExecFailedMessage(126, "nosuch: permission denied"))
		return 126
	case "malformed":
		send([]byte("Exx oops"))
		return 0
	case "die":
		_, _ = os.Stderr.WriteString("bwrap: Creating new namespace failed: Operation not permitted\n")
		return 1
	case "hang":
		time.Sleep(20 * time.Second)
		return 99
	case "wait":
		// A process of the command's that holds its stdout: the run ends
		// only when it is gone too.
		sleeper := exec.Command("/bin/sleep", "30")
		sleeper.Stdout = os.Stdout
		if sleeper.Start() != nil {
			return 98
		}
		ready()
		select {
		case s := <-sigs:
			if s == syscall.SIGUSR1 {
				return 42
			}
			return 43
		case <-time.After(20 * time.Second):
			return 99
		}
	case "ignoreterm":
		signal.Ignore(syscall.SIGTERM)
		ready()
		time.Sleep(20 * time.Second)
		return 99
	}
	return 97
}

// lines is the stand-in's stdout, with a channel closed for each line
// when it is first said.
type lines struct {
	mu   sync.Mutex
	seen map[string]chan struct{}
	buf  strings.Builder
	w    *io.PipeWriter
}

func newLines() *lines {
	l := &lines{seen: map[string]chan struct{}{}}
	r, w := io.Pipe()
	l.w = w
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.buf.WriteString(sc.Text() + "\n")
			close(l.wait(sc.Text()))
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *lines) Write(p []byte) (int, error) { return l.w.Write(p) }

// wait returns the channel of line s; l.mu is held.
func (l *lines) wait(s string) chan struct{} {
	c, ok := l.seen[s]
	if !ok {
		c = make(chan struct{})
		l.seen[s] = c
	}
	return c
}

// when returns a channel closed once line s was said.
func (l *lines) when(s string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.wait(s)
	select {
	case <-c:
		return c
	default:
	}
	return c
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// readyTimeoutTest is the timeout of TestSupervise's runs that must reach
// their command first.
const readyTimeoutTest = 5 * time.Second

// TestSupervise runs Run's start, supervise and finish steps with a
// stand-in for the helper (this test binary), so that each way a run
// ends is tested without namespaces: the helper's status messages, a
// helper dying or hanging before it is ready, forwarded signals, the
// timeout and its grace period, the setup timeout and a cancelled
// context.
func TestSupervise(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		exit, signal int
		timedOut     bool
		execErr      *ExecError
		setupErr     string // a part of the *SetupError's message
		userNS       bool
		degraded     bool // the stand-in's note was passed on
		stdout       string
		minTime      time.Duration
		maxTime      time.Duration
	}
	for _, tc := range []struct {
		name     string
		scenario string
		plan     func(*plan.Plan)
		// at is the stand-in's line after which act runs.
		at   string
		act  func(cancel context.CancelFunc)
		want want
	}{
		{name: "ready, then exit 3 (released after the snapshot, as every one-shot run)", scenario: "exit3",
			want: want{exit: 3, degraded: true, stdout: "started\ngo\nready\n"}},
		{name: "exec failed", scenario: "execfail",
			want: want{execErr: &ExecError{Code: 127, Msg: "nosuch: command not found inside the sandbox"}}},
		{name: "ready, then exec failed", scenario: "ready-execfail",
			want: want{execErr: &ExecError{Code: 126, Msg: "nosuch: permission denied"}, degraded: true}},
		{name: "malformed status message", scenario: "malformed",
			want: want{execErr: &ExecError{Code: result.ExitSetup}}},
		{name: "helper dies before ready", scenario: "die",
			want: want{setupErr: "sandbox setup failed: bwrap: Creating new namespace failed: Operation not permitted; user namespaces look unavailable here", userNS: true}},
		{name: "pid namespace with a CPU limit: released after the pidfd", scenario: "exit3",
			plan: func(pl *plan.Plan) {
				pl.HelperIsChild, pl.PidNamespace = false, true
				pl.Spec.Rlimits = []helperspec.Rlimit{{Name: "RLIMIT_CPU", Resource: unix.RLIMIT_CPU, Value: 100}}
			},
			want: want{exit: 3, degraded: true, stdout: "started\ngo\nready\n"}},
		{name: "signal forwarded", scenario: "wait", at: "ready",
			act:  func(context.CancelFunc) { _ = syscall.Kill(os.Getpid(), syscall.SIGUSR1) },
			want: want{exit: 42, degraded: true, maxTime: 10 * time.Second}},
		{name: "signal before ready kills the sandbox", scenario: "hang", at: "started",
			act:  func(context.CancelFunc) { _ = syscall.Kill(os.Getpid(), syscall.SIGUSR1) },
			want: want{setupErr: "sandbox setup failed: signal: killed", minTime: signalReadyWait, maxTime: 10 * time.Second}},
		// The timeout counts from the start, set-up included: long enough
		// for the stand-in to be ready on a loaded machine (a timeout
		// that fires before is "timeout before ready").
		{name: "timeout: SIGTERM ends the command", scenario: "wait",
			plan: func(pl *plan.Plan) { pl.Timeout = readyTimeoutTest },
			want: want{exit: result.ExitTimeout, timedOut: true, degraded: true, maxTime: readyTimeoutTest + gracePeriod*3/4}},
		{name: "timeout: SIGTERM ignored, killed after the grace period", scenario: "ignoreterm",
			plan: func(pl *plan.Plan) { pl.Timeout = readyTimeoutTest },
			want: want{exit: result.ExitTimeout, signal: int(syscall.SIGKILL), timedOut: true, degraded: true, minTime: readyTimeoutTest + gracePeriod, maxTime: readyTimeoutTest + 3*gracePeriod}},
		{name: "timeout before ready: the user's timeout, not a set-up failure", scenario: "hang",
			plan: func(pl *plan.Plan) { pl.Timeout = 300 * time.Millisecond },
			want: want{exit: result.ExitTimeout, timedOut: true, maxTime: 10 * time.Second}},
		{name: "setup timeout", scenario: "hang", plan: func(*plan.Plan) { readyTimeout = 300 * time.Millisecond },
			want: want{setupErr: "sandbox setup failed: signal: killed", maxTime: 10 * time.Second}},
		{name: "cancelled context kills the whole process group", scenario: "wait", at: "ready",
			act:  func(cancel context.CancelFunc) { cancel() },
			want: want{exit: 128 + int(syscall.SIGKILL), signal: int(syscall.SIGKILL), degraded: true, maxTime: 10 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(d time.Duration) { readyTimeout = d }(readyTimeout)
			// The test's own catch of SIGUSR1: without the run's, the
			// signal must not end the test binary.
			mine := make(chan os.Signal, 4)
			signal.Notify(mine, syscall.SIGUSR1)
			defer signal.Stop(mine)
			pl := &plan.Plan{Backend: backend.Landlock, HelperIsChild: true,
				Argv: []string{self, standInArg, tc.scenario}, Command: []string{"stand-in"}, Dir: "/"}
			if tc.plan != nil {
				tc.plan(pl)
			}
			out := newLines()
			var stderr lockedBuffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.act != nil {
				go func() {
					select {
					case <-out.when(tc.at):
						tc.act(cancel)
					case <-time.After(10 * time.Second):
					}
				}()
			}
			begin := time.Now()
			res, err := Run(ctx, pl, Stdio{Stdout: out, Stderr: &stderr, ForwardSignals: true})
			took := time.Since(begin)
			w := tc.want
			var ee *ExecError
			var se *SetupError
			switch {
			case w.execErr != nil:
				if !errors.As(err, &ee) || ee.Code != w.execErr.Code || w.execErr.Msg != "" && ee.Msg != w.execErr.Msg {
					t.Fatalf("Run: %+v, %v; want the exec error %+v", res, err, w.execErr)
				}
			case w.setupErr != "":
				if !errors.As(err, &se) || !strings.Contains(se.Error(), w.setupErr) || se.UserNS != w.userNS {
					t.Fatalf("Run: %+v, %v; want a setup error with %q (user namespace: %v)", res, err, w.setupErr, w.userNS)
				}
			case err != nil:
				t.Fatalf("Run: %v", err)
			default:
				if res.ExitCode != w.exit || res.Signal != w.signal || res.TimedOut != w.timedOut {
					t.Errorf("exit %d, signal %d, timed out %v; want %d, %d, %v", res.ExitCode, res.Signal, res.TimedOut, w.exit, w.signal, w.timedOut)
				}
				if got := slices.Contains(res.Degraded, standInNote); got != w.degraded {
					t.Errorf("degraded %q: the stand-in's note there %v, want %v", res.Degraded, got, w.degraded)
				}
			}
			if got := strings.Contains(stderr.String(), "cordon: degraded: "+standInNote); got != w.degraded {
				t.Errorf("stderr %q: the stand-in's note said %v, want %v", stderr.String(), got, w.degraded)
			}
			if w.stdout != "" && out.String() != w.stdout {
				t.Errorf("the stand-in said %q, want %q", out.String(), w.stdout)
			}
			if took < w.minTime || w.maxTime > 0 && took > w.maxTime {
				t.Errorf("the run took %v, want between %v and %v", took, w.minTime, w.maxTime)
			}
		})
	}
}

// TestReadyAfterKill: the helper's readiness report can arrive after
// cordon began to kill the sandbox (the timeout fired first, with the
// report still on its way). Releasing the dying helper then fails, and
// that failure must not become the run's end: CI's TestRunCommand
// (mcpserver) ended as "releasing the helper: write status: broken pipe"
// instead of timed out.
func TestReadyAfterKill(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	host := os.NewFile(uintptr(fds[0]), "status")
	defer host.Close()
	unix.Close(fds[1])                   // the helper is gone
	outer := exec.Command("sleep", "10") // stands for bwrap
	if err := outer.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = outer.Process.Kill(); _ = outer.Wait() }()
	var stderr strings.Builder
	r := &sandboxRun{pl: &plan.Plan{}, cmd: outer, stdio: Stdio{Stderr: &stderr}, res: &result.Result{},
		statusHost: host, waitGo: true, cordonKilled: true, timedOut: true, pidfd: -1}
	r.onReady(status{pid: 4242, ready: true, degraded: []string{"a note"}})
	if r.groupErr != nil {
		t.Errorf("groupErr %v; want none: the sandbox was being killed already", r.groupErr)
	}
	if r.ready {
		t.Error("ready; want not: the helper waits for the release, so the command never ran")
	}
	if !strings.Contains(stderr.String(), "cordon: degraded: a note") {
		t.Errorf("stderr %q; want the helper's degraded note passed on", stderr.String())
	}
}
