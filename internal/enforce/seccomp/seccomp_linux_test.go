//go:build linux && (amd64 || arm64)

package seccomp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

const (
	envCase   = "CORDON_SECCOMP_CHILD"
	envFilter = "CORDON_SECCOMP_FILTER"
	envStrict = "CORDON_SECCOMP_STRICT"
	envNet    = "CORDON_SECCOMP_DENY_NETWORK"
	envUnix   = "CORDON_SECCOMP_DENY_UNIX"
	envStream = "CORDON_SECCOMP_STREAM_ONLY"
	envOther  = "CORDON_SECCOMP_DENY_OTHER_FAMILIES"
	noSuchPid = 0x3ffffff0
)

func TestMain(m *testing.M) {
	if c := os.Getenv(envCase); c != "" {
		os.Exit(childMain(c))
	}
	os.Exit(m.Run())
}

// childCase is run in a re-executed test binary: pre before Install, run after.
type childCase struct {
	pre func()
	run func(out func(key string, errno syscall.Errno))
}

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if e, ok := err.(syscall.Errno); ok {
		return e
	}
	if pe, ok := err.(*os.PathError); ok {
		return errnoOf(pe.Err)
	}
	return syscall.Errno(0xffff)
}

var threadReady = make(chan struct{})
var threadGo = make(chan struct{})
var threadResults = make(chan map[string]syscall.Errno)

const nThreads = 4

func statusField(path, field string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "ERR"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "MISSING"
}

var childCases = map[string]childCase{
	// streams: which internet sockets socket(2) still creates by type
	// and protocol (StreamOnly), and a TCP connection over loopback.
	"streams": {run: func(out func(string, syscall.Errno)) {
		try := func(key string, domain, typ, proto int) {
			fd, err := unix.Socket(domain, typ, proto)
			if err == nil {
				unix.Close(fd)
			}
			out(key, errnoOf(err))
		}
		try("inet_stream", unix.AF_INET, unix.SOCK_STREAM, 0)
		try("inet_stream_flags", unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		try("inet_stream_tcp", unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP)
		try("inet6_stream", unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		try("inet_stream_mptcp", unix.AF_INET, unix.SOCK_STREAM, 262) // IPPROTO_MPTCP
		try("inet_stream_sctp", unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP)
		try("inet_dgram", unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		try("inet6_dgram", unix.AF_INET6, unix.SOCK_DGRAM, 0)
		try("inet_dgram_udp", unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDP)
		try("inet_raw", unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
		try("inet_seqpacket", unix.AF_INET, unix.SOCK_SEQPACKET, 0)
		try("packet", unix.AF_PACKET, unix.SOCK_RAW, 0)
		try("unix_dgram", unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		// A real TCP connection still works (Go's net uses SOCK_STREAM
		// with SOCK_NONBLOCK|SOCK_CLOEXEC and protocol 0).
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			out("tcp_connect", errnoOf(err))
			return
		}
		defer l.Close()
		c, err := net.Dial("tcp4", l.Addr().String())
		if err == nil {
			c.Close()
			out("tcp_connect", 0)
		} else {
			out("tcp_connect", 0xffff)
		}
		// TCP Fast Open: sendto with MSG_FASTOPEN connects without
		// connect(2) (and without Landlock's connect hook).
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			out("tcp_fastopen", errnoOf(err))
			return
		}
		defer unix.Close(fd)
		port := l.Addr().(*net.TCPAddr).Port
		err = unix.Sendto(fd, []byte("x"), unix.MSG_FASTOPEN, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
		out("tcp_fastopen", errnoOf(err))
	}},
	// families: the address families no network namespace nor Landlock
	// confines (AF_VSOCK reaches the hypervisor's host, AF_SMC makes its
	// TCP connection in the kernel, past Landlock's TCP rules), by number
	// so that none is missing from x/sys.
	"families": {run: func(out func(string, syscall.Errno)) {
		for _, f := range otherFamilies {
			for _, typ := range []int{unix.SOCK_STREAM, unix.SOCK_DGRAM, unix.SOCK_SEQPACKET, unix.SOCK_RAW} {
				fd, err := unix.Socket(f.family, typ|unix.SOCK_CLOEXEC, 0)
				if err == nil {
					unix.Close(fd)
				}
				out(fmt.Sprintf("%s_%d", f.name, typ), errnoOf(err))
			}
		}
		for _, f := range []struct {
			name   string
			family int
			typ    int
		}{{"unix", unix.AF_UNIX, unix.SOCK_STREAM}, {"netlink", unix.AF_NETLINK, unix.SOCK_RAW}} {
			fd, err := unix.Socket(f.family, f.typ|unix.SOCK_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
			}
			out(f.name, errnoOf(err))
		}
	}},
	// sockets: which families socket(2) still creates, and socketpair.
	"sockets": {run: func(out func(string, syscall.Errno)) {
		try := func(key string, domain, typ int) {
			fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
			}
			out(key, errnoOf(err))
		}
		try("unix_stream", unix.AF_UNIX, unix.SOCK_STREAM)
		try("unix_dgram", unix.AF_UNIX, unix.SOCK_DGRAM)
		try("inet_stream", unix.AF_INET, unix.SOCK_STREAM)
		try("inet6_dgram", unix.AF_INET6, unix.SOCK_DGRAM)
		try("netlink", unix.AF_NETLINK, unix.SOCK_RAW)
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			if _, werr := unix.Write(fds[0], []byte("x")); werr != nil {
				err = werr
			}
			b := make([]byte, 1)
			if n, rerr := unix.Read(fds[1], b); rerr != nil || n != 1 {
				err = rerr
			}
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
		out("socketpair", errnoOf(err))
	}},
	"ptrace": {run: func(out func(string, syscall.Errno)) {
		if os.Getenv(envFilter) == "1" { // without the filter, root would really stop the parent
			_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_ATTACH, uintptr(os.Getppid()), 0, 0, 0, 0)
			out("attach_parent", e)
		}
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_ATTACH, noSuchPid, 0, 0, 0, 0)
		out("attach_nopid", e)
	}},
	"unshare": {run: func(out func(string, syscall.Errno)) {
		out("newuser", errnoOf(unix.Unshare(unix.CLONE_NEWUSER)))
		out("newuser_newns", errnoOf(unix.Unshare(unix.CLONE_NEWUSER|unix.CLONE_NEWNS)))
		out("newuts", errnoOf(unix.Unshare(unix.CLONE_NEWUTS)))
		// CLONE_NEWUSER|CLONE_FS is EINVAL in the kernel, so no child appears
		// without the filter either.
		_, _, e := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
		out("clone_newuser", e)
	}},
	"tty": {run: func(out func(string, syscall.Errno)) {
		m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
		if err != nil {
			out("setup", errnoOf(err))
			return
		}
		if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
			out("setup", errnoOf(err))
			return
		}
		n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
		if err != nil {
			out("setup", errnoOf(err))
			return
		}
		// Opened without O_NOCTTY by a session leader: it becomes our
		// controlling terminal, so TIOCSTI is not refused for that reason.
		s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR, 0)
		if err != nil {
			out("setup", errnoOf(err))
			return
		}
		out("setup", 0)
		fd := s.Fd()
		c := byte('x')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, fd, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		out("tiocsti", e)
		_, _, e = unix.Syscall(unix.SYS_IOCTL, fd, 0xffffffff00000000|unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		out("tiocsti_high", e)
		sub := [2]byte{6, 0}
		_, _, e = unix.Syscall(unix.SYS_IOCTL, fd, unix.TIOCLINUX, uintptr(unsafe.Pointer(&sub[0])))
		out("tioclinux", e)
		_, err = unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
		out("tiocgwinsz", errnoOf(err))
	}},
	"iouring": {run: func(out func(string, syscall.Errno)) {
		var params [120]byte
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if e == 0 {
			unix.Close(int(fd))
		}
		out("setup", e)
	}},
	"bpf": {run: func(out func(string, syscall.Errno)) {
		_, _, e := unix.Syscall(unix.SYS_BPF, 0xffff, 0, 0)
		out("bpf", e)
	}},
	"mount": {run: func(out func(string, syscall.Errno)) {
		out("mount", errnoOf(unix.Mount("none", "/nonexistent-cordon", "tmpfs", 0, "")))
		out("umount2", errnoOf(unix.Unmount("/nonexistent-cordon", 0)))
	}},
	"x32": {run: func(out func(string, syscall.Errno)) {
		if runtime.GOARCH != "amd64" {
			return
		}
		_, _, e := unix.Syscall(unix.SYS_GETPID|0x40000000, 0, 0, 0)
		out("getpid_x32", e)
	}},
	"clone3": {run: func(out func(string, syscall.Errno)) {
		_, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
		out("clone3", e)
	}},
	"personality": {run: func(out func(string, syscall.Errno)) {
		_, _, e := unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
		out("query", e)
		_, _, e = unix.Syscall(unix.SYS_PERSONALITY, 0x0400000, 0, 0) // READ_IMPLIES_EXEC
		out("read_implies_exec", e)
	}},
	"strict": {run: func(out func(string, syscall.Errno)) {
		out("chroot", errnoOf(unix.Chroot("/nonexistent-cordon")))
	}},
	"exec": {run: func(out func(string, syscall.Errno)) {
		err := exec.Command("/bin/true").Run()
		if err != nil {
			fmt.Println("exec error:", err)
			out("true", 0xffff)
			return
		}
		out("true", 0)
		// The Go runtime keeps working: goroutines on fresh threads.
		done := make(chan int)
		for i := range 16 {
			go func() {
				runtime.LockOSThread()
				done <- i
			}()
		}
		for range 16 {
			<-done
		}
		out("goroutines", 0)
	}},
	"status": {run: func(out func(string, syscall.Errno)) {
		for _, f := range []string{"Seccomp", "NoNewPrivs", "Seccomp_filters"} {
			fmt.Printf("@@ %s=s:%s\n", f, statusField("/proc/self/status", f))
		}
	}},
	"threads": {
		pre: func() {
			for range nThreads {
				go func() {
					runtime.LockOSThread()
					tid := unix.Gettid()
					threadReady <- struct{}{}
					<-threadGo
					_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_ATTACH, noSuchPid, 0, 0, 0, 0)
					r := map[string]syscall.Errno{"ptrace": e}
					if statusField("/proc/thread-self/status", "Seccomp") != "2" {
						r["seccomp_not_2"] = 1
					}
					if statusField("/proc/thread-self/status", "NoNewPrivs") != "1" {
						r["nnp_not_1"] = 1
					}
					r["tid"] = syscall.Errno(tid)
					threadResults <- r
				}()
			}
			for range nThreads {
				<-threadReady
			}
		},
		run: func(out func(string, syscall.Errno)) {
			close(threadGo)
			me := unix.Gettid()
			for range nThreads {
				r := <-threadResults
				if int(r["tid"]) == me {
					out("same_thread_as_install", 1)
				}
				out("ptrace", r["ptrace"])
				out("seccomp_not_2", r["seccomp_not_2"])
				out("nnp_not_1", r["nnp_not_1"])
			}
		},
	},
}

func childMain(name string) int {
	c, ok := childCases[name]
	if !ok {
		fmt.Println("unknown case", name)
		return 2
	}
	if c.pre != nil {
		c.pre()
	}
	if os.Getenv(envFilter) == "1" {
		o := Options{Strict: os.Getenv(envStrict) == "1", DenyNetwork: os.Getenv(envNet) == "1", DenyUnix: os.Getenv(envUnix) == "1", StreamOnly: os.Getenv(envStream) == "1", DenyOtherFamilies: os.Getenv(envOther) == "1"}
		if err := Install(o); err != nil {
			fmt.Println("install error:", err)
			return 3
		}
	}
	c.run(func(k string, e syscall.Errno) { fmt.Printf("@@ %s=%d\n", k, int(e)) })
	return 0
}

// results maps a key to its errno (or, for "s:" values, to the string).
type results map[string]string

func (r results) errno(t *testing.T, key string) syscall.Errno {
	t.Helper()
	v, ok := r[key]
	if !ok {
		t.Fatalf("child reported no %q: %v", key, r)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", key, v, err)
	}
	return syscall.Errno(n)
}

func requireSeccomp(t *testing.T) {
	t.Helper()
	if statusField("/proc/self/status", "Seccomp") == "MISSING" {
		testenv.SkipOrFail(t, "kernel lacks seccomp")
	}
}

func runChild(t *testing.T, name string, filter, strict bool) results {
	t.Helper()
	return runChildWith(t, name, filter, Options{Strict: strict})
}

// runChildWith runs a child case with the filter for o (or none).
func runChildWith(t *testing.T, name string, filter bool, o Options) results {
	t.Helper()
	strict := o.Strict
	requireSeccomp(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envCase+"="+name, envFilter+"="+b(filter), envStrict+"="+b(strict),
		envNet+"="+b(o.DenyNetwork), envUnix+"="+b(o.DenyUnix), envStream+"="+b(o.StreamOnly), envOther+"="+b(o.DenyOtherFamilies))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		t.Fatalf("child %s (filter=%v strict=%v): %v\n%s", name, filter, strict, err, buf.String())
	}
	r := results{}
	var lines []string
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		if kv, ok := strings.CutPrefix(sc.Text(), "@@ "); ok {
			k, v, _ := strings.Cut(kv, "=")
			r[k] = strings.TrimPrefix(v, "s:")
			lines = append(lines, kv)
		}
	}
	t.Logf("%s filter=%v strict=%v: %s", name, filter, strict, strings.Join(lines, " "))
	return r
}

func expect(t *testing.T, r results, key string, want syscall.Errno) {
	t.Helper()
	if got := r.errno(t, key); got != want {
		t.Errorf("%s: got errno %d (%v), want %d (%v)", key, int(got), got, int(want), want)
	}
}

// expectByFilter checks the filtered result is want and the unfiltered one
// differs, so the errno really comes from the filter.
func expectByFilter(t *testing.T, on, off results, key string, want syscall.Errno) {
	t.Helper()
	expect(t, on, key, want)
	if got := off.errno(t, key); got == want {
		t.Errorf("%s: unfiltered control also gives %v; the test is not meaningful", key, got)
	}
}

func TestPtraceDenied(t *testing.T) {
	on, off := runChild(t, "ptrace", true, false), runChild(t, "ptrace", false, false)
	expect(t, on, "attach_parent", unix.EPERM)
	expectByFilter(t, on, off, "attach_nopid", unix.EPERM)
}

func TestUserNamespaceDenied(t *testing.T) {
	on, off := runChild(t, "unshare", true, false), runChild(t, "unshare", false, false)
	expectByFilter(t, on, off, "newuser", unix.EPERM)
	expectByFilter(t, on, off, "newuser_newns", unix.EPERM)
	expectByFilter(t, on, off, "clone_newuser", unix.EPERM)
	// Other namespaces are not the filter's business: same result either way
	// (0 as root, EPERM for lack of CAP_SYS_ADMIN otherwise).
	if a, b := on.errno(t, "newuts"), off.errno(t, "newuts"); a != b {
		t.Errorf("unshare(CLONE_NEWUTS): %v with the filter, %v without", a, b)
	}
}

func TestTTYIoctlDenied(t *testing.T) {
	on, off := runChild(t, "tty", true, false), runChild(t, "tty", false, false)
	expect(t, on, "setup", 0)
	expect(t, off, "setup", 0)
	expectByFilter(t, on, off, "tiocsti", unix.EPERM)
	expectByFilter(t, on, off, "tiocsti_high", unix.EPERM)
	expectByFilter(t, on, off, "tioclinux", unix.EPERM)
	expect(t, on, "tiocgwinsz", 0)
}

func TestIOUringDenied(t *testing.T) {
	on, off := runChild(t, "iouring", true, false), runChild(t, "iouring", false, false)
	expect(t, on, "setup", unix.EPERM)
	t.Logf("io_uring_setup without the filter: %v", off.errno(t, "setup"))
}

func TestBPFDenied(t *testing.T) {
	on, off := runChild(t, "bpf", true, false), runChild(t, "bpf", false, false)
	expect(t, on, "bpf", unix.EPERM)
	t.Logf("bpf without the filter: %v", off.errno(t, "bpf"))
}

func TestMountDenied(t *testing.T) {
	on, off := runChild(t, "mount", true, false), runChild(t, "mount", false, false)
	expectByFilter(t, on, off, "mount", unix.EPERM)
	expect(t, on, "umount2", unix.EPERM)
}

func TestX32Denied(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 exists only on amd64")
	}
	on, off := runChild(t, "x32", true, false), runChild(t, "x32", false, false)
	expectByFilter(t, on, off, "getpid_x32", unix.EPERM)
}

func TestClone3ENOSYS(t *testing.T) {
	on, off := runChild(t, "clone3", true, false), runChild(t, "clone3", false, false)
	expectByFilter(t, on, off, "clone3", unix.ENOSYS)
}

// TestStreamOnly checks StreamOnly in a child that really calls
// socket(2): internet sockets only of type SOCK_STREAM with protocol 0 or
// TCP, no packet sockets, unix sockets untouched, and TCP still working.
func TestStreamOnly(t *testing.T) {
	const ok, eperm = syscall.Errno(0), unix.EPERM
	want := map[string]syscall.Errno{
		"inet_stream": ok, "inet_stream_flags": ok, "inet_stream_tcp": ok, "inet6_stream": ok,
		"inet_stream_mptcp": eperm, "inet_stream_sctp": eperm, "inet_dgram": eperm, "inet6_dgram": eperm,
		"inet_dgram_udp": eperm, "inet_raw": eperm, "inet_seqpacket": eperm, "packet": eperm,
		"unix_dgram": ok, "tcp_connect": ok, "tcp_fastopen": eperm,
	}
	on := runChildWith(t, "streams", true, Options{StreamOnly: true})
	off := runChildWith(t, "streams", false, Options{})
	for k, w := range want {
		if w == ok {
			if got := on.errno(t, k); got != ok && got != unix.EAFNOSUPPORT && got != unix.EPROTONOSUPPORT {
				t.Errorf("%s: got errno %d (%v), want success", k, int(got), got)
			}
			continue
		}
		got := on.errno(t, k)
		if got != eperm {
			t.Errorf("%s: got errno %d (%v), want EPERM", k, int(got), got)
		}
		if off.errno(t, k) == eperm {
			t.Logf("%s: EPERM without the filter too (privileges)", k)
		}
	}
	// DenyNetwork wins over StreamOnly.
	both := runChildWith(t, "streams", true, Options{StreamOnly: true, DenyNetwork: true})
	expect(t, both, "inet_stream", eperm)
}

// otherFamilies are address families other than AF_UNIX, AF_INET,
// AF_INET6 and AF_NETLINK, some of which reach past a network namespace
// or Landlock.
var otherFamilies = []struct {
	name   string
	family int
}{
	{"packet", unix.AF_PACKET}, {"vsock", unix.AF_VSOCK}, {"smc", 43}, {"bluetooth", unix.AF_BLUETOOTH},
	{"tipc", unix.AF_TIPC}, {"rds", unix.AF_RDS}, {"can", unix.AF_CAN}, {"alg", unix.AF_ALG},
	{"xdp", 44}, {"kcm", unix.AF_KCM}, {"qipcrtr", 42}, {"llc", unix.AF_LLC}, {"x25", unix.AF_X25},
	{"ax25", unix.AF_AX25}, {"appletalk", unix.AF_APPLETALK}, {"mctp", 45}, {"unknown", 63},
}

// TestOtherFamilies checks that StreamOnly and DenyOtherFamilies refuse
// every address family but unix, internet and netlink with EPERM, where
// without the filter the kernel may create them (this machine's answers
// are logged): AF_VSOCK reaches the hypervisor's host from any network
// namespace, and an AF_SMC socket connects over TCP from inside the
// kernel, where Landlock's TCP rules do not look.
func TestOtherFamilies(t *testing.T) {
	off := runChildWith(t, "families", false, Options{})
	for _, f := range otherFamilies {
		for _, typ := range []int{unix.SOCK_STREAM, unix.SOCK_DGRAM, unix.SOCK_SEQPACKET, unix.SOCK_RAW} {
			if e := off.errno(t, fmt.Sprintf("%s_%d", f.name, typ)); e == 0 {
				t.Logf("without the filter, socket(%s, %d) succeeds", f.name, typ)
			}
		}
	}
	for _, o := range []Options{{StreamOnly: true}, {DenyOtherFamilies: true}, {DenyOtherFamilies: true, DenyNetwork: true}, {DenyOtherFamilies: true, DenyUnix: true}} {
		on := runChildWith(t, "families", true, o)
		for _, f := range otherFamilies {
			for _, typ := range []int{unix.SOCK_STREAM, unix.SOCK_DGRAM, unix.SOCK_SEQPACKET, unix.SOCK_RAW} {
				k := fmt.Sprintf("%s_%d", f.name, typ)
				if e := on.errno(t, k); e != unix.EPERM {
					t.Errorf("%+v: socket(%s, %d): errno %d (%v); want EPERM", o, f.name, typ, int(e), e)
				}
			}
		}
		expect(t, on, "netlink", 0)
		if o.DenyUnix {
			expect(t, on, "unix", unix.EPERM)
		} else {
			expect(t, on, "unix", 0)
		}
	}
}

// TestSocketFamilies checks DenyNetwork and DenyUnix in a child that
// really calls socket(2): each refuses its families with EPERM, leaves the
// others alone, and never touches socketpair(2).
func TestSocketFamilies(t *testing.T) {
	const ok, eperm = syscall.Errno(0), unix.EPERM
	for _, c := range []struct {
		name string
		o    Options
		want map[string]syscall.Errno
	}{
		{"none", Options{}, map[string]syscall.Errno{"unix_stream": ok, "unix_dgram": ok, "inet_stream": ok, "inet6_dgram": ok, "netlink": ok, "socketpair": ok}},
		{"network", Options{DenyNetwork: true}, map[string]syscall.Errno{"unix_stream": ok, "unix_dgram": ok, "inet_stream": eperm, "inet6_dgram": eperm, "netlink": ok, "socketpair": ok}},
		{"unix", Options{DenyUnix: true}, map[string]syscall.Errno{"unix_stream": eperm, "unix_dgram": eperm, "inet_stream": ok, "inet6_dgram": ok, "netlink": ok, "socketpair": ok}},
		{"both", Options{DenyNetwork: true, DenyUnix: true, Strict: true}, map[string]syscall.Errno{"unix_stream": eperm, "unix_dgram": eperm, "inet_stream": eperm, "inet6_dgram": eperm, "netlink": ok, "socketpair": ok}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runChildWith(t, "sockets", true, c.o)
			for k, want := range c.want {
				if k == "inet6_dgram" && want == ok && r.errno(t, k) == unix.EAFNOSUPPORT {
					continue // a kernel without IPv6
				}
				expect(t, r, k, want)
			}
		})
	}
}

func TestPersonality(t *testing.T) {
	on, off := runChild(t, "personality", true, false), runChild(t, "personality", false, false)
	expect(t, on, "query", 0)
	expectByFilter(t, on, off, "read_implies_exec", unix.EPERM)
}

func TestStrict(t *testing.T) {
	normal, strict := runChild(t, "strict", true, false), runChild(t, "strict", true, true)
	expect(t, normal, "chroot", unix.ENOENT)
	expect(t, strict, "chroot", unix.EPERM)
}

func TestNormalProgramWorks(t *testing.T) {
	for _, strict := range []bool{false, true} {
		r := runChild(t, "exec", true, strict)
		expect(t, r, "true", 0)
		expect(t, r, "goroutines", 0)
	}
}

func TestAllThreads(t *testing.T) {
	r := runChild(t, "threads", true, false)
	if _, bad := r["same_thread_as_install"]; bad {
		t.Error("a pre-spawned thread was the installing thread")
	}
	expect(t, r, "ptrace", unix.EPERM)
	expect(t, r, "seccomp_not_2", 0)
	expect(t, r, "nnp_not_1", 0)
}

func TestProcStatus(t *testing.T) {
	r := runChild(t, "status", true, false)
	for k, want := range map[string]string{"Seccomp": "2", "NoNewPrivs": "1", "Seccomp_filters": "1"} {
		if r[k] != want {
			t.Errorf("/proc/self/status %s: %q, want %q", k, r[k], want)
		}
	}
}

// run interprets a seccomp program over one seccomp_data.
func run(t *testing.T, prog []unix.SockFilter, arch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case ldAbs:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case jeqK, jsetK:
			hit := acc == in.K
			if in.Code == jsetK {
				hit = acc&in.K != 0
			}
			if hit {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case aluAndK:
			acc &= in.K
		case retK:
			return in.K
		default:
			t.Fatalf("unexpected opcode %#x at %d", in.Code, pc)
		}
	}
	t.Fatal("program fell off the end")
	return 0
}

func TestFilterProgram(t *testing.T) {
	for _, strict := range []bool{false, true} {
		prog, err := Filter(Options{Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("strict=%v: %d instructions", strict, len(prog))
		for _, s := range denied(strict) {
			if got := run(t, prog, nativeArch, s.nr); got != retEPERM {
				t.Errorf("%s: %#x, want EPERM", s.name, got)
			}
		}
		cases := []struct {
			name string
			arch uint32
			nr   uint32
			args []uint64
			want uint32
		}{
			{"getpid", nativeArch, unix.SYS_GETPID, nil, retAllow},
			{"read", nativeArch, unix.SYS_READ, nil, retAllow},
			{"foreign arch getpid", unix.AUDIT_ARCH_I386, 20, nil, retEPERM},
			{"clone thread", nativeArch, unix.SYS_CLONE, []uint64{unix.CLONE_VM | unix.CLONE_THREAD}, retAllow},
			{"clone newuser", nativeArch, unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER | unix.CLONE_NEWNS}, retEPERM},
			{"unshare newns", nativeArch, unix.SYS_UNSHARE, []uint64{unix.CLONE_NEWNS}, retAllow},
			{"unshare newuser", nativeArch, unix.SYS_UNSHARE, []uint64{unix.CLONE_NEWUSER}, retEPERM},
			{"clone3", nativeArch, unix.SYS_CLONE3, nil, retENOSYS},
			{"ioctl TCGETS", nativeArch, unix.SYS_IOCTL, []uint64{0, unix.TCGETS}, retAllow},
			{"ioctl TIOCSTI", nativeArch, unix.SYS_IOCTL, []uint64{0, unix.TIOCSTI}, retEPERM},
			{"ioctl TIOCSTI high bits", nativeArch, unix.SYS_IOCTL, []uint64{0, 0xdead00000000 | unix.TIOCSTI}, retEPERM},
			{"ioctl TIOCLINUX", nativeArch, unix.SYS_IOCTL, []uint64{0, unix.TIOCLINUX}, retEPERM},
			{"personality 0", nativeArch, unix.SYS_PERSONALITY, []uint64{0}, retAllow},
			{"personality query", nativeArch, unix.SYS_PERSONALITY, []uint64{0xffffffff}, retAllow},
			{"personality ADDR_NO_RANDOMIZE", nativeArch, unix.SYS_PERSONALITY, []uint64{0x40000}, retEPERM},
		}
		if hasX32 {
			cases = append(cases, struct {
				name string
				arch uint32
				nr   uint32
				args []uint64
				want uint32
			}{"x32 getpid", nativeArch, unix.SYS_GETPID | x32SyscallBit, nil, retEPERM})
		}
		for _, c := range cases {
			if got := run(t, prog, c.arch, c.nr, c.args...); got != c.want {
				t.Errorf("strict=%v %s: %#x, want %#x", strict, c.name, got, c.want)
			}
		}
	}
}

func TestDescribe(t *testing.T) {
	n, s := Describe(Options{}), Describe(Options{Strict: true})
	if len(s) <= len(n) {
		t.Fatalf("strict list (%d) not longer than normal (%d)", len(s), len(n))
	}
	joined := strings.Join(n, "\n")
	for _, want := range []string{"ptrace", "bpf", "io_uring_setup", "mount", "clone3", "TIOCSTI", "CLONE_NEWUSER"} {
		if !strings.Contains(joined, want) {
			t.Errorf("Describe(false) lacks %q", want)
		}
	}
	if strings.Contains(joined, "chroot") || !strings.Contains(strings.Join(s, "\n"), "chroot") {
		t.Error("chroot should be listed in strict mode only")
	}
}

// TestFilterStreamRules interprets the program's socket(2) decisions for
// internet sockets by type, flags and protocol under StreamOnly.
func TestFilterStreamRules(t *testing.T) {
	prog, err := Filter(Options{StreamOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		fam, typ, proto uint64
		allow           bool
	}{
		{unix.AF_INET, unix.SOCK_STREAM, 0, true},
		{unix.AF_INET6, unix.SOCK_STREAM | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, unix.IPPROTO_TCP, true},
		{unix.AF_INET, unix.SOCK_STREAM, 262, false},
		{unix.AF_INET, unix.SOCK_STREAM | 0x100, 0, false}, // an unknown flag bit
		{unix.AF_INET, unix.SOCK_DGRAM, 0, false},
		{unix.AF_INET6, unix.SOCK_RAW, 0, false},
		{unix.AF_UNIX, unix.SOCK_DGRAM, 0, true},
		{unix.AF_NETLINK, unix.SOCK_RAW, 0, true},
		{unix.AF_PACKET, unix.SOCK_STREAM, 0, false},
	} {
		want := uint32(retEPERM)
		if c.allow {
			want = retAllow
		}
		if got := run(t, prog, nativeArch, unix.SYS_SOCKET, c.fam, c.typ, c.proto); got != want {
			t.Errorf("socket(%d, %#x, %d): %#x, want %#x", c.fam, c.typ, c.proto, got, want)
		}
	}
}

// TestFilterSocketRules interprets the program's socket(2) decisions for
// each combination of DenyNetwork and DenyUnix.
func TestFilterSocketRules(t *testing.T) {
	for _, c := range []struct {
		o       Options
		refused []uint64
	}{
		{Options{}, nil},
		{Options{DenyNetwork: true}, []uint64{unix.AF_INET, unix.AF_INET6, unix.AF_PACKET}},
		{Options{DenyUnix: true}, []uint64{unix.AF_UNIX}},
		{Options{DenyNetwork: true, DenyUnix: true}, []uint64{unix.AF_INET, unix.AF_INET6, unix.AF_PACKET, unix.AF_UNIX}},
		{Options{StreamOnly: true}, []uint64{unix.AF_PACKET, unix.AF_VSOCK, 43}},
		{Options{StreamOnly: true, DenyNetwork: true}, []uint64{unix.AF_INET, unix.AF_INET6, unix.AF_PACKET, unix.AF_VSOCK, 43}},
		{Options{DenyOtherFamilies: true}, []uint64{unix.AF_PACKET, unix.AF_VSOCK, 43}},
		{Options{DenyOtherFamilies: true, DenyUnix: true}, []uint64{unix.AF_UNIX, unix.AF_PACKET, unix.AF_VSOCK, 43}},
	} {
		prog, err := Filter(c.o)
		if err != nil {
			t.Fatal(err)
		}
		for _, fam := range []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_PACKET, unix.AF_NETLINK, unix.AF_VSOCK, 43} {
			want := uint32(retAllow)
			for _, r := range c.refused {
				if r == fam {
					want = retEPERM
				}
			}
			if got := run(t, prog, nativeArch, unix.SYS_SOCKET, fam, unix.SOCK_STREAM); got != want {
				t.Errorf("%+v: socket(%d): %#x, want %#x", c.o, fam, got, want)
			}
			if got := run(t, prog, nativeArch, unix.SYS_SOCKETPAIR, fam, unix.SOCK_STREAM); got != retAllow {
				t.Errorf("%+v: socketpair(%d): %#x, want allow", c.o, fam, got)
			}
		}
		d := strings.Join(Describe(c.o), "\n")
		if strings.Contains(d, "SOCK_STREAM") != (c.o.StreamOnly && !c.o.DenyNetwork) {
			t.Errorf("%+v: Describe mentions SOCK_STREAM: %v\n%s", c.o, !c.o.StreamOnly, d)
		}
		if strings.Contains(d, "AF_UNIX") != c.o.DenyUnix {
			t.Errorf("%+v: Describe mentions AF_UNIX: %v\n%s", c.o, !c.o.DenyUnix, d)
		}
		if strings.Contains(d, "AF_VSOCK") != (c.o.DenyOtherFamilies || c.o.StreamOnly) {
			t.Errorf("%+v: Describe mentions AF_VSOCK: %v\n%s", c.o, !c.o.DenyOtherFamilies, d)
		}
	}
}

// TestFilterFastOpen interprets the program's decisions for sendto,
// sendmsg and sendmmsg: MSG_FASTOPEN (a TCP connect Landlock cannot see)
// is refused under StreamOnly only; other flags pass.
func TestFilterFastOpen(t *testing.T) {
	const fo = unix.MSG_FASTOPEN
	for _, o := range []Options{{}, {StreamOnly: true}} {
		prog, err := Filter(o)
		if err != nil {
			t.Fatal(err)
		}
		deny := uint32(retAllow)
		if o.StreamOnly {
			deny = retEPERM
		}
		for _, c := range []struct {
			name string
			nr   uint32
			args []uint64
			want uint32
		}{
			{"sendto", unix.SYS_SENDTO, []uint64{3, 0, 1, unix.MSG_NOSIGNAL, 0, 0}, retAllow},
			{"sendto MSG_FASTOPEN", unix.SYS_SENDTO, []uint64{3, 0, 1, fo, 0, 0}, deny},
			{"sendto MSG_FASTOPEN|MSG_NOSIGNAL", unix.SYS_SENDTO, []uint64{3, 0, 1, fo | unix.MSG_NOSIGNAL, 0, 0}, deny},
			{"sendmsg", unix.SYS_SENDMSG, []uint64{3, 0, unix.MSG_DONTWAIT}, retAllow},
			{"sendmsg MSG_FASTOPEN", unix.SYS_SENDMSG, []uint64{3, 0, fo}, deny},
			{"sendmmsg", unix.SYS_SENDMMSG, []uint64{3, 0, 1, 0}, retAllow},
			{"sendmmsg MSG_FASTOPEN", unix.SYS_SENDMMSG, []uint64{3, 0, 1, fo}, deny},
		} {
			if got := run(t, prog, nativeArch, c.nr, c.args...); got != c.want {
				t.Errorf("%+v %s: %#x, want %#x", o, c.name, got, c.want)
			}
		}
	}
}
