package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
)

// errSessionDied is the error of a command whose session's sandbox ended
// under it (killed from inside, say): the next command gets a new one.
var errSessionDied = errors.New("the session's sandbox ended while the command ran (a process inside may have killed it); the next command starts a new one")

// run runs one command of pl in the sandbox: the command's own status
// socket and spec (its environment and resource limits; the server
// applied the Landlock rules and the seccomp filter to itself, and the
// command inherits them), its streams passed as descriptors; the check
// for what it planted before and after, as a run of its own. The server
// kills everything the command left behind before it answers. The
// timeout and ctx signal the command's process group, then kill it; the
// sandbox itself is killed only when the command never started.
func (sb *sessionSandbox) run(ctx context.Context, pl *plan.Plan, stdio Stdio, cache *globscan.Cache) (*result.Result, error) {
	res := &result.Result{Backend: pl.Backend, Degraded: append(append([]string(nil), pl.Degraded...), sb.notes...)}
	for _, n := range sb.notes {
		stdio.sayDegraded(n)
	}
	if err := Prepare(pl); err != nil {
		return nil, &SetupError{Err: err}
	}
	c := &sessionCmd{sb: sb, pl: pl, stdio: stdio, res: res, release: func() {}, cache: cache}
	c.ahead = sb.takeAhead(pl)
	defer func() { c.release() }()
	if err := c.start(); err != nil {
		return nil, err
	}
	return c.wait(ctx)
}

// sessionCmd is one command of a session, as sandboxRun is one run.
type sessionCmd struct {
	sb    *sessionSandbox
	pl    *plan.Plan
	stdio Stdio
	res   *result.Result

	release    func()          // what the command held, once it ended
	onStarted  []func()        // the server's ends, closed once sent
	copied     []chan struct{} // the output copiers
	statusHost *os.File        // the host's end of the command's status socket
	group      *limits.Group   // the command's cgroup (groupFor), or nil
	nproc      *nprocWatch     // without a cgroup, the count against RLIMIT_NPROC
	ahead      *aheadGroup     // the cgroup made ahead for this command, or nil
	groupBase  *limits.Usage   // the group's usage before this command, when kept (groupFor)
	groupUsed  *limits.Usage   // the group's usage at the command's end, once read whole
	statusCh   chan status
	guard      *guard
	started    time.Time
	cache      *globscan.Cache // the session's walk cache, for the check
}

// start hands the command over to the server.
func (c *sessionCmd) start() error {
	var held []func()
	c.release = func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i]()
		}
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return &SetupError{Err: fmt.Errorf("creating status socket: %w", err)}
	}
	statusHost, statusChild := os.NewFile(uintptr(fds[0]), "status"), os.NewFile(uintptr(fds[1]), "status-child")
	held = append(held, func() { statusHost.Close() })
	c.onStarted = append(c.onStarted, func() { statusChild.Close() })
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		return &SetupError{Err: fmt.Errorf("status socket: %w", err)}
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return &SetupError{Err: fmt.Errorf("creating spec pipe: %w", err)}
	}
	c.onStarted = append(c.onStarted, func() { specR.Close() })
	c.statusHost = statusHost
	// The command's cgroup, as a run's (newGroup): the helper waits for
	// the move into it before exec (WaitGo).
	var g *limits.Group
	var notes []string
	if a := c.ahead; a != nil {
		g, c.groupBase, notes = a.g, a.base, a.notes
	} else if g, c.groupBase, notes, err = c.sb.groupFor(c.pl); err != nil {
		return &SetupError{Err: err}
	}
	for _, n := range notes {
		c.res.Degraded = append(c.res.Degraded, n)
		c.stdio.sayDegraded(n)
	}
	spec := c.pl.Spec
	if g != nil && c.groupBase != nil {
		c.sb.mu.Lock()
		c.sb.reusedGroups++
		c.sb.mu.Unlock()
	}
	if g != nil {
		c.group = g
		// Given back once the command ended: kept for the next command
		// when its usage was read (the server emptied the sandbox), or
		// removed in the background, as a run's (closeGroup).
		back, l := c.sb.lendGroup(), c.pl.Limits
		held = append(held, func() { c.sb.giveBack(g, l, c.groupUsed, back) })
		spec.WaitGo = true
		spec.Rlimits = withoutGroupLimits(spec.Rlimits, g)
	}
	// The server applied them to itself; the command inherits them.
	spec.Landlock, spec.Seccomp = nil, nil
	spec.Version, spec.Binary, spec.Status = helperspec.Version, c.pl.Helper, true
	spec.Env = c.pl.Env
	if n := c.pl.Net; n != nil {
		spec.Env = n.MergeEnv(spec.Env) // as startNet does
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		specW.Close()
		return &SetupError{Err: fmt.Errorf("encoding the helper's spec: %w", err)}
	}
	go func() {
		defer specW.Close()
		_, _ = specW.Write(specJSON)
	}()
	stdin, err := c.input(c.stdio.Stdin)
	if err != nil {
		return &SetupError{Err: err}
	}
	stdout, err := c.output(c.stdio.Stdout)
	if err != nil {
		return &SetupError{Err: err}
	}
	stderr := stdout
	if !sameWriter(c.stdio.Stdout, c.stdio.Stderr) {
		if stderr, err = c.output(c.stdio.Stderr); err != nil {
			return &SetupError{Err: err}
		}
	}
	// With a cgroup, the next command likely has one too: the server
	// starts its helper before it answers, for the host to move it.
	msg, err := helperspec.CommandMessage(helperspec.Command{Argv: sessionCommand(c.pl), Dir: c.pl.Dir, PrestartFirst: g != nil})
	if err != nil {
		return &SetupError{Err: err}
	}
	// What exists now is the user's; what the command plants is checked
	// for after it. The journal names the roots, for the next run to
	// check if this process is killed before it does.
	c.guard = startGuard(c.pl, c.cache, &c.sb.snap)
	if needsJournal(c.pl) && c.sb.journal.record(c.pl.StateDir, journal{Start: time.Now().UnixNano(), Roots: c.pl.Guard.Roots, Git: c.pl.Guard.Git}) {
		held = append(held, c.sb.journal.idle)
	}
	c.statusCh = make(chan status, 1)
	if nr := c.sb.r.net; nr != nil && nr.dns != nil {
		nr.dns.Reset()
	}
	c.sb.cur.Store(&c.stdio)
	held = append(held, func() { c.sb.cur.Store(nil) })
	c.started = time.Now()
	rights := unix.UnixRights(int(stdin.Fd()), int(stdout.Fd()), int(stderr.Fd()), int(statusChild.Fd()), int(specR.Fd()))
	err = unix.Sendmsg(c.sb.ctrl, msg, rights, nil, 0)
	c.closeStarted()
	if err != nil {
		return &SetupError{Err: fmt.Errorf("handing the command to the session's sandbox: %w", err)}
	}
	go readStatus(statusHost, c.statusCh, func(_ helperspec.Listener, fds []int) { closeFds(fds) }, func(fd int, _ []string) { unix.Close(fd) })
	return nil
}

// closeStarted closes the descriptors that went to the server.
func (c *sessionCmd) closeStarted() {
	for _, f := range c.onStarted {
		f()
	}
	c.onStarted = nil
}

// input is the descriptor of the command's stdin: r itself if it is a
// file, /dev/null for nil, else a pipe fed from r.
func (c *sessionCmd) input(r io.Reader) (*os.File, error) {
	if f, ok := r.(*os.File); ok && f != nil {
		return f, nil
	}
	if r == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", os.DevNull, err)
		}
		c.onStarted = append(c.onStarted, func() { f.Close() })
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stdin pipe: %w", err)
	}
	c.onStarted = append(c.onStarted, func() { pr.Close() })
	go func() {
		_, _ = io.Copy(pw, r)
		pw.Close()
	}()
	return pr, nil
}

// output is the descriptor of a command's output stream (stderrFile).
func (c *sessionCmd) output(w io.Writer) (*os.File, error) {
	f, closeParent, done, err := stderrFile(w)
	if err != nil {
		return nil, err
	}
	c.onStarted = append(c.onStarted, closeParent)
	c.copied = append(c.copied, done)
	return f, nil
}

// sameWriter reports whether a and b are the same writer, as os/exec
// decides it for a Cmd's Stdout and Stderr: then one pipe and one copier
// serve both, so that one goroutine at a time writes to it.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false // an uncomparable type
		}
	}()
	return a != nil && a == b
}

// wait follows the command until the server answers: its status socket
// (its pid on the host, an exec failure), the timeout and ctx. It then
// checks what the command planted and turns the end into the Result.
func (c *sessionCmd) wait(ctx context.Context) (*result.Result, error) {
	var timeout, grace <-chan time.Time
	if d := c.pl.Timeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	var (
		pid          int
		execErr      *ExecError
		timedOut     bool
		cordonKilled bool
		exited       *helperspec.Exited
		groupErr     error
	)
	stc := (<-chan status)(c.statusCh)
	// kill signals the command's tree, or, before the command has a pid,
	// kills the whole sandbox (the next command starts a new one).
	kill := func(sig syscall.Signal) {
		if pid > 0 {
			signalTree(pid, sig)
		} else {
			c.sb.r.killAll()
		}
	}
	for exited == nil {
		select {
		case st, ok := <-stc:
			if !ok {
				stc = nil
				continue
			}
			if st.ready && pid == 0 {
				pid = st.pid
				if err := c.onReady(pid); err != nil {
					groupErr = err
					cordonKilled = true
				}
				if cordonKilled {
					signalTree(pid, syscall.SIGKILL)
				}
			}
			if st.execErr != nil {
				execErr = st.execErr
			}
		case <-timeout:
			timedOut, timeout = true, nil
			kill(syscall.SIGTERM)
			grace = time.After(gracePeriod)
		case <-grace:
			kill(syscall.SIGKILL)
		case <-ctx.Done():
			cordonKilled = true
			kill(syscall.SIGKILL)
			ctx = context.Background()
		case m, ok := <-c.sb.msgs:
			closeFds(m.fds)
			msg := m.data
			if !ok {
				if timedOut && pid == 0 {
					return c.finishKilled()
				}
				// Whatever ended the sandbox (a command may kill the
				// server), what the command planted is checked.
				c.check()
				return nil, &SetupError{Err: errSessionDied}
			}
			e, err := helperspec.ParseExited(msg)
			if err != nil {
				c.sb.r.killAll()
				c.check()
				return nil, &SetupError{Err: fmt.Errorf("the session's server: %w", err)}
			}
			exited = &e
		}
	}
	if stc != nil {
		for st := range stc {
			if st.execErr != nil {
				execErr = st.execErr
			}
		}
	}
	for _, d := range c.copied {
		<-d
	}
	nprocReached := c.nproc.end()
	if groupErr != nil {
		return nil, &SetupError{Err: groupErr}
	}
	if execErr != nil {
		return nil, execErr
	}
	if exited.Err != "" {
		return nil, &SetupError{Err: fmt.Errorf("the session's sandbox could not start the command: %s", exited.Err)}
	}
	res := c.res
	ws := unix.WaitStatus(exited.Status)
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
	res.Usage = result.Usage{Wall: time.Since(c.started), User: time.Duration(exited.UserNS), System: time.Duration(exited.SystemNS), MaxRSSKB: exited.MaxRSSKB}
	if timedOut {
		res.TimedOut = true
		res.ExitCode = result.ExitTimeout
	}
	if nr := c.sb.r.net; nr != nil {
		res.NetRefused, res.NetRefusedMore = nr.refusals(), nr.refusedMore()
	}
	// The check after the command needs no cgroup: the group's
	// accounting is read meanwhile.
	read := readGroupUsage(c.group)
	c.check()
	var base limits.Usage
	if c.groupBase != nil {
		base = *c.groupBase
	}
	gu := read.foldSince(&res.Usage, base)
	if raw, ok := read.whole(); ok {
		c.groupUsed = &raw
	}
	facts := endFacts{status: ws, exact: true, exitCode: res.ExitCode, cordonKilled: cordonKilled || timedOut,
		oomKills: gu.OOMKills, forkFailures: gu.ForkFailures, nprocReached: nprocReached,
		cpu: res.Usage.User + res.Usage.System, cpuKnown: true}
	if gu.CPUTotal > 0 {
		facts.cpu = max(gu.CPUTotal, gu.CPUUser+gu.CPUSystem)
	}
	res.LimitsReached = limitsReached(limitsOf(c.pl), facts)
	return res, nil
}

// onReady moves the command's helper, which waits, into the command's
// cgroup and releases it (as sandboxRun.onReady does), or, without one,
// counts its tasks against RLIMIT_NPROC (nprocWatch).
func (c *sessionCmd) onReady(pid int) error {
	if c.group == nil {
		if limitsOf(c.pl).processes > 0 && os.Getuid() != 0 {
			c.nproc = startNprocWatch(pid, true)
		}
		return nil
	}
	// The helper started ahead was moved in meanwhile (prepareAhead):
	// checked, not trusted.
	if in, err := c.group.Contains(pid); err != nil || !in {
		if err := c.group.Add(pid); err != nil {
			return fmt.Errorf("moving the command into its cgroup: %w", err)
		}
	}
	if err := limitProcesses(c.group, c.pl); err != nil {
		return err
	}
	if _, err := c.statusHost.Write([]byte{helperspec.MsgGo}); err != nil {
		return fmt.Errorf("releasing the helper: %w", err)
	}
	return nil
}

// finishKilled ends a command whose timeout fired before it started: the
// sandbox was killed (the next command gets a new one), and the run ends
// as timed out, as a run of its own does.
func (c *sessionCmd) finishKilled() (*result.Result, error) {
	for _, d := range c.copied {
		<-d
	}
	c.res.TimedOut = true
	c.res.ExitCode = result.ExitTimeout
	c.check()
	return c.res, nil
}

// check disarms what the command planted (see guard), and says so on its
// stderr.
func (c *sessionCmd) check() {
	for _, w := range c.guard.finish(c.res) {
		if c.stdio.Stderr != nil {
			fmt.Fprintln(c.stdio.Stderr, w)
		}
	}
}
