package launch

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/monitor"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
)

// sandboxRun is one run of a sandbox plan: what start sets up, supervise
// watches and finish reads. Its descriptors follow os/exec's discipline:
// onStarted holds the child's ends (the parent closes them once the child
// has them, or on a failed start), onWaited everything the parent holds
// until the run is over, released in reverse order.
type sandboxRun struct {
	pl    *plan.Plan
	stdio Stdio
	res   *result.Result

	onStarted []func() // the child's ends, closed after start
	onWaited  []func() // closed when the run is over, last first

	held *workspaceLock // taken before the plan was built, or nil
	// placeholders waits until the plan's placeholders are created (see
	// prepareDirs) and says whether they could be; nil: none to wait for.
	placeholders func() error

	group      *limits.Group
	groupc     chan madeGroup // newGroup's answer, made while bwrap starts (see startGroup)
	groupDone  chan struct{}  // closed once the group is removed (see closeGroup)
	specW      *os.File       // the host's end of the spec pipe, until sendSpec
	specGate   chan struct{}  // sendSpec writes the spec once it is closed (see start), if not nil
	spec       helperspec.Spec
	cmd        *exec.Cmd
	term       *terminal
	statusHost *os.File         // the host's end of the helper's status socket
	statusCh   chan status      // the helper's status messages (see readStatus)
	outerAdded chan error       // the move of the outer process into the group
	watch      *monitor.Monitor // the violation monitor (Stdio.Watch), once the helper handed its listener over
	watchErr   error            // why the monitor could not start
	cmdStderr  *os.File         // the write end of bwErr's pipe, bwrap's stderr
	bwErrR     *os.File
	bwErr      lockedBuffer // bwrap's own stderr
	bwErrDone  chan struct{}
	stderrDone chan struct{} // the command's stderr copier, if any
	waitc      chan error
	sigs       chan os.Signal
	sigsOn     chan struct{} // closed once sigs receives the forwarded signals (see startSignals)
	guard      *guard
	journal    string // the run's journal (see startGuard), or ""
	started    time.Time
	net        *netRun // the proxy and forwarded ports, or nil

	// Set by supervise.
	ready    bool
	cmdPid   int // the helper's (then the command's) pid on the host
	initPid  int // bwrap's init, reaped for the command's CPU time
	reaper   bool
	timedOut bool
	execErr  *ExecError
	groupErr error
	// nproc counts the tasks against RLIMIT_NPROC in a run without a
	// cgroup (see nprocWatch), or is nil.
	nproc *nprocWatch
	// pidfd refers to the command in its pid namespace
	// (plan.Plan.PidNamespace), for its own exit status once the
	// namespace's init has reaped it; -1 if none.
	pidfd int
	// waitGo: the helper waits for helperspec.MsgGo before exec (Spec.WaitGo).
	waitGo bool
	// cordonKilled: cordon killed the sandbox (timeout, cancelled
	// context, setup failure), so no limit explains its end.
	cordonKilled bool
	// warnings about what the run planted, printed after the terminal is
	// restored (a raw terminal would garble them).
	warnings []string
	// session: this run is a session's sandbox, whose status socket the
	// Session reads (see sessionSandbox).
	session bool
}

// status is what the helper reported on the status socket.
type status struct {
	pid      int
	ready    bool
	degraded []string // what the helper could not enforce
	execErr  *ExecError
}

// afterWait registers f to run when the run is over, before what was
// registered earlier.
func (r *sandboxRun) afterWait(f func()) { r.onWaited = append(r.onWaited, f) }

// afterStart registers f to run once the child has started, or if it
// could not be started.
func (r *sandboxRun) afterStart(f func()) { r.onStarted = append(r.onStarted, f) }

// closeStarted closes the child's ends of its descriptors.
func (r *sandboxRun) closeStarted() {
	for _, f := range r.onStarted {
		f()
	}
	r.onStarted = nil
}

// closeAfterWait releases everything the run held, last registered first.
func (r *sandboxRun) closeAfterWait() {
	r.closeStarted()
	for i := len(r.onWaited) - 1; i >= 0; i-- {
		r.onWaited[i]()
	}
	r.onWaited = nil
}

// start prepares the host side (workspace lock and placeholders, private
// /tmp, cgroup), the descriptors the helper inherits, the terminal, and
// starts bwrap (or the helper itself on the Landlock-only backend). The
// cgroup is made meanwhile (startGroup): bwrap builds the sandbox while
// it is, and the helper, which reads its spec only once bwrap has, learns
// from the spec whether to wait for it (see joinGroup); a strict run
// takes the cgroup before bwrap starts, to refuse a degraded one first.
// The run's journal and the guard's snapshot are taken while bwrap and
// the helper start, before the helper has its spec (the gate: see
// sendSpec), so before anything of the command runs.
// An error is a *SetupError; everything made so far is released by
// closeAfterWait.
func (r *sandboxRun) start() error {
	r.startGroup()
	r.startSignals()
	if err := r.prepareDirs(); err != nil {
		return &SetupError{Err: err}
	}
	if err := r.startNet(); err != nil {
		return &SetupError{Err: err}
	}
	files, err := r.helperFiles()
	if err != nil {
		return &SetupError{Err: err}
	}
	r.newCommand(files)
	if r.placeholders != nil {
		if err := r.placeholders(); err != nil {
			return &SetupError{Err: err}
		}
	}
	// What exists now is the user's; what the run plants is checked for
	// after it (see guard).
	r.warnings = sweepJournals(r.pl.StateDir, r.pl.PlaceholderPaths())
	if r.pl.PrivateTmp != "" {
		// After sweepJournals: the killed runs' processes are gone.
		sweepPrivateTmps(filepath.Dir(r.pl.PrivateTmp), r.pl.PrivateTmp)
	}
	r.afterWait(r.dropJournal)
	r.started = time.Now()
	if r.pl.Strict || wantsCPUView(r.pl) {
		// A strict run refuses a degraded cgroup before anything starts;
		// bwrap mounts the group's CPU view.
		if err := r.joinGroup(); err != nil {
			return &SetupError{Err: err}
		}
		if v, ok := r.group.CPUView(); ok {
			r.cmd.Args = withCPUView(r.cmd.Args, v)
		}
	}
	if r.sigsOn != nil {
		<-r.sigsOn
	}
	err = r.cmd.Start()
	r.closeStarted()
	if err != nil {
		return &SetupError{Err: fmt.Errorf("starting %s: %w", r.pl.Argv[0], err)}
	}
	r.term.start(r.cmd.Process.Pid)
	if r.groupc != nil {
		if err := r.joinGroup(); err != nil {
			// The helper has no spec yet: nothing of the command ran.
			_ = r.cmd.Process.Kill()
			_ = r.cmd.Wait()
			return &SetupError{Err: err}
		}
	}
	// Nothing of the command may run before the journal is written and
	// the guard's snapshot taken. A one-shot run's helper gets its spec
	// now and makes its mounts meanwhile, but execs nothing before the
	// host releases it (WaitGo): the release comes from the readiness
	// report's handling (onReady), after start has returned. (Sending
	// the spec only after them kept the helper's mounts waiting for a
	// snapshot that, in 200 repositories, took longer than bwrap's
	// start.) A session's server, which the host never releases so,
	// gets its spec only once they are done (the gate).
	var gate chan struct{}
	if r.session {
		gate = make(chan struct{})
		r.specGate = gate
	} else {
		r.waitGo = true
	}
	r.sendSpec()
	r.enterGroupEarly()
	r.startJournal()
	r.guard = startGuard(r.pl, nil, nil)
	if gate != nil {
		close(gate)
	}
	r.readOutputs()
	return nil
}

// startJournal records the run in progress (see writeJournal), once bwrap
// or the helper has started but before the helper has its spec (start):
// nothing of the command runs yet.
func (r *sandboxRun) startJournal() {
	if !needsJournal(r.pl) {
		return
	}
	j := journal{Start: r.started.UnixNano(), Roots: r.pl.Guard.Roots, Git: r.pl.Guard.Git}
	if !r.pl.PidNamespace {
		// The helper leads the command's process group (Setpgid or
		// Setsid, see newCommand); it has barely started.
		j.Pgid = r.cmd.Process.Pid
		if ps, err := readProcStat(j.Pgid, time.Time{}); err == nil {
			j.LeaderStart, j.Sid = ps.ticks, ps.sid
		}
	}
	r.journal = writeJournal(r.pl.StateDir, j)
}

// dropJournal removes the run's journal: its check has run and its
// processes are gone (or the command never started).
func (r *sandboxRun) dropJournal() {
	if r.journal != "" {
		os.Remove(r.journal)
		r.journal = ""
	}
}

// madeGroup is what newGroup answered.
type madeGroup struct {
	group *limits.Group
	notes []string
	err   error
}

// startGroup makes the run's cgroup (newGroup) in the background, while
// the host side is prepared and bwrap starts; joinGroup takes it. Its
// removal is waited for last of all (see closeGroup), whatever happens.
func (r *sandboxRun) startGroup() {
	r.groupc = make(chan madeGroup, 1)
	pl, groupc := r.pl, r.groupc
	go func() {
		g, notes, err := newGroup(pl)
		groupc <- madeGroup{g, notes, err}
	}()
	r.afterWait(func() {
		if r.groupc != nil {
			// Never joined (the run failed before bwrap started).
			if m := <-r.groupc; m.group != nil {
				m.group.Close()
			}
			r.groupc = nil
		}
		if r.groupDone != nil {
			<-r.groupDone
		}
	})
}

// joinGroup takes the cgroup that startGroup made, and decides whether the
// helper waits for the host before exec (setWaitGo).
func (r *sandboxRun) joinGroup() error {
	m := <-r.groupc
	r.groupc = nil
	if m.err != nil {
		return m.err
	}
	if m.group != nil {
		r.group = m.group
		// Released in reverse: the removal starts, then the sweep of
		// killed runs' groups is waited for.
		r.afterWait(sweepGroups())
		r.afterWait(r.closeGroup)
	}
	for _, n := range m.notes {
		r.res.Degraded = append(r.res.Degraded, n)
		r.stdio.sayDegraded(n)
	}
	r.setWaitGo()
	return nil
}

// setWaitGo decides, once the cgroup is known, whether the helper waits
// for the host before exec: to be moved into the cgroup, or, in a pid
// namespace with a CPU or file-size limit, until the host holds a pidfd of
// the command (onReady), without which a command that ends at once leaves
// no exact status to name the limit it reached.
func (r *sandboxRun) setWaitGo() {
	l := limitsOf(r.pl)
	r.waitGo = r.group != nil || r.pl.PidNamespace && (l.cpuSeconds > 0 || l.fileSizeMB > 0)
}

// closeGroup removes the cgroup in the background, while the rest of the
// run is released (the workspace's placeholders, the lock); startGroup's
// last release waits for it. Everything in the group is gone or killed
// (Close kills what is left).
func (r *sandboxRun) closeGroup() {
	done, g := make(chan struct{}), r.group
	r.groupDone = done
	go func() {
		defer close(done)
		g.Close()
	}()
}

// prepareDirs performs the plan's preparations (prepare), takes the
// per-workspace lock (creating placeholders) and makes the private /tmp of
// the Landlock-only backend.
func (r *sandboxRun) prepareDirs() error {
	pl := r.pl
	if err := Prepare(pl); err != nil {
		return err
	}
	if pl.LockWorkspace {
		lock, err := lockForRun(pl, r.held)
		if err != nil {
			return err
		}
		if !locksWorkspace(pl) {
			r.afterWait(lock.release)
		} else {
			// The placeholders (a mkdir each, about 0.03 ms on ext4) are
			// created while the rest of the host side is set up; start
			// waits for them before anything looks at the workspace or
			// starts bwrap, and the lock is released only after them.
			made := make(chan error, 1)
			go func() { made <- createPlaceholders(pl) }()
			r.placeholders = sync.OnceValue(func() error { return <-made })
			r.afterWait(func() {
				_ = r.placeholders()
				lock.release()
			})
		}
	}
	if pl.PrivateTmp != "" {
		if err := os.MkdirAll(pl.PrivateTmp, 0o700); err != nil {
			return fmt.Errorf("creating a private temporary directory: %w", err)
		}
		r.afterWait(func() { _ = removeTree(pl.PrivateTmp) })
	}
	return nil
}

// helperFiles opens what the helper inherits, at helperspec.FdHelperExe,
// FdSpec, FdStatus and FdStderr: the helper's binary, a pipe carrying the
// spec, the status socket and the command's real stderr. It also sets up
// the terminal and bwrap's stderr pipe.
func (r *sandboxRun) helperFiles() ([]*os.File, error) {
	pl, stdio := r.pl, &r.stdio
	exe, specR, err := r.helperSpec(true, true)
	if err != nil {
		return nil, err
	}

	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("creating status socket: %w", err)
	}
	r.statusHost = os.NewFile(uintptr(fds[0]), "status")
	statusChild := os.NewFile(uintptr(fds[1]), "status-child")
	r.afterWait(func() { r.statusHost.Close() })
	r.afterStart(func() { statusChild.Close() })
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		return nil, fmt.Errorf("status socket: %w", err)
	}

	bwErrR, bwErrW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stderr pipe: %w", err)
	}
	r.afterStart(func() { bwErrW.Close() })
	r.bwErrDone = make(chan struct{})
	r.afterWait(func() { bwErrR.Close() })
	r.cmdStderr = bwErrW
	r.bwErrR = bwErrR

	// Warnings are printed last: registered before the terminal's
	// restore, so they run after it.
	warnTo := stdio.Stderr
	r.afterWait(func() {
		for _, w := range r.warnings {
			if warnTo != nil {
				fmt.Fprintln(warnTo, w)
			}
		}
	})
	term, err := newTerminal(pl, stdio)
	if err != nil {
		return nil, err
	}
	r.term = term
	r.afterWait(term.close)

	// The command's stderr travels to the helper as a descriptor: a
	// non-file writer gets a pipe and a copier.
	realStderr, closeStderr, stderrDone, err := stderrFile(stdio.Stderr)
	if err != nil {
		return nil, err
	}
	r.afterStart(closeStderr)
	r.stderrDone = stderrDone
	r.afterWait(func() { <-stderrDone })
	// ExtraFiles[i] becomes descriptor 3+i in the child.
	files := make([]*os.File, helperspec.FdStderr-2)
	files[helperspec.FdHelperExe-3] = exe
	files[helperspec.FdSpec-3] = specR
	files[helperspec.FdStatus-3] = statusChild
	files[helperspec.FdStderr-3] = realStderr
	// The private copies of the repositories' configs, which bwrap binds
	// (plan.Plan.GitConfigs) and closes.
	if n := len(pl.GitConfigs); n > 0 {
		copies := stdio.WatchOptions.Redirects
		if len(copies) != n {
			return nil, fmt.Errorf("the plan binds %d private copies of git configs, and %d were made", n, len(copies))
		}
		for _, c := range copies {
			files = append(files, c.Copy)
		}
		if slices.Contains(pl.Spec.Detach, helperspec.GitConfigDir) {
			// The helper binds them, from their directory, which bwrap
			// binds from the descriptor after theirs.
			dir, err := os.Open(filepath.Dir(copies[0].Copy.Name()))
			if err != nil {
				return nil, fmt.Errorf("opening the private copies of git configs: %w", err)
			}
			r.afterStart(func() { dir.Close() })
			files = append(files, dir)
		}
	}
	return files, nil
}

// helperSpec opens the helper's binary (helperExe) and a pipe carrying
// the helper's spec, both held until the run is over. The spec is written
// now, or, when a cgroup is being made (startGroup), once it is known
// (joinGroup, then sendSpec). status and stderr say whether the helper
// gets the status socket at FdStatus and the command's stderr at FdStderr.
func (r *sandboxRun) helperSpec(status, stderr bool) (exe, specR *os.File, err error) {
	r.spec = r.pl.Spec
	r.spec.Status, r.spec.Stderr = status, stderr
	r.spec.Version, r.spec.Binary = helperspec.Version, r.pl.Helper
	r.spec.Watch = r.stdio.Watch != nil
	r.spec.Supervise = r.pl.Supervise != nil
	r.spec.Renames = len(r.pl.GitConfigs) > 0 && !r.spec.Watch && !r.spec.Supervise
	// --ask without the violation monitor: the opens (with the count's
	// calls, in one filter, when the tree changes are counted too).
	r.spec.Ask = r.stdio.WatchOptions.Ask != nil && !r.spec.Watch && !r.spec.Supervise
	// The watch and the supervisor see every tree change already.
	// A walk server answers the check's walk without an lstat per
	// directory: counting would cost more than it spares.
	r.spec.TreeChanges = countTreeChanges(r.pl.Guard) && !r.spec.Watch && !r.spec.Supervise && !r.stdio.WalksServed
	if exe, err = r.helperExe(); err != nil {
		return nil, nil, err
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("creating spec pipe: %w", err)
	}
	r.afterWait(func() { specR.Close() })
	r.specW = specW
	r.afterWait(func() {
		if r.specW != nil {
			r.specW.Close() // never sent: the helper reads an end
		}
	})
	if r.groupc == nil {
		// No cgroup is being made: the spec is known now.
		r.setWaitGo()
		r.sendSpec()
	}
	return exe, specR, nil
}

// sendSpec writes the helper's spec in the background, with the command's
// environment, r.waitGo and the rlimits that the cgroup (r.group) leaves
// to the helper.
func (r *sandboxRun) sendSpec() {
	if r.specW == nil {
		return // sent already
	}
	spec := r.spec
	spec.WaitGo = r.waitGo
	// The command's environment travels in the spec; bwrap and the
	// helper start with plan.LauncherEnv (see newCommand).
	spec.Env = r.pl.Env
	spec.Rlimits = withoutGroupLimits(spec.Rlimits, r.group)
	nproc := r.pl.HelperIsChild && (r.group == nil || r.group.Kind() == limits.KindNone)
	// With the environment the spec may outgrow the pipe's buffer: the
	// helper reads it once started; closing specR ends a write nobody
	// will read. Counting the user's processes (nprocOnTop) and encoding
	// take about a millisecond: done here, while the host goes on.
	specW, gate := r.specW, r.specGate
	r.specW = nil
	go func() {
		defer specW.Close()
		if nproc {
			spec.Rlimits = nprocOnTop(spec.Rlimits, os.Getuid())
		}
		// A spec always encodes (strings, numbers and slices of them);
		// were it not to, the helper would read an end and report a
		// setup error.
		specJSON, err := json.Marshal(spec)
		if gate != nil {
			<-gate
		}
		if err == nil {
			_, _ = specW.Write(specJSON)
		}
	}()
}

// withoutGroupLimits drops the rlimits that the run's cgroup enforces
// with evidence: RLIMIT_DATA under the group's memory limit, RLIMIT_NPROC
// under its pids limit. Set together, the per-process limit raced the
// group's: a command could fail on malloc (tail: memory exhausted, or a
// shell's "Out of space") before the group's OOM killer acted, and then
// no limit line named what stopped it; RLIMIT_NPROC also counts the
// user's processes outside the sandbox.
func withoutGroupLimits(rl []helperspec.Rlimit, g *limits.Group) []helperspec.Rlimit {
	if g == nil || g.Kind() == limits.KindNone {
		return rl
	}
	return slices.DeleteFunc(slices.Clone(rl), func(r helperspec.Rlimit) bool {
		return r.Resource == unix.RLIMIT_DATA || r.Resource == unix.RLIMIT_NPROC
	})
}

// newCommand builds the exec.Cmd that starts bwrap (or the helper). Its
// environment is plan.LauncherEnv, never the command's: the command's
// reaches the helper in its spec (helperFiles), so no variable the policy
// passes or sets (LD_PRELOAD, LD_LIBRARY_PATH, ...) acts on a process
// outside the sandbox.
func (r *sandboxRun) newCommand(files []*os.File) {
	pl, stdio := r.pl, r.stdio
	cmd := &exec.Cmd{
		Path:       pl.Argv[0],
		Args:       pl.Argv,
		Env:        plan.LauncherEnv(),
		Dir:        launchDir(pl),
		Stderr:     r.cmdStderr,
		ExtraFiles: files,
		SysProcAttr: &syscall.SysProcAttr{
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if stdio.Stdin != nil {
		cmd.Stdin = stdio.Stdin
	}
	if stdio.Stdout != nil {
		cmd.Stdout = stdio.Stdout
	}
	if r.term != nil {
		cmd.SysProcAttr.Setsid = true
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0
	} else {
		cmd.SysProcAttr.Setpgid = true
	}
	r.cmd = cmd
}

// startSignals starts, in the background, the forwarding of the signals
// this process receives to the command (Stdio.ForwardSignals): the first
// signal.Notify hands each signal over to the runtime's signal thread in
// turn (about 0.3 ms), which the rest of the host side need not wait for.
// start waits for it (r.sigsOn) before bwrap or the helper starts, so a
// signal is forwarded from the first instant the sandbox exists.
func (r *sandboxRun) startSignals() {
	r.sigs = make(chan os.Signal, 8)
	if !r.stdio.ForwardSignals {
		return
	}
	on, sigs := make(chan struct{}), r.sigs
	go func() {
		defer close(on)
		signal.Notify(sigs, forwarded...)
	}()
	r.sigsOn = on
	r.afterWait(func() {
		<-on
		signal.Stop(sigs)
	})
}

// launchDir is the working directory of the process that starts the
// sandbox: the command's when that process is the helper (which execs the
// command), else / (bwrap changes directory itself, --chdir).
func launchDir(pl *plan.Plan) string {
	if pl.HelperIsChild {
		return pl.Dir
	}
	return "/"
}

// enterGroupEarly moves the outer process (bwrap, or the helper itself
// without bwrap) into the cgroup now, while the sandbox is being set up:
// on cgroup v1 the first move waits for an RCU grace period (about 10 ms),
// which would otherwise add to every run once the helper is ready.
// Processes it forks after the move are born inside; enterGroup checks,
// and moves what is not.
func (r *sandboxRun) enterGroupEarly() {
	if r.group == nil {
		return
	}
	r.outerAdded = make(chan error, 1)
	outer, group, added := r.cmd.Process.Pid, r.group, r.outerAdded
	go func() { added <- group.Add(outer) }()
	r.afterWait(func() {
		if r.outerAdded != nil {
			<-r.outerAdded // never leave a move racing with Close
		}
	})
}

// readOutputs starts the readers: bwrap's own stderr (collected until the
// helper is ready, so a setup failure becomes one clear line; passed
// through afterwards), the helper's status messages, and the wait for the
// outer process.
func (r *sandboxRun) readOutputs() {
	go func() {
		defer close(r.bwErrDone)
		_, _ = io.Copy(&r.bwErr, r.bwErrR)
	}()
	if !r.session {
		// A session's server speaks on the socket with its Session.
		r.statusCh = make(chan status, 1)
		go readStatus(r.statusHost, r.statusCh, r.net.handOver, r.handWatch)
	}
	r.waitc = make(chan error, 1)
	go func() { r.waitc <- r.cmd.Wait() }()
}

// finish runs after the sandbox exited: it drains what the helper and
// bwrap still had to say, disarms what the run planted, and turns the end
// into the Result (or the setup or exec error).
func (r *sandboxRun) finish(waitErr error) (*result.Result, error) {
	stdio, res := r.stdio, r.res
	// Drain the status channel: the helper may have reported just before
	// the sandbox ended (and the command ended at once).
	for st := range r.statusCh {
		if st.ready && !r.ready {
			r.ready = true
			r.passDegraded(st.degraded)
		}
		if st.execErr != nil {
			r.execErr = st.execErr
		}
	}
	if st, ok := r.stopWatch(); ok {
		r.guard.treeChanges(st.TreeChanges)
	}
	nprocReached := r.nproc.end()
	<-r.bwErrDone
	<-r.stderrDone
	r.term.wait()
	if !r.pl.PidNamespace && r.reaper && stdio.OwnsChildren {
		sweepOrphans()
	}
	// The command's processes are gone: the group's accounting is read
	// while the check runs, which needs no cgroup.
	read := readGroupUsage(r.group)
	if r.ready {
		// The command ran: disarm what it planted, before the lock is
		// released (and placeholders are removed).
		r.warnings = append(r.warnings, r.guard.finish(res)...)
		r.dropJournal()
	}
	// The sandbox is gone: stop the proxy (its last tunnels with it) and
	// gather what it refused.
	r.net.close()
	res.NetRefused, res.NetRefusedMore = r.net.refusals(), r.net.refusedMore()
	res.Usage = usage(r.cmd.ProcessState, time.Since(r.started))
	var initUsage *result.Usage
	switch {
	case r.initPid > 0 && (!stdio.NoUsage || r.cpuSuspect()):
		u := reapInit(r.initPid)
		initUsage = &u
		addUsage(&res.Usage, u)
	case r.pl.PidNamespace && !r.reaper && r.ready && !stdio.NoUsage:
		res.Usage.Incomplete = append(res.Usage.Incomplete, incompleteCPU)
	}
	gu := read.fold(&res.Usage)
	if r.groupErr != nil {
		return nil, &SetupError{Err: r.groupErr}
	}
	if !r.ready && r.execErr == nil && r.timedOut {
		// The timeout counts from the start, set-up included: it fired
		// before the command ran (a loaded machine, a slow set-up). That
		// is the user's timeout, exit 124, not a failure of cordon's.
		res.TimedOut = true
		res.ExitCode = result.ExitTimeout
		return res, nil
	}
	if !r.ready && r.execErr == nil {
		msg := r.bwErr.String()
		return nil, &SetupError{Err: setupFailure(msg, waitErr), UserNS: userNSFailure(msg)}
	}
	// Anything bwrap said after the helper was ready belongs to the user.
	if msg := r.bwErr.String(); msg != "" && stdio.Stderr != nil {
		_, _ = io.WriteString(stdio.Stderr, msg)
	}
	if r.execErr != nil {
		return nil, r.execErr
	}
	fillExit(res, r.cmd.ProcessState)
	if r.timedOut {
		res.TimedOut = true
		res.ExitCode = result.ExitTimeout
	}
	facts := r.endFacts(gu, initUsage)
	facts.nprocReached = nprocReached
	res.LimitsReached = limitsReached(limitsOf(r.pl), facts)
	return res, nil
}

// endFacts gathers what the run knows about the command's end: its own
// wait status (the helper's when it is this process's child and became the
// command; through the pidfd in a pid namespace), the sandbox's CPU time
// and the cgroup's counters.
func (r *sandboxRun) endFacts(gu limits.Usage, initUsage *result.Usage) endFacts {
	f := endFacts{exitCode: r.res.ExitCode, cordonKilled: r.cordonKilled || r.timedOut,
		oomKills: gu.OOMKills, forkFailures: gu.ForkFailures}
	switch {
	case r.pl.HelperIsChild && r.cmd.ProcessState != nil:
		ws, ok := r.cmd.ProcessState.Sys().(syscall.WaitStatus)
		f.status, f.exact = unix.WaitStatus(ws), ok
	case r.pl.PidNamespace:
		f.status, f.exact = pidfdExit(r.pidfd)
	}
	switch u := r.res.Usage; {
	case gu.CPUTotal > 0:
		f.cpu, f.cpuKnown = max(gu.CPUTotal, gu.CPUUser+gu.CPUSystem), true
	case r.pl.HelperIsChild || initUsage != nil:
		// The helper became the command, this process's child; in a pid
		// namespace its usage came with the namespace's init.
		f.cpu, f.cpuKnown = u.User+u.System, true
	}
	return f
}
