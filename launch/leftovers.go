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

// killLeftGroup kills what is left of the process group pgid, the command's
// of a run that started at start and whose cordon was killed: without a
// pid namespace only the command itself died with cordon (Pdeathsig); what
// it started lives on in its group. Only this user's processes that
// started since the run began are killed, each through a pidfd checked to
// still name the same process; a pgid taken again since (the group was
// empty, and the pid numbers went round) by processes of this user is the
// one case it cannot tell apart. Processes that left the group (setsid)
// are not found: a cgroup holding the sandbox is what ends those
// (limits.Cleanup).
func killLeftGroup(pgid int, start time.Time) {
	boot, ok := bootTime()
	if !ok || pgid <= 1 {
		return
	}
	deadline := time.Now().Add(leftGroupBudget)
	for range leftGroupRounds {
		found := false
		for _, pid := range groupMembers(pgid, boot, start) {
			found = true
			killExact(pid, pgid, boot, start)
		}
		if !found || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// groupMembers lists this user's processes in process group pgid that
// started at or after start (less startSlack).
func groupMembers(pgid int, boot, start time.Time) []int {
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
		if sameRunProcess(pid, pgid, boot, start) {
			out = append(out, pid)
		}
	}
	return out
}

// sameRunProcess reports whether pid is this user's, in process group
// pgid, and started at or after start (less startSlack).
func sameRunProcess(pid, pgid int, boot, start time.Time) bool {
	var st unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid), &st) != nil || int(st.Uid) != os.Geteuid() {
		return false
	}
	pg, began, zombie, err := procGroupStart(pid, boot)
	return err == nil && !zombie && pg == pgid && !began.Before(start.Add(-startSlack))
}

// killExact sends SIGKILL to pid through a pidfd, after checking through
// it that pid is still the process sameRunProcess found.
func killExact(pid, pgid int, boot, start time.Time) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone (or no pidfds: Linux 5.3)
	}
	defer unix.Close(fd)
	if sameRunProcess(pid, pgid, boot, start) {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
}

// procGroupStart reads the process group and start time of pid from
// /proc/PID/stat, and whether it has ended (a zombie, which its reaper
// has yet to wait for).
func procGroupStart(pid int, boot time.Time) (pgid int, started time.Time, zombie bool, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, time.Time{}, false, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, time.Time{}, false, errors.New("malformed stat")
	}
	// Fields from the state (3rd) on: pgrp is the 5th, starttime the
	// 22nd.
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, time.Time{}, false, errors.New("malformed stat")
	}
	if pgid, err = strconv.Atoi(f[2]); err != nil {
		return 0, time.Time{}, false, err
	}
	ticks, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, time.Time{}, false, err
	}
	// USER_HZ is 100 on every Linux architecture Go supports.
	return pgid, boot.Add(time.Duration(ticks) * (time.Second / 100)), f[0] == "Z" || f[0] == "X", nil
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
