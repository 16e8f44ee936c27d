package limits

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// helperEnv selects a child role when the test binary re-executes itself.
const helperEnv = "LIMITS_TEST_HELPER"

// sink keeps the memory bomb's allocations reachable.
var sink [][]byte

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "membomb":
		memBomb()
		return
	case "forker":
		// Waits for a line on stdin, then starts 40 sleeps, the refused
		// ones skipped, and waits for those that started: no orphan.
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		var started []*exec.Cmd
		for range 40 {
			c := exec.Command("sleep", "0.2")
			if c.Start() == nil {
				started = append(started, c)
			}
		}
		for _, c := range started {
			_ = c.Wait()
		}
		fmt.Println(len(started), "started")
		return
	case "leak":
		// A crashed run: create a group, print its paths, exit without Close.
		g, err := New("leak", Limits{MaxProcesses: 5})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(strings.Join(g.Paths(), "\n"))
		os.Exit(0)
	case "leakbusy":
		// A crashed run whose sandbox lives on: a group holding a
		// process, printed first, then the group's paths.
		g, err := New("leakbusy", Limits{MaxProcesses: 5})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		sleep := exec.Command("sleep", "300")
		if err := sleep.Start(); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		if err := g.Add(sleep.Process.Pid); err != nil {
			fmt.Println("error:", err)
			_ = sleep.Process.Kill()
			os.Exit(1)
		}
		fmt.Println(sleep.Process.Pid)
		fmt.Println(strings.Join(g.Paths(), "\n"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// memBomb waits for a line on stdin (the parent moves it into the group
// meanwhile), then touches up to 256 MiB in 1 MiB chunks. It never goes
// beyond 256 MiB even when no limit stops it.
func memBomb() {
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	for i := 1; i <= 256; i++ {
		b := make([]byte, 1<<20)
		for j := range len(b) / 4096 {
			b[j*4096] = 1
		}
		sink = append(sink, b)
		if i%16 == 0 {
			fmt.Printf("%d MiB\n", i)
		}
	}
	fmt.Println("survived")
	os.Exit(0)
}

// hostHasV1 says, independently of the package, whether this process can
// write into its own cgroup in the v1 pids and memory hierarchies at their
// standard mount points.
func hostHasV1() (bool, string) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return false, err.Error()
	}
	paths := map[string]string{}
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 {
			for c := range strings.SplitSeq(f[1], ",") {
				paths[c] = f[2]
			}
		}
	}
	for _, c := range []string{"pids", "memory"} {
		p, ok := paths[c]
		if !ok {
			return false, "no v1 " + c + " hierarchy in /proc/self/cgroup"
		}
		d := filepath.Join("/sys/fs/cgroup", c, p)
		if err := unix.Access(filepath.Join(d, "cgroup.procs"), unix.W_OK); err != nil {
			return false, fmt.Sprintf("%s not writable: %v", d, err)
		}
	}
	return true, ""
}

// newGroup creates a group or skips the test when the host has no usable
// cgroup. Under CI=true it fails instead when the host has writable v1
// pids and memory hierarchies the package did not use.
func newGroup(t *testing.T, l Limits) *Group {
	t.Helper()
	g, err := New(t.Name(), l)
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("New: %v", err)
		}
		if has, _ := hostHasV1(); has && testenv.CI() {
			t.Fatalf("host has writable cgroup v1 pids and memory, but New fell back: %v", err)
		} else if has {
			t.Skipf("host seems to have writable cgroup v1 pids/memory but New could not use them (set CI=true to fail): %v", err)
		}
		t.Skipf("no usable cgroup on this host (uid %d): %v", os.Geteuid(), err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	t.Logf("kind %s: %s", g.Kind(), g.Describe())
	return g
}

// startInGroup starts sh -c script, which must begin with `read x`, puts it
// in g (through CgroupFD on v2, Add otherwise) and releases it.
func startInGroup(t *testing.T, g *Group, cmd *exec.Cmd) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if fd, ok := g.FD(); ok {
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if _, ok := g.FD(); !ok {
		if err := g.Add(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	pids, err := g.Pids()
	if err != nil || len(pids) != 1 || pids[0] != cmd.Process.Pid {
		t.Fatalf("group holds %v (%v), want only %d", pids, err, cmd.Process.Pid)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
}

func waitTimeout(t *testing.T, cmd *exec.Cmd, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		t.Fatalf("child did not finish within %v", d)
		return nil
	}
}

// gone reports whether pid has exited (or is a zombie).
func gone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

func TestForkBombContained(t *testing.T) {
	const max = 20
	g := newGroup(t, Limits{MaxProcesses: max})
	count := filepath.Join(t.TempDir(), "count")
	script := `read x; n=0; for i in $(seq 500); do sleep 5 & n=$((n+1)); echo $n > ` + count + `; done; wait`
	cmd := exec.Command("sh", "-c", script)
	// A file, not a pipe: the sleeps inherit it and Wait must not wait
	// for them.
	errFile := filepath.Join(t.TempDir(), "stderr")
	f, err := os.Create(errFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.Stderr = f
	startInGroup(t, g, cmd)
	err = waitTimeout(t, cmd, 20*time.Second)
	stderr, _ := os.ReadFile(errFile)

	data, _ := os.ReadFile(count)
	started, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	u, uerr := g.Usage()
	if uerr != nil {
		t.Fatal(uerr)
	}
	t.Logf("sh: %v; stderr %q; started %d; usage %+v", err, strings.TrimSpace(string(stderr)), started, u)
	if started >= max || started == 0 {
		t.Errorf("started %d sleeps, want 1..%d", started, max-1)
	}
	if !strings.Contains(string(stderr), "fork") {
		t.Errorf("sh did not report a failed fork")
	}
	if u.ForkFailures == 0 {
		t.Errorf("pids.events reports no refused fork")
	}
	if u.Processes > max || u.PeakProcesses > max {
		t.Errorf("processes %d, peak %d, limit %d", u.Processes, u.PeakProcesses, max)
	}
	if u.Processes < started/2 {
		t.Errorf("only %d processes left in the group, %d sleeps were started", u.Processes, started)
	}

	pids, _ := g.Pids()
	begin := time.Now()
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		for !gone(p) && time.Since(begin) < 2*time.Second {
			time.Sleep(10 * time.Millisecond)
		}
		if !gone(p) {
			t.Errorf("pid %d still alive after Kill", p)
		}
	}
	left, _ := g.Pids()
	if el := time.Since(begin); el > 2*time.Second || len(left) > 0 {
		t.Errorf("after Kill (%v): %d processes left", el, len(left))
	}
	paths := g.Paths()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(begin); el > 2*time.Second {
		t.Errorf("Kill+Close took %v", el)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after Close: %v", p, err)
		}
	}
}

func TestMemoryBombContained(t *testing.T) {
	const maxMB = 64
	g := newGroup(t, Limits{MaxMemoryMB: maxMB})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=membomb", "GOGC=off")
	var out strings.Builder
	cmd.Stdout = &out
	startInGroup(t, g, cmd)
	err := waitTimeout(t, cmd, 30*time.Second)
	u, uerr := g.Usage()
	if uerr != nil {
		t.Fatal(uerr)
	}
	t.Logf("child: %v; output %q; usage %+v", err, strings.Fields(out.String()), u)
	if strings.Contains(out.String(), "survived") {
		t.Fatalf("memory bomb allocated 256 MiB under a %d MiB limit", maxMB)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child did not fail: %v", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("child ended with %v, want SIGKILL from the OOM killer", err)
	}
	if !u.OOMKilled() {
		t.Errorf("Usage reports no OOM kill: %+v", u)
	}
	// The peak may pass the limit by a few pages: the kernel charges
	// before it reclaims or OOM-kills (seen: one page over on cgroup v1).
	if u.PeakMemoryBytes > maxMB<<20+1<<20 || u.PeakMemoryBytes < 16<<20 {
		t.Errorf("peak memory %d MiB, limit %d MiB", u.PeakMemoryBytes>>20, maxMB)
	}
	// The host (this process) is unaffected: it still runs a command fast.
	begin := time.Now()
	if err := exec.Command("true").Run(); err != nil || time.Since(begin) > time.Second {
		t.Errorf("host slow or failing after the bomb: %v in %v", err, time.Since(begin))
	}
}

func TestKillCloseUsage(t *testing.T) {
	g := newGroup(t, Limits{MaxProcesses: 50, MaxMemoryMB: 128, MaxCPUSeconds: 10})
	cmd := exec.Command("sh", "-c", "read x; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 30 & sleep 30 & sleep 30 & wait")
	startInGroup(t, g, cmd)
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids, _ := g.Pids()
		if len(pids) >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group holds %v, want sh and 3 sleeps", pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	u, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("usage %+v", u)
	if u.Processes != 4 {
		t.Errorf("Processes = %d, want 4", u.Processes)
	}
	if u.PeakMemoryBytes == 0 || u.PeakMemoryBytes > 128<<20 {
		t.Errorf("PeakMemoryBytes = %d", u.PeakMemoryBytes)
	}
	if u.OOMKilled() || u.ForkFailures != 0 {
		t.Errorf("unexpected OOM or fork failure: %+v", u)
	}
	if !strings.Contains(strings.Join(u.Missing, ","), "cpu") && u.CPUTotal <= 0 {
		t.Errorf("CPUTotal = %v although CPU accounting is available", u.CPUTotal)
	}
	if !strings.Contains(g.Describe(), "RLIMIT_CPU") {
		t.Errorf("Describe does not mention RLIMIT_CPU: %s", g.Describe())
	}

	begin := time.Now()
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	werr := waitTimeout(t, cmd, 2*time.Second)
	if pids, _ := g.Pids(); len(pids) != 0 || time.Since(begin) > 2*time.Second {
		t.Errorf("after Kill: %v in %v", pids, time.Since(begin))
	}
	if werr == nil {
		t.Errorf("sh exited cleanly after Kill")
	}
	paths := g.Paths()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after Close", p)
		}
	}
	if _, ok := g.FD(); ok {
		t.Errorf("FD still reported after Close")
	}
}

func TestNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		n, err := uniqueName("run/1 x")
		if err != nil {
			t.Fatal(err)
		}
		if seen[n] {
			t.Fatalf("duplicate name %s", n)
		}
		seen[n] = true
		want := "cordon-run_1_x-" + strconv.Itoa(os.Getpid()) + "-"
		if !strings.HasPrefix(n, want) || strings.ContainsAny(n, "/ ") {
			t.Fatalf("name %q, want prefix %q", n, want)
		}
	}
	if n, _ := uniqueName(".."); strings.Contains(n, "..") {
		t.Errorf("name %q keeps ..", n)
	}
}

func TestGroupsDistinct(t *testing.T) {
	a := newGroup(t, Limits{MaxProcesses: 5})
	b := newGroup(t, Limits{MaxProcesses: 5})
	if a.Name() == b.Name() || a.Paths()[0] == b.Paths()[0] {
		t.Errorf("two groups share %s", a.Name())
	}
}

// TestKindOrFallback runs everywhere: it either gets a cgroup or checks the
// typed fallback.
func TestKindOrFallback(t *testing.T) {
	g, err := New("kind", Limits{MaxProcesses: 10, MaxMemoryMB: 64, MaxCPUSeconds: 5})
	if g == nil {
		t.Fatalf("New returned no group: %v", err)
	}
	defer g.Close()
	t.Logf("uid %d: kind %s: %s (err %v)", os.Geteuid(), g.Kind(), g.Describe(), err)
	if err == nil {
		if g.Kind() == KindNone {
			t.Fatal("kind none without an error")
		}
		return
	}
	var ue *UnavailableError
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &ue) || len(ue.Reasons) != 2 {
		t.Fatalf("error %v is not a two-reason UnavailableError", err)
	}
	if has, _ := hostHasV1(); has && testenv.CI() {
		t.Fatalf("host has writable cgroup v1 pids and memory, but New fell back: %v", err)
	}
	if g.Kind() != KindNone || g.Name() != "" || len(g.Paths()) != 0 {
		t.Errorf("fallback group: kind %s name %q paths %v", g.Kind(), g.Name(), g.Paths())
	}
	d := g.Describe()
	for _, w := range []string{"none:", "rlimits", "RLIMIT_NPROC", "RLIMIT_CPU"} {
		if !strings.Contains(d, w) {
			t.Errorf("Describe %q lacks %q", d, w)
		}
	}
	if _, ok := g.FD(); ok {
		t.Error("FD on kind none")
	}
	if err := g.Add(os.Getpid()); err != nil {
		t.Errorf("Add on kind none: %v", err)
	}
	if err := g.Kill(); err != nil {
		t.Errorf("Kill on kind none: %v", err)
	}
	if u, err := g.Usage(); err != nil || len(u.Missing) == 0 {
		t.Errorf("Usage on kind none: %+v %v", u, err)
	}
}

// TestFallbackReasons feeds New a host whose cgroup2 tree lacks the
// controllers and whose v1 hierarchies are not writable.
func TestFallbackReasons(t *testing.T) {
	dir := t.TempDir()
	unified := filepath.Join(dir, "unified")
	pids := filepath.Join(dir, "pids")
	for _, d := range []string{unified, pids} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(unified, "cgroup.controllers"), []byte("cpu hugetlb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mi := fmt.Sprintf("41 31 0:38 / %s rw,relatime - cgroup2 cgroup2 rw\n"+
		"39 31 0:36 / %s rw,relatime - cgroup cgroup rw,pids\n", unified, pids)
	cg := "8:pids:/\n0::/\n"
	g, err := newFrom(host{mountinfo: []byte(mi), cgroup: []byte(cg)}, "x", Limits{MaxProcesses: 3}, false)
	var ue *UnavailableError
	if !errors.As(err, &ue) || g == nil || g.Kind() != KindNone {
		t.Fatalf("got %v, %v", g, err)
	}
	if !strings.Contains(ue.Reasons[0], "memory, pids not available") || !strings.Contains(ue.Reasons[1], "memory") {
		t.Errorf("reasons %q", ue.Reasons)
	}
	// pids was created and must have been removed again when memory failed.
	if ents, _ := os.ReadDir(pids); len(ents) != 0 {
		t.Errorf("leftover %v in %s", ents, pids)
	}
}

func TestParse(t *testing.T) {
	mi := `35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
41 31 0:38 /sub /sys/fs/cgroup/uni\040fied rw,relatime - cgroup2 cgroup2 rw
22 1 0:21 / /proc rw - proc proc rw
`
	ms := CgroupMounts([]byte(mi))
	if len(ms) != 3 || ms[1].Opts[2] != "cpuacct" || ms[2].Point != "/sys/fs/cgroup/uni fied" || ms[2].Root != "/sub" {
		t.Fatalf("parseMounts: %+v", ms)
	}
	self := SelfCgroups([]byte("4:memory:/a/b\n2:cpu,cpuacct:/\n0::/sub/x\n"))
	if self["memory"] != "/a/b" || self["cpuacct"] != "/" || self[""] != "/sub/x" {
		t.Fatalf("selfPaths: %v", self)
	}
	if d, ok := dirFor(ms[2], "/sub/x"); !ok || d != "/sys/fs/cgroup/uni fied/x" {
		t.Errorf("dirFor = %q %v", d, ok)
	}
	if _, ok := dirFor(ms[2], "/other"); ok {
		t.Error("dirFor accepted a path outside the mount root")
	}
}

func TestCleanupLeftover(t *testing.T) {
	live := newGroup(t, Limits{MaxProcesses: 5}) // also skips without cgroups
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=leak")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("leaking child: %v: %s", err, out)
	}
	leaked := strings.Fields(string(out))
	if len(leaked) == 0 {
		t.Fatal("leaking child printed no paths")
	}
	t.Cleanup(func() {
		for _, p := range leaked {
			_ = unix.Rmdir(p)
		}
	})
	// Too young: kept.
	if _, err := Cleanup(time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, p := range leaked {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("Cleanup(1h) removed young %s", p)
		}
	}
	n, err := Cleanup(0)
	if err != nil {
		t.Fatal(err)
	}
	if n < len(leaked) {
		t.Errorf("Cleanup removed %d directories, want at least %d", n, len(leaked))
	}
	for _, p := range leaked {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("leftover %s survived Cleanup", p)
		}
	}
	// The group of a live creator (this test) is never touched, empty or not.
	for _, p := range live.Paths() {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("Cleanup removed the live group %s", p)
		}
	}
}

// TestCleanupKillsLeftProcesses: the group of a cordon killed with SIGKILL
// that still holds processes (nothing else will end them: on the
// Landlock-only backend no pid namespace dies with cordon) is killed and
// removed by the sweep once old enough.
func TestCleanupKillsLeftProcesses(t *testing.T) {
	newGroup(t, Limits{MaxProcesses: 5}) // skips without cgroups
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=leakbusy")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("leaking child: %v: %s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) < 2 {
		t.Fatalf("leaking child printed %q", out)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatalf("leaking child printed %q", out)
	}
	leaked := f[1:]
	t.Cleanup(func() {
		_ = unix.Kill(pid, unix.SIGKILL)
		for _, p := range leaked {
			_ = unix.Rmdir(p)
		}
	})
	if _, err := Cleanup(time.Hour); err != nil {
		t.Fatal(err)
	}
	if unix.Kill(pid, 0) != nil {
		t.Fatal("Cleanup(1h) killed the process of a young group")
	}
	var n int
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, err := Cleanup(0)
		if err != nil {
			t.Fatal(err)
		}
		n += m
		// Its reaper (pid 1 here) may take its time under load: a later
		// sweep removes what this one could not.
		if n >= len(leaked) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(b), ") Z ") {
		t.Errorf("the left process %d survived Cleanup: %s", pid, b)
	}
	for _, p := range leaked {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the left group %s survived Cleanup", p)
		}
	}
}

// TestContains: a process is in the group only after Add, and what it forks
// afterwards is born inside.
func TestContains(t *testing.T) {
	g := newGroup(t, Limits{MaxProcesses: 16})
	cmd := exec.Command("sh", "-c", "read x; sleep 30 & echo $!; wait")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Kill(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if in, err := g.Contains(cmd.Process.Pid); err != nil || in {
		t.Fatalf("Contains before Add = %v, %v; want false", in, err)
	}
	if in, err := g.Contains(os.Getpid()); err != nil || in {
		t.Fatalf("Contains(self) = %v, %v; want false", in, err)
	}
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if in, err := g.Contains(cmd.Process.Pid); err != nil || !in {
		t.Fatalf("Contains after Add = %v, %v; want true", in, err)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	var child int
	if _, err := fmt.Fscan(out, &child); err != nil {
		t.Fatal(err)
	}
	if in, err := g.Contains(child); err != nil || !in {
		t.Fatalf("Contains(child forked after Add) = %v, %v; want true", in, err)
	}
	if _, err := g.Contains(0); err == nil {
		t.Error("Contains(0) did not fail")
	}
}

// TestSetMaxProcesses: a group made without a process limit gets one later
// (a launcher's set-up runs first), and it holds: a second task is
// refused once the limit is one.
func TestSetMaxProcesses(t *testing.T) {
	g := newGroup(t, Limits{MaxMemoryMB: 256})
	if err := g.SetMaxProcesses(0); err == nil {
		t.Error("SetMaxProcesses(0) accepted")
	}
	sleeper := exec.Command("sleep", "10")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	if err := g.Add(sleeper.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := g.SetMaxProcesses(1); err != nil {
		t.Fatalf("SetMaxProcesses(1): %v", err)
	}
	if got := g.Limits().MaxProcesses; got != 1 {
		t.Errorf("Limits().MaxProcesses = %d, want 1", got)
	}
	// A shell moved in forks: refused, since the sleeper is the one task.
	sh := exec.Command("sh", "-c", `read x; /bin/true && echo forked`)
	in, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &strings.Builder{}
	sh.Stdout, sh.Stderr = out, out
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	addErr := g.Add(sh.Process.Pid)
	in.Close()
	_ = sh.Wait()
	if addErr != nil {
		t.Fatalf("moving the shell in: %v", addErr)
	}
	if strings.Contains(out.String(), "forked") {
		t.Errorf("a fork over pids.max 1 succeeded: %q", out)
	}
}
