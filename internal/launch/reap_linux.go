package launch

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
)

// incompleteCPU explains CPU times that leave out the command.
const incompleteCPU = "cpu: the command's CPU time is missing: bwrap's process inside the sandbox was not reaped by this process; make the host a child subreaper (sandbox.BecomeSubreaper), or run where cordon can create a cgroup"

// initReapWait bounds how long reapInit waits for bwrap's init to die
// once the outer bwrap has exited (it is killed with it: --die-with-parent).
const initReapWait = 2 * time.Second

// BecomeSubreaper makes this process a child subreaper (prctl
// PR_SET_CHILD_SUBREAPER), so that a sandbox's processes orphaned by bwrap
// are reparented to it and their resource usage counted. cordon's own
// commands call it at start; a library host may, if it reaps or does not
// mind the orphans of its other children too.
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// subreaperFlag receives PR_GET_CHILD_SUBREAPER's answer: a global, so
// that the kernel writes to memory that never moves.
var (
	subreaperMu   sync.Mutex
	subreaperFlag int32
)

// isSubreaper reports whether this process is a child subreaper.
func isSubreaper() bool {
	subreaperMu.Lock()
	defer subreaperMu.Unlock()
	subreaperFlag = 0
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&subreaperFlag)), 0, 0, 0)
	return err == nil && subreaperFlag != 0
}

// reapInit waits for bwrap's init (the sandbox's pid 1), which the outer
// bwrap does not reap: it learns the command's exit status through an
// eventfd and exits. The init reaped the command, so its usage includes
// the command's. Once the outer bwrap is gone, the init is this
// subreaper's child. It returns the zero usage if the init was reaped
// already (by the outer bwrap: then its usage is in the outer's) or does
// not die in time.
func reapInit(pid int) result.Usage {
	type reaped struct {
		ru  unix.Rusage
		err error
	}
	done := make(chan reaped, 1)
	go func() {
		var r reaped
		var ws unix.WaitStatus
		for {
			_, r.err = unix.Wait4(pid, &ws, 0, &r.ru)
			if !errors.Is(r.err, syscall.EINTR) {
				break
			}
		}
		done <- r
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return result.Usage{}
		}
		return result.Usage{
			User:     time.Duration(r.ru.Utime.Nano()),
			System:   time.Duration(r.ru.Stime.Nano()),
			MaxRSSKB: r.ru.Maxrss,
		}
	case <-time.After(initReapWait):
		return result.Usage{}
	}
}

// addUsage adds the CPU times of v to u and keeps the larger peak RSS.
func addUsage(u *result.Usage, v result.Usage) {
	u.User += v.User
	u.System += v.System
	u.MaxRSSKB = max(u.MaxRSSKB, v.MaxRSSKB)
}

// orphanSweepBudget bounds sweepOrphans.
const orphanSweepBudget = 2 * time.Second

// sweepOrphans kills and reaps every child of this process, round after
// round, until none is left or the budget is spent: what a killed child
// had started comes back as the next round's orphans. Only for a child
// subreaper whose children all belong to the run (Stdio.OwnsChildren).
func sweepOrphans() {
	if noChildren() {
		return // the usual end: the command left nothing behind
	}
	deadline := time.Now().Add(orphanSweepBudget)
	for time.Now().Before(deadline) {
		kids := children()
		if len(kids) == 0 {
			return
		}
		for _, pid := range kids {
			// Our children cannot be reaped by anyone else, so their pids
			// cannot be reused under us.
			_ = unix.Kill(-pid, unix.SIGKILL) // the group it leads, if any
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		for _, pid := range kids {
			for time.Now().Before(deadline) {
				var ws unix.WaitStatus
				if n, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); n == pid || (err != nil && !errors.Is(err, syscall.EINTR)) {
					break
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
}

// noChildren reports whether this process has no child at all, running,
// stopped or a zombie (of any exit signal: __WALL), with one waitid that
// reaps nothing (WNOWAIT); false when it cannot tell (an older kernel's
// waitid refuses __WALL), and children then looks.
func noChildren() bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil)
		if !errors.Is(err, syscall.EINTR) {
			return errors.Is(err, unix.ECHILD)
		}
	}
}

// children lists this process's children, from every thread's
// /proc/self/task/TID/children (Linux 3.5+, CONFIG_PROC_CHILDREN), or, when
// that is missing, from the parent field of every /proc/PID/stat.
func children() []int {
	var out []int
	tasks, err := os.ReadDir("/proc/self/task")
	if err == nil {
		found := false
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			found = true
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					out = append(out, pid)
				}
			}
		}
		if found {
			return out
		}
	}
	self := os.Getpid()
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if pp, err := parentPid(pid); err == nil && pp == self {
			out = append(out, pid)
		}
	}
	return out
}
