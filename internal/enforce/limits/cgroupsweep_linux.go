package limits

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Cleanup removes leftover cordon-* groups of crashed runs (a cordon killed
// with SIGKILL cannot remove its own) under our own cgroups: directories
// older than olderThan whose creator, named by the pid in the group's name,
// is gone. A group that still holds processes (the Landlock-only backend
// has no pid namespace that would die with cordon) is killed first, and
// removed once its processes are reaped, by this sweep (it waits up to
// reapWait) or a later one. It returns how many it removed. It is cheap
// (one directory listing per hierarchy) and never touches a group whose
// creator still runs.
func Cleanup(olderThan time.Duration) (int, error) {
	h, err := readHost()
	if err != nil {
		return 0, err
	}
	self := SelfCgroups(h.cgroup)
	var parents []string
	for _, m := range CgroupMounts(h.mountinfo) {
		keys := []string{""}
		if m.FSType == "cgroup" {
			keys = m.Opts
		}
		for _, k := range keys {
			if cg, ok := self[k]; ok && (k == "" && m.FSType == "cgroup2" || k != "" && slices.Contains(v1Controllers, k)) {
				if p, ok := dirFor(m, cg); ok && !slices.Contains(parents, p) {
					parents = append(parents, p)
				}
			}
		}
	}
	n := 0
	cutoff := time.Now().Add(-olderThan)
	for _, p := range parents {
		ents, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), "cordon-") {
				continue
			}
			// The owner first: a signal 0 costs less than a stat of a
			// cgroup directory, which takes kernfs's lock that every run
			// creating or removing its group contends for, and at 100
			// runs at once every sweep finds about 100 live groups.
			if ownerAlive(e.Name()) {
				continue
			}
			d := filepath.Join(p, e.Name())
			fi, err := e.Info()
			if err != nil || fi.ModTime().After(cutoff) {
				continue
			}
			procs, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			if err != nil {
				continue
			}
			if len(bytes.TrimSpace(procs)) > 0 {
				killLeft(d)
			}
			if removeReaped(d) {
				n++
			}
		}
	}
	return n, nil
}

// reapWait bounds how long Cleanup waits for the processes it killed in a
// group to be reaped (by whoever inherited them), so that it can remove
// the group.
const reapWait = 500 * time.Millisecond

// killLeftRounds bounds killLeft's rounds without cgroup.kill: what a
// round misses (forked meanwhile) the next kills, and what is left then a
// later sweep.
const killLeftRounds = 5

// killLeft kills the processes in the group directory d, of a cordon that
// is gone: by cgroup.kill where the kernel has it (cgroup v2, Linux 5.14),
// else by pid, in a few rounds.
func killLeft(d string) {
	if exists(filepath.Join(d, "cgroup.kill")) && writeFile(filepath.Join(d, "cgroup.kill"), "1") == nil {
		return
	}
	for range killLeftRounds {
		procs, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		f := strings.Fields(string(procs))
		if err != nil || len(f) == 0 {
			return
		}
		for _, s := range f {
			if pid, err := strconv.Atoi(s); err == nil && pid > 0 {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		time.Sleep(retrySleep)
	}
}

// removeReaped removes the group directory d once nothing is left in it,
// waiting up to reapWait for killed processes to be reaped.
func removeReaped(d string) bool {
	deadline := time.Now().Add(reapWait)
	for {
		err := unix.Rmdir(d)
		if err == nil {
			return true
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return false
		}
		time.Sleep(retrySleep)
	}
}

// ownerAlive reports whether the process that created the group named
// name (cordon-[NAME-]PID-HEX, see uniqueName) may still run. A name
// without a pid counts as dead: the age check alone guards it.
func ownerAlive(name string) bool {
	f := strings.Split(name, "-")
	if len(f) < 3 {
		return false
	}
	pid, err := strconv.Atoi(f[len(f)-2])
	if err != nil || pid <= 0 {
		return false
	}
	err = unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
