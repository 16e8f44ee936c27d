package limits

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReuse: a group whose runs ended serves another (a session's
// commands): refused while a process is in it; then its process limit is
// lifted, the page cache left charged to it reclaimed, its peak memory
// reset, and the next run's usage, counted from the first's (Since), is
// the next run's own: the memory bomb's peak, the file written and the
// refused forks of the first run are not the second's.
func TestReuse(t *testing.T) {
	g := newGroup(t, Limits{MaxProcesses: 20, MaxMemoryMB: 512})
	// First run: 256 MiB touched, then forks past the limit.
	first := exec.Command(os.Args[0], "-test.run=^$")
	first.Env = append(os.Environ(), helperEnv+"=membomb")
	first.Stdout = nil
	stdin, err := first.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	if err := g.Add(first.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if g.Reuse() {
		t.Fatal("Reuse of a group with a process in it")
	}
	stdin.Write([]byte("go\n"))
	stdin.Close()
	if err := waitTimeout(t, first, 30*time.Second); err != nil {
		t.Fatalf("the memory bomb, 256 MiB under a limit of 512: %v", err)
	}
	bomb := exec.Command(os.Args[0], "-test.run=^$")
	bomb.Env = append(os.Environ(), helperEnv+"=forker")
	startInGroup(t, g, bomb)
	if err := waitTimeout(t, bomb, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// And leaves 64 MiB of page cache charged to the group.
	dd := exec.Command("sh", "-c", "read x; dd if=/dev/zero of="+filepath.Join(t.TempDir(), "cache")+" bs=1M count=64 2>/dev/null")
	startInGroup(t, g, dd)
	if err := waitTimeout(t, dd, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	base, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if base.ForkFailures == 0 || base.PeakMemoryBytes < 128<<20 {
		t.Fatalf("the first run's usage: %+v (want refused forks and a peak of tens of MiB)", base)
	}
	if !g.Reuse() {
		t.Fatal("Reuse refused an empty group")
	}
	if g.Limits().MaxProcesses != 0 {
		t.Errorf("the process limit is not lifted: %+v", g.Limits())
	}
	if err := g.SetMaxProcesses(20); err != nil {
		t.Fatal(err)
	}
	second := exec.Command("sh", "-c", "read x; echo small > /dev/null")
	startInGroup(t, g, second)
	if err := waitTimeout(t, second, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	u, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	own := u.Since(base)
	t.Logf("first %+v\nsecond %+v", base, own)
	if own.ForkFailures != 0 || own.OOMKills != 0 {
		t.Errorf("the second run is charged the first's refused forks or OOM kills: %+v", own)
	}
	if own.PeakMemoryBytes >= 32<<20 {
		t.Errorf("the second run's peak memory %d (the first's %d): not reset, or the first's page cache not reclaimed", own.PeakMemoryBytes, base.PeakMemoryBytes)
	}
	if own.CPUTotal >= base.CPUTotal && base.CPUTotal > 0 {
		t.Errorf("the second run's CPU %v counts the first's (%v)", own.CPUTotal, base.CPUTotal)
	}
	if base.PeakProcesses > 0 && (own.PeakProcesses != 0 || !strings.Contains(strings.Join(own.Missing, ","), "pids.peak")) {
		t.Errorf("the second run's peak processes %d, the first's %d: want unknown (pids.peak is never reset): %+v", own.PeakProcesses, base.PeakProcesses, own)
	}
	// The limit holds again once set.
	if b, err := os.ReadFile(filepath.Join(pidsDir(g), "pids.max")); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(20) {
		t.Errorf("pids.max %q %v", b, err)
	}
}

// pidsDir is the directory of g's pids controller.
func pidsDir(g *Group) string {
	if g.kind == KindCgroup1 {
		return g.dirs["pids"]
	}
	return g.dir
}
