package launch

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
)

// readStatus reads the helper's messages on the status socket and sends
// them on ch: one status when the helper is ready (with its pid, from the
// kernel-translated credentials, and what it could not enforce), and one
// at the end if it never got ready or could not exec the command. It
// closes ch when the socket closes. The listening descriptors of each
// helperspec.MsgListener before readiness go to listener, which owns them,
// and the violation monitor's listener (helperspec.MsgWatch) to watch,
// which owns it; any other descriptor is closed.
func readStatus(sock *os.File, ch chan<- status, listener func(helperspec.Listener, []int), watch func(int, []string)) {
	var st status
	buf := make([]byte, 4096)
	// Credentials, and up to two listening descriptors (127.0.0.1, ::1).
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred)+unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil || n == 0 {
			break
		}
		fds := helperspec.Rights(oob[:oobn])
		if buf[0] == helperspec.MsgListener && !st.ready {
			l, families, err := helperspec.ParseListener(buf[:n])
			if err != nil || len(fds) != len(families) {
				closeFds(fds)
				continue
			}
			listener(l, fds)
			if l.Kind == helperspec.ListenDNS {
				// The helper waits until its name server is bound.
				_, _ = sock.Write([]byte{helperspec.MsgGo})
			}
			continue
		}
		if buf[0] == helperspec.MsgWatch && !st.ready && len(fds) == 1 {
			watch(fds[0], helperspec.ParseWatch(buf[:n]))
			continue
		}
		closeFds(fds)
		switch buf[0] {
		case helperspec.MsgReady:
			st.ready = true
			st.degraded, _ = helperspec.ParseReady(buf[:n])
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, m := range msgs {
					if c, err := unix.ParseUnixCredentials(&m); err == nil {
						st.pid = int(c.Pid)
					}
				}
			}
			ch <- st
			st = status{pid: st.pid, ready: true}
		case helperspec.MsgExecFailed:
			code, msg, err := helperspec.ParseExecFailed(buf[:n])
			if err != nil {
				code, msg = result.ExitSetup, "helper: "+err.Error()
			}
			st.execErr = &ExecError{Code: code, Msg: msg}
		}
	}
	if !st.ready || st.execErr != nil {
		ch <- st
	}
	close(ch)
}

// supervise waits for the sandbox to exit, acting meanwhile on the
// helper's status (the cgroup move and the go byte, degraded notes),
// forwarded signals, the setup and command timeouts and ctx. It returns
// the outer process's wait error.
func (r *sandboxRun) supervise(ctx context.Context) error {
	var timeout, grace <-chan time.Time
	if d := r.pl.Timeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	setupTimer := time.NewTimer(readyTimeout)
	defer setupTimer.Stop()
	// In a child subreaper (cordon's own processes are), bwrap's init is
	// reaped after the sandbox ends, for the command's CPU time.
	r.reaper = isSubreaper()
	stc := (<-chan status)(r.statusCh)
	onStatus := func(st status, ok bool) {
		if !ok {
			stc = nil
			return
		}
		if st.ready && !r.ready {
			setupTimer.Stop()
			r.onReady(st)
		}
		if st.execErr != nil {
			r.execErr = st.execErr
		}
	}
	for {
		select {
		case st, ok := <-stc:
			onStatus(st, ok)
		case <-setupTimer.C:
			if !r.ready {
				r.killAll()
			}
		case s := <-r.sigs:
			if r.cmdPid == 0 && stc != nil {
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
			if r.cmdPid > 0 {
				signalTree(r.cmdPid, s.(syscall.Signal))
			} else {
				r.killAll()
			}
		case <-timeout:
			r.timedOut = true
			timeout = nil
			if r.cmdPid > 0 {
				signalTree(r.cmdPid, syscall.SIGTERM)
				grace = time.After(gracePeriod)
			} else {
				r.killAll()
			}
		case <-grace:
			r.killAll()
		case <-ctx.Done():
			r.killAll()
		case err := <-r.waitc:
			return err
		}
	}
}

// onReady handles the helper's readiness report: it learns the command's
// pid (and bwrap's init, to reap), moves the sandbox into its cgroup and
// releases the helper, and passes on what the helper could not enforce.
func (r *sandboxRun) onReady(st status) {
	r.ready = true
	r.cmdPid = st.pid
	outer := r.cmd.Process.Pid
	if r.pl.PidNamespace && r.reaper && (!r.stdio.NoUsage || limitsOf(r.pl).cpuSeconds > 0) {
		// bwrap's init inside the pid namespace: see reapInit. With a
		// CPU limit its usage may tell whether the limit killed the
		// command.
		r.initPid = namespaceInit(r.cmdPid, outer)
	}
	if r.pl.PidNamespace {
		// The command's own exit status, which bwrap's relays as an exit
		// code: see endFacts.
		if fd, err := unix.PidfdOpen(r.cmdPid, 0); err == nil {
			r.pidfd = fd
			r.afterWait(func() { unix.Close(fd) })
		}
	}
	if r.cordonKilled {
		// cordon is killing the sandbox already (the timeout or a signal
		// came first, with the readiness report still on its way):
		// releasing the dying helper could only fail, and that failure
		// is not the run's end (the timeout is). A helper that waits for
		// the release never ran the command: the run ends as killed
		// before ready (finish).
		r.ready = r.group == nil && !r.waitGo
		r.passDegraded(st.degraded)
		return
	}
	if r.group == nil && limitsOf(r.pl).processes > 0 && os.Getuid() != 0 {
		// No cgroup counts refused forks: count the tasks against the
		// command's RLIMIT_NPROC instead (root is exempt from it).
		r.nproc = startNprocWatch(r.cmdPid, r.pl.PidNamespace)
	}
	if r.group != nil {
		// The helper waits for this before exec.
		if r.pl.HelperIsChild {
			outer = r.cmdPid // the helper itself; its parent is cordon
		}
		outerErr := <-r.outerAdded
		r.outerAdded = nil
		if err := enterGroup(r.group, outer, r.cmdPid, outerErr == nil); err != nil {
			r.groupErr = err
			r.killAll()
		} else if err := limitProcesses(r.group, r.pl); err != nil {
			r.groupErr = err
			r.killAll()
		} else if _, err := r.statusHost.Write([]byte{helperspec.MsgGo}); err != nil {
			r.groupErr = fmt.Errorf("releasing the helper: %w", err)
			r.killAll()
		}
	} else if r.waitGo {
		// Its journal and the guard's snapshot were done before this
		// report was handled (start): release the helper now.
		if _, err := r.statusHost.Write([]byte{helperspec.MsgGo}); err != nil {
			r.groupErr = fmt.Errorf("releasing the helper: %w", err)
			r.killAll()
		}
	}
	r.passDegraded(st.degraded)
}

// passDegraded passes on what the helper could not enforce: in the Result
// and on the caller's stderr.
func (r *sandboxRun) passDegraded(notes []string) {
	for _, d := range notes {
		r.res.Degraded = append(r.res.Degraded, d)
		r.stdio.sayDegraded(d)
	}
}

// killAll kills the whole sandbox: the outer process, without a pid
// namespace the command's process group, and the cgroup.
func (r *sandboxRun) killAll() {
	r.cordonKilled = true
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	if !r.pl.PidNamespace {
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	}
	if r.group != nil {
		_ = r.group.Kill()
	}
}

// cpuSuspect reports whether the command may have been killed by its CPU
// limit (it ended with SIGKILL or SIGXCPU, or an exit status of 128 plus
// one of them): then bwrap's init is reaped for the command's CPU time
// even when the caller ignores the usage.
func (r *sandboxRun) cpuSuspect() bool {
	if limitsOf(r.pl).cpuSeconds == 0 || r.cmd.ProcessState == nil {
		return false
	}
	c := r.cmd.ProcessState.ExitCode()
	return c == 128+int(syscall.SIGKILL) || c == 128+int(syscall.SIGXCPU)
}
