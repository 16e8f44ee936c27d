package launch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// What a run killed with SIGKILL leaves on the Landlock-only backend, and
// how the next run removes it. With bwrap the pid namespace dies with
// cordon (--die-with-parent) and the mounts with it; the placeholders are
// the workspace lock's (see workspaceLock), the cgroups limits.Cleanup's.

// Bounds of killLeftGroup: rounds of kills (what the group forks
// meanwhile is killed in the next round) and the time they may take.
const (
	leftGroupRounds = 10
	leftGroupBudget = 500 * time.Millisecond
)

// startSlack is how much earlier than its run a process of it may seem to
// have started: /proc counts start times in clock ticks since boot, and
// the wall clock the run's start was read from may have been set since.
const startSlack = time.Second

// killLeftGroup kills what is left of the process group of the run of
// journal j (j.Pgid, the command's, of a run that started at start and
// whose cordon was killed): without a pid namespace only the command
// itself died with cordon (Pdeathsig); what it started lives on in its
// group. Only this user's processes that started since the run began, in
// the command's session (j.Sid), are killed, each through a pidfd checked
// to still name the same process. The group's number may have been taken
// again since (the group was empty, and the pid numbers went round): while
// a group has members the kernel gives no process its number, so a live
// process numbered j.Pgid that did not start when the command did
// (j.LeaderStart) leads another group, and nothing is killed. A group
// taken again whose leader has ended, in the same session, is the one
// case it cannot tell apart. Processes that left the group (setsid) are
// not found: a cgroup holding the sandbox is what ends those
// (limits.Cleanup).
func killLeftGroup(j journal, start time.Time) {
	pgid := j.Pgid
	boot, ok := bootTime()
	if !ok || pgid <= 1 {
		return
	}
	if j.LeaderStart != 0 {
		if ps, err := readProcStat(pgid, boot); err == nil && ps.ticks != j.LeaderStart {
			return // another group's leader: the number was taken again
		}
	}
	g := runGroup{pgid: pgid, sid: j.Sid, boot: boot, start: start}
	deadline := time.Now().Add(leftGroupBudget)
	for range leftGroupRounds {
		found := false
		for _, pid := range g.members() {
			found = true
			g.killExact(pid)
		}
		if !found || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runGroup is the process group of a killed run: its number, the
// session of its command (0: not known), and when the run started.
type runGroup struct {
	pgid, sid   int
	boot, start time.Time
}

// members lists this user's processes in the group that started at or
// after the run (less startSlack), in its session.
func (g runGroup) members() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if g.has(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// has reports whether pid is this user's, in the group and its session,
// started at or after the run (less startSlack), and has not ended.
func (g runGroup) has(pid int) bool {
	var st unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid), &st) != nil || int(st.Uid) != os.Geteuid() {
		return false
	}
	ps, err := readProcStat(pid, g.boot)
	return err == nil && !ps.zombie && ps.pgid == g.pgid && (g.sid == 0 || ps.sid == g.sid) && !ps.started.Before(g.start.Add(-startSlack))
}

// killExact sends SIGKILL to pid through a pidfd, after checking through
// it that pid is still a process of the group.
func (g runGroup) killExact(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone (or no pidfds: Linux 5.3)
	}
	defer unix.Close(fd)
	if g.has(pid) {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
}

// procStat is what /proc/PID/stat says of a process.
type procStat struct {
	pgid, sid int
	// ticks is its start time in clock ticks since boot, started the
	// same on the wall clock.
	ticks   uint64
	started time.Time
	// zombie: it has ended (its reaper has yet to wait for it).
	zombie bool
}

// readProcStat reads the process group, session and start time of pid
// from /proc/PID/stat, and whether it has ended.
func readProcStat(pid int, boot time.Time) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed stat")
	}
	// Fields from the state (3rd) on: pgrp is the 5th, session the 6th,
	// starttime the 22nd.
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return procStat{}, errors.New("malformed stat")
	}
	var ps procStat
	if ps.pgid, err = strconv.Atoi(f[2]); err != nil {
		return procStat{}, err
	}
	if ps.sid, err = strconv.Atoi(f[3]); err != nil {
		return procStat{}, err
	}
	if ps.ticks, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return procStat{}, err
	}
	// USER_HZ is 100 on every Linux architecture Go supports.
	ps.started = boot.Add(time.Duration(ps.ticks) * (time.Second / 100))
	ps.zombie = f[0] == "Z" || f[0] == "X"
	return ps, nil
}

// bootTime is when the machine booted, on the wall clock.
func bootTime() (time.Time, bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return time.Time{}, false
	}
	return time.Now().Add(-time.Duration(ts.Nano())), true
}

// sweepPrivateTmps removes, in dir (the state directory's tmp), the
// private temporary directories (PID-HEX, see plan's privateTmpDir) of
// Landlock-only runs whose cordon is gone: one killed with SIGKILL could
// not remove its own. own is this run's.
func sweepPrivateTmps(dir, own string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		pidStr, _, ok := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 || filepath.Join(dir, e.Name()) == own || unix.Kill(pid, 0) != unix.ESRCH {
			continue // not one, or its cordon may still run
		}
		_ = removeTree(filepath.Join(dir, e.Name()))
	}
}

// removeTree removes dir and everything in it, as their owner: the
// directories the command made unreadable or unwritable in it (chmod 000)
// get their owner's rights back first. Nothing outside dir is changed:
// links are not followed out of it.
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	// dir itself is cordon's (the sandbox cannot replace it with a
	// link: its parent is not writable inside).
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	// WalkDir hands a directory to the function before it reads it.
	_ = fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != "." {
			_ = r.Chmod(p, 0o700)
		}
		return nil
	})
	r.Close()
	return os.RemoveAll(dir)
}
