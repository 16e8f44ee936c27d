//go:build linux

package monitor

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/enforce/seccomp"
	"golang.org/x/sys/unix"
)

// envChild names the scenario a re-executed test binary runs as the
// watched process; envDir is its directory and envPort a TCP port on
// 127.0.0.1 that the test listens on.
const (
	envChild = "CORDON_MONITOR_TEST_CHILD"
	envDir   = "CORDON_MONITOR_TEST_DIR"
	envPort  = "CORDON_MONITOR_TEST_PORT"
	envCmd   = "CORDON_MONITOR_TEST_CMD"
)

func TestMain(m *testing.M) {
	if s := os.Getenv(envChild); s == "in-chroot" {
		// TestResolvedNamesTheProcessView's chrooted child: mkdir
		// through a link, so that the monitor follows it.
		say("in-chroot", os.Mkdir("/w/l/y", 0o755))
		os.Exit(0)
	} else if s != "" {
		os.Exit(child(s))
	}
	os.Exit(m.Run())
}

// child installs the watch filter on its locked thread, hands the
// listener to the test over fd 3, waits for the test's go byte and runs
// scenario, reporting each step's errno on stdout as "step errno".
func child(scenario string) int {
	runtime.LockOSThread()
	install := seccomp.InstallWatch
	if strings.HasPrefix(scenario, "supervise") {
		install = seccomp.InstallSupervise
		// As the helper does: the supervisor, which acts without its
		// effective capabilities, reaches the /proc entries of a
		// process without capabilities only.
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			fmt.Println("capset", err)
			return 1
		}
	}
	if scenario == "creates" {
		install = seccomp.InstallTree
	}
	fd, err := install()
	if err != nil {
		fmt.Println("install", err)
		return 1
	}
	if err := unix.Sendmsg(3, []byte{'W'}, unix.UnixRights(fd), nil, 0); err != nil {
		fmt.Println("send", err)
		return 1
	}
	unix.Close(fd)
	var b [1]byte
	if _, err := unix.Read(3, b[:]); err != nil {
		return 1
	}
	dir := os.Getenv(envDir)
	switch scenario {
	case "supervise":
		superviseChild(dir, say)
		return 0
	case "supervise-opens":
		superviseOpens(dir)
		return 0
	case "calls":
		f, err := os.Open(filepath.Join(dir, "r.txt"))
		say("read", err)
		if err == nil {
			f.Close()
		}
		say("write", os.WriteFile(filepath.Join(dir, "w.txt"), []byte("x"), 0o600))
		say("rename", os.Rename(filepath.Join(dir, "w.txt"), filepath.Join(dir, "w2.txt")))
		say("symlink", os.Symlink(filepath.Join(dir, "r.txt"), filepath.Join(dir, "link")))
		f, err = os.Open(filepath.Join(dir, "link"))
		say("read-link", err)
		if err == nil {
			f.Close()
		}
		if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); !errors.Is(err, os.ErrExist) {
			say("mkdir-exists", err)
		}
		say("chdir", os.Chdir(filepath.Join(dir, "sub")))
		say("mkdir-relative", os.Mkdir("made", 0o700))
		dfd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		say("open-dir", err)
		say("unlinkat", unix.Unlinkat(dfd, "w2.txt", 0))
		_, err = unix.Open(filepath.Join(dir, "r.txt"), unix.O_PATH|unix.O_CLOEXEC, 0)
		say("o_path", err)
		c, err := net.Dial("unix", filepath.Join(dir, "s.sock"))
		say("unix", err)
		if err == nil {
			c.Close()
		}
		c, err = net.Dial("tcp", "127.0.0.1:"+os.Getenv(envPort))
		say("tcp", err)
		if err == nil {
			c.Close()
		}
		fmt.Println("exec 0")
		err = unix.Exec("/bin/true", []string{"true"}, nil)
		say("exec-failed", err)
		return 1
	case "creates", "creates-watch":
		// The command in $CORDON_MONITOR_TEST_CMD, by a shell: every
		// thread and process it starts has the filter.
		if err := os.Chdir(dir); err != nil {
			return 1
		}
		err := unix.Exec("/bin/sh", []string{"sh", "-c", os.Getenv(envCmd)}, os.Environ())
		say("exec-failed", err)
		return 1
	case "chroot":
		// The test binary again, copied into dir, in a user namespace of
		// its own and chrooted there: it makes /w/l/y, through the
		// link /w/l to /t.
		c := exec.Command("/test.bin", "-test.run=^$")
		c.Env = append(os.Environ(), envChild+"=in-chroot")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		c.SysProcAttr = &syscall.SysProcAttr{Chroot: dir, Cloneflags: syscall.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}}
		say("chroot-run", c.Run())
		return 0
	case "stopped":
		// The test stops the monitor before the second byte: the watched
		// call must then fail, not pass unwatched.
		if _, err := unix.Read(3, b[:]); err != nil {
			return 1
		}
		_, err := os.ReadFile(filepath.Join(dir, "r.txt"))
		say("read", err)
		_, err = os.Stat(filepath.Join(dir, "r.txt"))
		say("stat", err) // not watched
		return 0
	}
	return 2
}

// say reports a scenario's step on stdout as "step errno" (255: an error
// that is no errno).
func say(step string, err error) {
	var e syscall.Errno
	if err != nil && !errors.As(err, &e) {
		e = 255
	}
	fmt.Printf("%s %d\n", step, int(e))
}

// watched starts the test binary as scenario in dir, with a Monitor on its
// listener; it returns the child, the monitor, the events' collector and
// the test's end of fd 3.
func watched(t *testing.T, scenario, dir string, env ...string) (*exec.Cmd, *Monitor, *collector, *os.File, *strings.Builder) {
	t.Helper()
	return watchedWith(t, scenario, dir, Options{FollowIn: []string{dir}}, env...)
}

// watchedWith is watched with the Monitor's options opts.
func watchedWith(t *testing.T, scenario, dir string, opts Options, env ...string) (*exec.Cmd, *Monitor, *collector, *os.File, *strings.Builder) {
	t.Helper()
	col := &collector{}
	cmd, m, mine, out := startWatched(t, scenario, dir, col.add, opts, env...)
	return cmd, m, col, mine, out
}

// countedWith is watched with emit (nil: only counted) and no options.
func countedWith(t *testing.T, scenario, dir string, emit func(Event), env ...string) (*exec.Cmd, *Monitor, *os.File, *strings.Builder) {
	t.Helper()
	return startWatched(t, scenario, dir, emit, Options{}, env...)
}

// startWatched starts the test binary as scenario in dir, with a Monitor
// (emit, opts) on its listener.
func startWatched(t *testing.T, scenario, dir string, emit func(Event), opts Options, env ...string) (*exec.Cmd, *Monitor, *os.File, *strings.Builder) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "test"), os.NewFile(uintptr(fds[1]), "child")
	t.Cleanup(func() { mine.Close() })
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, envChild+"="+scenario, envDir+"="+dir)...)
	cmd.ExtraFiles = []*os.File{theirs}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf, oob := make([]byte, 8), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(fds[0], buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		t.Fatalf("receiving the listener: %v (child: %s)", err, out.String())
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		t.Fatalf("no listener from the child (%v): %s", err, out.String())
	}
	rights, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(rights) != 1 {
		t.Fatalf("no listener from the child (%v)", err)
	}
	m, err := Start(rights[0], emit, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop() })
	return cmd, m, mine, &out
}

type collector struct {
	mu  sync.Mutex
	evs []Event
}

func (c *collector) add(ev Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evs = append(c.evs, ev)
}

func (c *collector) has(op Op, path string, addr netip.AddrPort) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.evs, func(e Event) bool { return e.Op == op && e.Path == path && e.Addr == addr })
}

// fixture makes a directory (not under /tmp) with r.txt, sub/, a unix
// socket s.sock and a TCP listener on 127.0.0.1, both accepting.
func fixture(t *testing.T) (dir string, port int) {
	t.Helper()
	dir, err := os.MkdirTemp(testRoot(t), "monitor-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "r.txt"), []byte("r"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, nw := range []string{"unix", "tcp"} {
		addr := filepath.Join(dir, "s.sock")
		if nw == "tcp" {
			addr = "127.0.0.1:0"
		}
		l, err := net.Listen(nw, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		if nw == "tcp" {
			port = l.Addr().(*net.TCPAddr).Port
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	return dir, port
}

// testRoot is where the tests make their directories: the package's own
// directory's parent is the checkout, which is not under /tmp.
func testRoot(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(wd)
}

func requireWatch(t *testing.T) {
	t.Helper()
	if _, err := seccomp.WatchFilter(); err != nil {
		t.Skip(err)
	}
}

// TestEvents runs real calls under the watch filter and checks that each
// is reported once resolved, and that every call went on (its own result
// is the kernel's).
func TestEvents(t *testing.T) {
	requireWatch(t)
	dir, port := fixture(t)
	cmd, m, col, ctl, out := watched(t, "calls", dir, fmt.Sprintf("%s=%d", envPort, port))
	if _, err := ctl.Write([]byte{'g'}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v: %s", err, out.String())
	}
	select {
	case <-m.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the monitor did not see the child's end (POLLHUP)")
	}
	st := m.Stop()
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if step, errno, _ := strings.Cut(line, " "); errno != "0" {
			t.Errorf("%s failed under the monitor: errno %s", step, errno)
		}
	}
	none := netip.AddrPort{}
	for _, w := range []struct {
		op   Op
		path string
		addr netip.AddrPort
	}{
		{OpRead, filepath.Join(dir, "r.txt"), none},
		{OpWrite, filepath.Join(dir, "w.txt"), none},
		{OpWrite, filepath.Join(dir, "w2.txt"), none}, // rename's new name, and unlinkat relative to a dirfd
		{OpWrite, filepath.Join(dir, "sub", "made"), none},
		{OpRead, dir, none},
		{OpConnect, filepath.Join(dir, "s.sock"), none},
		{OpConnect, "", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))},
		{OpExec, "/bin/true", none},
	} {
		if !col.has(w.op, w.path, w.addr) {
			t.Errorf("no %s event for %q %v; got %+v", w.op, w.path, w.addr, col.evs)
		}
	}
	// Each call is named by the program that made it: the test binary,
	// then, once it executed /bin/true, true (the loader's opens).
	self := filepath.Base(os.Args[0])[:min(15, len(filepath.Base(os.Args[0])))]
	col.mu.Lock()
	sawTrue := false
	for _, ev := range col.evs {
		sawTrue = sawTrue || ev.Comm == "true"
		if ev.Comm != self && ev.Comm != "true" || ev.Op == OpExec && ev.Comm != self {
			t.Errorf("Comm %q, want %q (or true after the exec): %+v", ev.Comm, self, ev)
		}
		switch {
		case ev.Path == filepath.Join(dir, "sub"):
			t.Errorf("a mkdir of a directory that is there was reported: %+v", ev)
		case ev.Path == filepath.Join(dir, "link") && ev.Op == OpWrite && ev.Resolved != "":
			t.Errorf("symlink creates the link, it does not follow it: %+v", ev)
		case ev.Path == filepath.Join(dir, "link") && ev.Op == OpRead && ev.Resolved != filepath.Join(dir, "r.txt"):
			t.Errorf("an open through the link: Resolved %q, want the target: %+v", ev.Resolved, ev)
		}
	}
	col.mu.Unlock()
	if !sawTrue {
		t.Error("no call named by /bin/true after the exec")
	}
	if !col.has(OpRead, filepath.Join(dir, "link"), none) || !col.has(OpWrite, filepath.Join(dir, "link"), none) {
		t.Errorf("no events for the link: %+v", col.evs)
	}
	if col.has(OpRead, filepath.Join(dir, "r.txt"), none) && countPath(col, filepath.Join(dir, "r.txt")) != 1 {
		t.Errorf("r.txt reported %d times; the O_PATH open must not count", countPath(col, filepath.Join(dir, "r.txt")))
	}
	if st.Calls == 0 {
		t.Error("no calls counted")
	}
}

func countPath(c *collector, p string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.evs {
		if e.Path == p {
			n++
		}
	}
	return n
}

// TestStoppedMonitorFailsClosed: once the supervisor is gone, a watched
// call fails (ENOSYS) instead of going on unwatched; unwatched calls
// still work.
func TestStoppedMonitorFailsClosed(t *testing.T) {
	requireWatch(t)
	dir, _ := fixture(t)
	cmd, m, _, ctl, out := watched(t, "stopped", dir)
	if _, err := ctl.Write([]byte{'g'}); err != nil {
		t.Fatal(err)
	}
	m.Stop()
	if _, err := ctl.Write([]byte{'g'}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v: %s", err, out.String())
	}
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		got[k] = v
	}
	if got["read"] != fmt.Sprint(int(unix.ENOSYS)) {
		t.Errorf("read after the monitor stopped: errno %q, want ENOSYS (%d)", got["read"], int(unix.ENOSYS))
	}
	if got["stat"] != "0" {
		t.Errorf("stat (not watched): errno %q, want 0", got["stat"])
	}
}

// TestOpenOp: what an open's flags make of it.
func TestOpenOp(t *testing.T) {
	for _, tc := range []struct {
		flags int
		op    Op
		ok    bool
	}{
		{unix.O_RDONLY, OpRead, true},
		{unix.O_RDONLY | unix.O_DIRECTORY, OpRead, true},
		{unix.O_WRONLY, OpWrite, true},
		{unix.O_RDWR, OpWrite, true},
		{unix.O_RDONLY | unix.O_CREAT, OpWrite, true},
		{unix.O_RDONLY | unix.O_TRUNC, OpWrite, true},
		{unix.O_TMPFILE | unix.O_RDWR, OpWrite, true},
		{unix.O_PATH, "", false},
		{unix.O_PATH | unix.O_DIRECTORY, "", false},
	} {
		op, ok := openOp(uint64(tc.flags))
		if op != tc.op || ok != tc.ok {
			t.Errorf("openOp(%#o) = %q, %v; want %q, %v", tc.flags, op, ok, tc.op, tc.ok)
		}
	}
}

// TestResolvedNamesTheProcessView: a path followed after the call went on
// is given as Resolved only when its name, walked in the process's root,
// reaches the file followed. A /proc link's name is the kernel's, from
// the mounts up: for a process in a chroot it starts above the process's
// root, and for a file on a mount detached meanwhile (a sandbox's /tmp
// once its last process ended) it is "/" for the mount's top. CI once saw
// the latter as a denied write of /go-build... when go build removed its
// work directory from the sandbox's /tmp and ended; the chroot is that
// race made certain.
func TestResolvedNamesTheProcessView(t *testing.T) {
	requireWatch(t)
	if f, err := elf.Open(os.Args[0]); err != nil {
		t.Fatal(err)
	} else {
		dynamic := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
		f.Close()
		if dynamic {
			t.Skip("the test binary is dynamically linked (CGO_ENABLED=1): it cannot run in an empty chroot")
		}
	}
	dir, _ := fixture(t)
	root := filepath.Join(dir, "root")
	for _, d := range []string{"w", "t"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/t", filepath.Join(root, "w", "l")); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "test.bin"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, m, col, ctl, out := watchedWith(t, "chroot", root, Options{FollowIn: []string{"/"}})
	if _, err := ctl.Write([]byte{'g'}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "in-chroot 0") {
		t.Fatalf("the chrooted child: %v: %s", err, out.String())
	}
	<-m.Done()
	m.Stop()
	if _, err := os.Stat(filepath.Join(root, "t", "y")); err != nil {
		t.Fatalf("the chrooted mkdir through the link did not happen: %v", err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	saw := false
	for _, ev := range col.evs {
		if ev.Path == "/w/l/y" {
			saw = true
		}
		if strings.HasPrefix(ev.Resolved, dir) {
			t.Errorf("Resolved names the file from above the process's root: %+v", ev)
		}
	}
	if !saw {
		t.Errorf("no event for the chrooted mkdir of /w/l/y: %+v", col.evs)
	}
}
