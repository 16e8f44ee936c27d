//go:build linux

package launch

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deadPid returns the pid of a process that has ended and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// running reports whether pid is a process that has not ended (a zombie
// has).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z' && s[i+2] != 'X'
}

// waitEnded waits up to d for every pid to end, and returns those that
// did not.
func waitEnded(pids []int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		var left []int
		for _, p := range pids {
			if running(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSweepJournalsKillsLeftGroup: on the Landlock-only backend, a cordon
// killed with SIGKILL takes only the command with it (Pdeathsig); what the
// command started lives on in its process group. The next run finds the
// killed run's journal and kills that group, and nothing else: not a
// process of another group.
func TestSweepJournalsKillsLeftGroup(t *testing.T) {
	state := t.TempDir()
	start := time.Now()
	// The command: a shell leading its own group, with two children.
	cmd := exec.Command("sh", "-c", "sleep 301 & sleep 302 & echo started; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	other := exec.Command("sleep", "303")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = other.Process.Kill()
		_ = other.Wait()
	})
	buf := make([]byte, 8)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	boot, ok := bootTime()
	if !ok {
		t.Fatal("no CLOCK_BOOTTIME")
	}
	members := runGroup{pgid: pgid, boot: boot, start: start}.members()
	if len(members) != 3 {
		t.Fatalf("the command's group: %v, want the shell and two sleeps", members)
	}
	// cordon dies, and the command with it (its Pdeathsig).
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	dead := deadPid(t)
	j, _ := json.Marshal(journal{Pid: dead, Start: start.UnixNano(), Pgid: pgid})
	if err := os.MkdirAll(journalDir(state), 0o700); err != nil {
		t.Fatal(err)
	}
	jf := filepath.Join(journalDir(state), fmt.Sprintf("%d-0a1b2c3d4e5f.json", dead))
	if err := os.WriteFile(jf, j, 0o600); err != nil {
		t.Fatal(err)
	}
	if lines := sweepJournals(state, nil); len(lines) > 0 {
		t.Errorf("warnings for a journal without roots: %q", lines)
	}
	if left := waitEnded(members, 3*time.Second); len(left) > 0 {
		t.Errorf("processes of the killed run's group left after the next run's sweep: %v", left)
	}
	if !running(other.Process.Pid) {
		t.Error("the sweep killed a process of another group")
	}
	if _, err := os.Lstat(jf); err == nil {
		t.Error("the killed run's journal is left")
	}
}

// TestSweepJournalsUnreadable: a journal that cannot be read whole is
// removed only when its run (the pid its name begins with) is gone: one
// being written belongs to a run going on, which another run's sweep
// removed, so that when that run was killed nothing cleaned up after it.
func TestSweepJournalsUnreadable(t *testing.T) {
	state := t.TempDir()
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	if err := os.MkdirAll(journalDir(state), 0o700); err != nil {
		t.Fatal(err)
	}
	writing := filepath.Join(journalDir(state), fmt.Sprintf("%d-0a1b2c3d4e5f.json", live.Process.Pid))
	broken := filepath.Join(journalDir(state), fmt.Sprintf("%d-0a1b2c3d4e5f.json", deadPid(t)))
	for _, p := range []string{writing, broken} {
		if err := os.WriteFile(p, []byte(`{"pid":`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sweepJournals(state, nil)
	if _, err := os.Lstat(writing); err != nil {
		t.Errorf("the journal of a run going on, not yet whole, was removed: %v", err)
	}
	if _, err := os.Lstat(broken); err == nil {
		t.Error("the unreadable journal of a run that is gone is left")
	}
	// A journal appears whole.
	p := writeJournal(state, journal{Start: time.Now().UnixNano(), Roots: []string{"/x"}, Pgid: 7})
	var j journal
	if b, err := os.ReadFile(p); err != nil || json.Unmarshal(b, &j) != nil || j.Pid != os.Getpid() || j.Pgid != 7 {
		t.Errorf("journal %s: %+v, %v", p, j, err)
	}
}

// TestSweepPrivateTmps: the private /tmp of a Landlock-only run whose
// cordon was killed is removed by the next run, even where the command
// took its owner's rights away (chmod 000); those of runs going on, this
// run's and what is no private /tmp stay.
func TestSweepPrivateTmps(t *testing.T) {
	dir := t.TempDir()
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	dead := filepath.Join(dir, fmt.Sprintf("%d-0a1b2c3d4e5f", deadPid(t)))
	keep := []string{
		filepath.Join(dir, fmt.Sprintf("%d-0a1b2c3d4e5f", live.Process.Pid)),
		filepath.Join(dir, fmt.Sprintf("%d-0a1b2c3d4e5f", os.Getpid())),
		filepath.Join(dir, "notes"),
	}
	own := filepath.Join(dir, fmt.Sprintf("%d-ffffffffffff", deadPid(t))) // this run's
	for _, d := range append(keep, dead, own) {
		if err := os.MkdirAll(filepath.Join(d, "a", "b"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// What the command left: files in directories its owner cannot list
	// or write, and a link out of the tree.
	outside := t.TempDir()
	for _, p := range []string{filepath.Join(dead, "a", "b", "f"), filepath.Join(dead, "a", "g")} {
		if err := os.WriteFile(p, []byte("x"), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dead, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(outside, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(outside, 0o700) })
	for _, d := range []string{filepath.Join(dead, "a", "b"), filepath.Join(dead, "a"), dead} {
		if err := os.Chmod(d, 0); err != nil {
			t.Fatal(err)
		}
	}
	sweepPrivateTmps(dir, own)
	if _, err := os.Lstat(dead); err == nil {
		t.Errorf("the killed run's private /tmp %s is left", dead)
		_ = removeTree(dead)
	}
	for _, d := range append(keep, own) {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o500 {
		t.Errorf("the directory a link in the tree points to changed: %v %v", fi.Mode(), err)
	}
}

// TestRemoveTree: the private /tmp is removed after the run whatever the
// command did to its rights.
func TestRemoveTree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tmp")
	deep := filepath.Join(dir, "x", "y")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deep, "f"), nil, 0); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{deep, filepath.Dir(deep)} {
		if err := os.Chmod(d, 0o100); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeTree(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Fatal("left")
	}
	if err := removeTree(dir); err != nil && !os.IsNotExist(err) {
		t.Errorf("removing what is gone: %v", err)
	}
}

// TestSweepJournalsGroupTakenAgain: the process group number in a killed
// run's journal may lead another group by the time the next run sweeps
// (the killed run's group emptied, and the pid numbers went round): a
// process of that other group started after the killed run, and is this
// user's, yet it is not the run's. The journal's leader start time and
// session tell them apart; the run's own group is still killed.
func TestSweepJournalsGroupTakenAgain(t *testing.T) {
	boot, ok := bootTime()
	if !ok {
		t.Fatal("no CLOCK_BOOTTIME")
	}
	cases := []struct {
		name string
		// journal fields from the group leader's own
		leaderStart func(procStat) uint64
		sid         func(procStat) int
		killed      bool
	}{
		{"another leader", func(ps procStat) uint64 { return ps.ticks + 1 }, func(ps procStat) int { return ps.sid }, false},
		{"another session", func(ps procStat) uint64 { return ps.ticks }, func(ps procStat) int { return ps.sid + 1 }, false},
		{"the run's group", func(ps procStat) uint64 { return ps.ticks }, func(ps procStat) int { return ps.sid }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			start := time.Now()
			g := exec.Command("sleep", "304")
			g.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := g.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = g.Process.Kill(); _ = g.Wait() })
			ps, err := readProcStat(g.Process.Pid, boot)
			if err != nil {
				t.Fatal(err)
			}
			dead := deadPid(t)
			// By name, so that the test builds without the fields.
			j, _ := json.Marshal(map[string]any{
				"pid": dead, "start_unix_nano": start.Add(-time.Minute).UnixNano(), "pgid": g.Process.Pid,
				"leader_start_ticks": c.leaderStart(ps), "sid": c.sid(ps),
			})
			if err := os.MkdirAll(journalDir(state), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(journalDir(state), fmt.Sprintf("%d-0a1b2c3d4e5f.json", dead)), j, 0o600); err != nil {
				t.Fatal(err)
			}
			sweepJournals(state, nil)
			left := waitEnded([]int{g.Process.Pid}, time.Second)
			if killed := len(left) == 0; killed != c.killed {
				t.Errorf("the process of group %d killed: %v, want %v", g.Process.Pid, killed, c.killed)
			}
		})
	}
}
