package helper

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/internal/enforce/landlock"
	"github.com/cordon-sandbox/cordon/internal/enforce/seccomp"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"golang.org/x/sys/unix"
)

// Serve runs a session's server (helperspec.SessionCommand) and returns
// its exit status: 0 when the host closed the socket, 125 when the set-up
// or the socket failed. It applies its spec to itself, in the helper's
// order (capabilities, Landlock, seccomp), on the thread that then starts
// every command, so each inherits them; becomes the child subreaper of
// the sandbox, so the processes a command leaves behind come back to it;
// makes itself undumpable, so a command (same user, same sandbox) can
// neither read nor write its memory; reports readiness; and serves the
// host's MsgCommand requests one at a time (serveOne).
func Serve([]string) int {
	var st unix.Stat_t
	if err := unix.Fstat(helperspec.FdStatus, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		fmt.Fprintln(os.Stderr, "cordon: helper: a session's server needs the launcher's status socket")
		return 125
	}
	fail := func(format string, a ...any) int {
		_ = unix.Sendmsg(helperspec.FdStatus, helperspec.ExecFailedMessage(125, fmt.Sprintf(format, a...)), nil, nil, 0)
		return 125
	}
	spec, err := readSpec()
	var ve *helperspec.VersionError
	switch {
	case errors.As(err, &ve):
		return fail("%v", err)
	case err != nil:
		return fail("helper: %v", err)
	case spec.Watch || spec.Supervise || spec.Renames || len(spec.Files) > 0 || spec.WaitGo || len(spec.Rlimits) > 0 ||
		len(spec.Mounts) > 0 || spec.User != nil || len(spec.Detach) > 0:
		// The launcher never asks; were it to, the rule would be lost.
		return fail("helper: a session's server was given a spec it cannot serve (a monitor, files, limits or mounts)")
	}
	// Every command is started from this thread: Landlock's domain is
	// the thread's, and capabilities too.
	runtime.LockOSThread()
	if err := dropCapabilities(); err != nil {
		return fail("helper: %v", err)
	}
	if err := closeStray(); err != nil {
		return fail("helper: %v", err)
	}
	if spec.Net != nil && len(spec.Net.Listeners) > 0 {
		// Before Landlock and seccomp, as the helper does: the denied
		// network's name server, served by the host for the session.
		if err := sendListeners(spec.Net); err != nil {
			return fail("helper: %v", err)
		}
	}
	var notes []string
	if spec.Landlock != nil {
		rep, err := landlock.Apply(*spec.Landlock)
		if err != nil {
			return fail("helper: applying Landlock rules: %v", err)
		}
		notes = rep.Degraded
	}
	if spec.Seccomp != nil {
		if err := seccomp.Install(*spec.Seccomp); err != nil {
			return fail("helper: installing the seccomp filter: %v", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail("helper: becoming the sandbox's subreaper: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail("helper: making the server undumpable: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		return fail("helper: finding its own binary: %v", err)
	}
	cred := unix.UnixCredentials(&unix.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())})
	if err := unix.Sendmsg(helperspec.FdStatus, helperspec.ReadyMessage(notes), cred, nil, 0); err != nil {
		return fail("helper: reporting readiness: %v", err)
	}
	buf := make([]byte, helperspec.MaxCommand)
	oob := make([]byte, unix.CmsgSpace(helperspec.CommandFds*4))
	served := 0
	next := prestartAndSay(self, served)
	for {
		n, oobn, _, _, err := unix.Recvmsg(helperspec.FdStatus, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return 0 // the host closed the session
		}
		fds := helperspec.Rights(oob[:oobn])
		ex := serveOne(self, next, buf[:n], fds)
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		served++
		next = nil
		c, _ := helperspec.ParseCommand(buf[:n])
		if c.PrestartFirst {
			// The host moves it into the next command's cgroup while
			// it reads the answer.
			next = prestartAndSay(self, served)
		}
		if err := unix.Sendmsg(helperspec.FdStatus, helperspec.ExitedMessage(ex), nil, nil, 0); err != nil {
			return 125
		}
		if next == nil {
			// The next command's helper starts now, after the answer:
			// its start is off every command's path.
			next = prestartAndSay(self, served)
		}
	}
}

// prestartAndSay is prestart, then MsgPrestarted to the host when it
// started one.
func prestartAndSay(self string, served int) *prestarted {
	p := prestart(self)
	if p != nil {
		_ = unix.Sendmsg(helperspec.FdStatus, append([]byte{helperspec.MsgPrestarted}, strconv.Itoa(served)...), nil, nil, 0)
	}
	return p
}

// serveOne starts the command of the MsgCommand msg with its descriptors
// fds (stdin, stdout, stderr, status, spec): this binary's helper
// (helperspec.HelperCommand), in a session of its own, which applies the
// command's spec and execs it. Once it ended, everything else in the
// sandbox is killed and reaped (killRest), and the answer says how it
// ended.
func serveOne(self string, next *prestarted, msg []byte, fds []int) helperspec.Exited {
	c, err := helperspec.ParseCommand(msg)
	if err == nil && len(fds) != helperspec.CommandFds {
		err = fmt.Errorf("a command message with %d descriptors, not %d", len(fds), helperspec.CommandFds)
	}
	if err == nil {
		var st unix.Stat_t
		if serr := unix.Stat(c.Dir, &st); serr != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			err = fmt.Errorf("no directory %s inside the sandbox", c.Dir)
		}
	}
	if err != nil {
		if next != nil {
			unix.Close(next.sock)
		}
		killRest() // the helper started ahead too
		return helperspec.Exited{Err: err.Error()}
	}
	pid := 0
	if next != nil && next.hand(msg, fds) {
		pid = next.pid
	} else if pid, err = startHelper(self, c, fds); err != nil {
		killRest()
		return helperspec.Exited{Err: fmt.Sprintf("starting the command in %s: %v", c.Dir, err)}
	}
	return wait(pid)
}

// startHelper starts the helper of command c with its descriptors fds, in
// a session of its own, when none was started ahead.
func startHelper(self string, c helperspec.Command, fds []int) (int, error) {
	// ForkExec, not os.StartProcess: the descriptors stay the server's
	// integers, closed by Serve, never by a finalizer.
	none := ^uintptr(0) // closed in the child
	files := []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2]), none, none, none}
	files[helperspec.FdStatus], files[helperspec.FdSpec] = uintptr(fds[3]), uintptr(fds[4])
	args := append([]string{self, helperspec.HelperCommand, "--"}, c.Argv...)
	return syscall.ForkExec(self, args, &syscall.ProcAttr{Dir: c.Dir, Env: []string{}, Files: files, Sys: &syscall.SysProcAttr{Setsid: true}})
}

// wait waits for the command's helper pid (which became the command),
// then kills and reaps everything else, and says how the command ended.
func wait(pid int) helperspec.Exited {
	var err error
	var ws unix.WaitStatus
	var ru unix.Rusage
	for {
		_, err = unix.Wait4(pid, &ws, 0, &ru)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	killRest()
	if err != nil {
		return helperspec.Exited{Err: fmt.Sprintf("waiting for the command: %v", err)}
	}
	return helperspec.Exited{Status: int(ws), UserNS: ru.Utime.Nano(), SystemNS: ru.Stime.Nano(), MaxRSSKB: ru.Maxrss}
}

// killRest kills every process of the sandbox but its init and this
// server (kill(-1) stops at the pid namespace), the background processes
// the command left included, whatever their session, and reaps them: as
// the subreaper, the server inherits them all. It tries again while some
// remain (one being reparented, say), a bounded number of times.
func killRest() {
	for i := range 200 {
		if err := unix.Kill(-1, unix.SIGKILL); errors.Is(err, unix.ESRCH) {
			return
		}
		for {
			_, err := unix.Wait4(-1, nil, 0, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				break // ECHILD: none left to reap
			}
		}
		if i > 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// prestarted is the helper started ahead of the next command
// (helperspec.SessionExecCommand): its pid and the server's end of its
// socket.
type prestarted struct {
	pid  int
	sock int
}

// prestart starts the next command's helper, which waits for it; nil if
// it cannot (the command then starts the helper itself: startHelper).
func prestart(self string) *prestarted {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fds[1])
	files := []uintptr{0, 1, 2, uintptr(fds[1])}
	pid, err := syscall.ForkExec(self, []string{self, helperspec.SessionExecCommand}, &syscall.ProcAttr{Dir: "/", Env: []string{}, Files: files})
	if err != nil {
		unix.Close(fds[0])
		return nil
	}
	return &prestarted{pid: pid, sock: fds[0]}
}

// hand gives the prestarted helper its command and descriptors; false if
// it is gone (it is then reaped).
func (p *prestarted) hand(msg []byte, fds []int) bool {
	err := unix.Sendmsg(p.sock, msg, unix.UnixRights(fds...), nil, 0)
	unix.Close(p.sock)
	if err != nil {
		_ = unix.Kill(p.pid, unix.SIGKILL)
		var ws unix.WaitStatus
		_, _ = unix.Wait4(p.pid, &ws, 0, nil)
		return false
	}
	return true
}

// SessionExec is the helper started ahead of a command
// (helperspec.SessionExecCommand): it waits for the command on its socket,
// takes its descriptors and directory, leads a session of its own and
// runs as the helper (Main). It returns 125 if the server went away.
func SessionExec([]string) int {
	buf := make([]byte, helperspec.MaxCommand)
	oob := make([]byte, unix.CmsgSpace(helperspec.CommandFds*4))
	var n, oobn int
	var err error
	for {
		n, oobn, _, _, err = unix.Recvmsg(helperspec.FdHelperExe, buf, oob, 0)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil || n == 0 {
		return 125
	}
	_ = unix.Close(helperspec.FdHelperExe)
	c, err := helperspec.ParseCommand(buf[:n])
	fds := helperspec.Rights(oob[:oobn])
	if err != nil || len(fds) != helperspec.CommandFds {
		return 125
	}
	for i, to := range []int{0, 1, 2, helperspec.FdStatus, helperspec.FdSpec} {
		if err := unix.Dup2(fds[i], to); err != nil {
			return 125
		}
	}
	for _, fd := range fds {
		if !slices.Contains([]int{0, 1, 2, helperspec.FdStatus, helperspec.FdSpec}, fd) {
			_ = unix.Close(fd)
		}
	}
	if _, err := unix.Setsid(); err != nil {
		return failStatus(125, fmt.Sprintf("helper: starting the command's session: %v", err))
	}
	if err := unix.Chdir(c.Dir); err != nil {
		return failStatus(125, fmt.Sprintf("the session's sandbox could not change to %s: %v", c.Dir, err))
	}
	return Main(append([]string{"--"}, c.Argv...))
}

// failStatus reports an exec failure on the status socket and returns
// code.
func failStatus(code int, msg string) int {
	_ = unix.Sendmsg(helperspec.FdStatus, helperspec.ExecFailedMessage(code, msg), nil, nil, 0)
	return code
}
