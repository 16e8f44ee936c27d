package launch

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// nprocEvery is how often nprocWatch counts the tasks: a command that
// holds its processes at the limit (bash retrying a refused fork, make
// waiting for its jobs, a fork bomb) is seen there; one that exits at its
// first refused fork (dash's "Cannot fork") is not, and gets no line. A
// count takes about 50 µs in a sandbox's own /proc, up to a millisecond
// over a desktop's processes on the host.
const nprocEvery = 100 * time.Millisecond

// nprocWatch samples, while a run without a cgroup goes on, the tasks
// that the kernel counts against the command's RLIMIT_NPROC, and
// remembers whether they reached it: a fork is refused then (EAGAIN, a
// shell's "Cannot fork"), and without a cgroup (pids.events) nothing else
// shows it. In a user namespace (bubblewrap) those are the sandbox's
// tasks, counted in its own /proc; without one (the Landlock-only
// backend) every task of the user on the host, against the limit the
// launcher raised by the user's tasks (nprocOnTop).
type nprocWatch struct {
	pidNS   bool
	limit   int
	stop    chan struct{}
	done    chan struct{}
	peak    int
	reached bool
}

// startNprocWatch starts counting for the command pid (the helper, ready;
// it sets its rlimits just before exec), in its pid namespace when pidNS
// is set; nil when the tasks cannot be counted there.
func startNprocWatch(pid int, pidNS bool) *nprocWatch {
	dir := "/proc"
	if pidNS {
		dir = "/proc/" + strconv.Itoa(pid) + "/root/proc"
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	var sfs unix.Statfs_t
	if unix.Fstatfs(dfd, &sfs) != nil || sfs.Type != unix.PROC_SUPER_MAGIC {
		unix.Close(dfd) // not a /proc: the sandbox made something else there
		return nil
	}
	w := &nprocWatch{pidNS: pidNS, stop: make(chan struct{}), done: make(chan struct{})}
	uid := os.Getuid()
	go func() {
		defer close(w.done)
		defer unix.Close(dfd)
		t := time.NewTicker(nprocEvery)
		defer t.Stop()
		for {
			// The limit is the command's, read while it runs: the helper
			// sets it just before exec, and a process gone keeps the last.
			if l := procNprocLimit(pid); l > 0 {
				w.limit = l
			}
			if n := tasksIn(dfd, uid); w.limit > 0 && n >= w.limit {
				w.peak, w.reached = n, true
				return // seen: no need to look again
			}
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// end stops the count and, if the tasks reached the limit, says so in
// words for the limit's line; "" if they did not, or for a nil watch.
func (w *nprocWatch) end() string {
	if w == nil {
		return ""
	}
	select {
	case <-w.done:
	default:
		close(w.stop)
		<-w.done
	}
	switch {
	case !w.reached:
		return ""
	case w.pidNS:
		return fmt.Sprintf("the sandbox ran %d tasks, as many as RLIMIT_NPROC allows (no cgroup: refused forks are not counted)", w.peak)
	}
	return "your user's tasks reached the command's RLIMIT_NPROC, those running at the start and --max-procs more (no cgroup: refused forks are not counted)"
}

// procNprocLimit reads the soft "Max processes" of /proc/PID/limits, or 0
// (unlimited or unreadable).
func procNprocLimit(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		return 0
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "Max processes")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			return 0 // "unlimited"
		}
		return n
	}
	return 0
}
