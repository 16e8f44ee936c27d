//go:build linux

package landlock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// childEnv carries a childJob to the re-executed test binary, which
// applies the rules, runs the operations and prints a childResult. Landlock
// is never applied to the test process itself.
const childEnv = "CORDON_LANDLOCK_TEST_CHILD"

type op struct {
	Op   string `json:"op"`
	Path string `json:"path,omitempty"`
	N    int    `json:"n,omitempty"`
}

type childJob struct {
	Rules Rules `json:"rules"`
	Ops   []op  `json:"ops"`
}

type childResult struct {
	Report  Report   `json:"report"`
	Err     string   `json:"err,omitempty"`
	Results []string `json:"results"`
}

func TestMain(m *testing.M) {
	if job := os.Getenv(childEnv); job != "" {
		os.Exit(runChild(job))
	}
	os.Exit(m.Run())
}

func runChild(data string) int {
	var job childJob
	var res childResult
	if err := json.Unmarshal([]byte(data), &job); err != nil {
		res.Err = err.Error()
	} else if res.Report, err = Apply(job.Rules); err != nil {
		res.Err = err.Error()
	} else {
		for _, o := range job.Ops {
			res.Results = append(res.Results, errName(do(o)))
		}
	}
	out, _ := json.Marshal(res)
	os.Stdout.Write(out)
	return 0
}

// do performs one operation in the restricted child.
func do(o op) error {
	switch o.Op {
	case "read":
		_, err := os.ReadFile(o.Path)
		return err
	case "readdir":
		_, err := os.ReadDir(o.Path)
		return err
	case "write": // creates when missing
		f, err := os.OpenFile(o.Path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write([]byte("x"))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case "truncate":
		return unix.Truncate(o.Path, 0)
	case "exec":
		return exec.Command(o.Path).Run()
	case "ioctl": // TCGETS on a character device (a pty master)
		fd, err := unix.Open(o.Path, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.IoctlGetTermios(fd, unix.TCGETS)
		return err
	case "connect", "bind":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		sa := &unix.SockaddrInet4{Port: o.N, Addr: [4]byte{127, 0, 0, 1}}
		if o.Op == "bind" {
			return unix.Bind(fd, sa)
		}
		return unix.Connect(fd, sa)
	case "kill0": // signal 0 only: a permission check, no signal sent
		return unix.Kill(o.N, 0)
	case "pathunix": // connect to a pathname unix socket
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Connect(fd, &unix.SockaddrUnix{Name: o.Path})
	case "abstract":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Connect(fd, &unix.SockaddrUnix{Name: o.Path})
	}
	return fmt.Errorf("unknown op %q", o.Op)
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return "exit " + fmt.Sprint(ee.ExitCode())
	}
	return err.Error()
}

// child runs ops under r in a fresh process and returns its report and one
// result per op ("ok" or an errno name such as "EACCES").
func child(t *testing.T, r Rules, ops ...op) (Report, []string) {
	t.Helper()
	return childIn(t, nil, r, ops...)
}

// childIn is child with stdin (nil: the null device).
func childIn(t *testing.T, stdin *os.File, r Rules, ops ...op) (Report, []string) {
	t.Helper()
	job, err := json.Marshal(childJob{Rules: r, Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+string(job))
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	var res childResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	if res.Err != "" {
		t.Fatalf("child: Apply: %s", res.Err)
	}
	return res.Report, res.Results
}

// expect runs ops (op, want) pairs in one child and checks each result.
func expect(t *testing.T, r Rules, cases ...struct {
	o    op
	want string
}) Report {
	t.Helper()
	var ops []op
	for _, c := range cases {
		ops = append(ops, c.o)
	}
	rep, got := child(t, r, ops...)
	for i, c := range cases {
		if got[i] != c.want {
			t.Errorf("%s %s %d: got %s, want %s", c.o.Op, c.o.Path, c.o.N, got[i], c.want)
		}
	}
	return rep
}

type kase = struct {
	o    op
	want string
}

func abi(t *testing.T) int {
	t.Helper()
	v, err := ABI()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// needABI skips when the kernel lacks a feature, and fails instead in CI.
func needABI(t *testing.T, n int) {
	t.Helper()
	if v := abi(t); v < n {
		testenv.SkipOrFail(t, "Landlock ABI %d < %d needed for this test", v, n)
	}
}

// tree makes base/{ro/f, rw/f, hidden/f} and returns base.
func tree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{"ro", "rw", "hidden"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, d, "f"), []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

// systemDirs is the read allowlist the Landlock-only tests start from.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"}

func TestABI(t *testing.T) {
	v := abi(t)
	t.Logf("Landlock ABI %d", v)
	needABI(t, 1)
}

// Under bubblewrap: read everywhere, write only to the write paths and /dev.
func TestBwrapShape(t *testing.T) {
	needABI(t, 1)
	base := tree(t)
	ro, rw := filepath.Join(base, "ro"), filepath.Join(base, "rw")
	r := Rules{ReadOnly: []string{"/"}, ReadWrite: []string{rw, "/dev", filepath.Join(base, "missing")}}
	cases := []kase{
		{op{Op: "write", Path: filepath.Join(rw, "new")}, "ok"},
		{op{Op: "write", Path: filepath.Join(rw, "f")}, "ok"},
		{op{Op: "write", Path: filepath.Join(ro, "f")}, "EACCES"},
		{op{Op: "write", Path: filepath.Join(ro, "new")}, "EACCES"},
		{op{Op: "read", Path: filepath.Join(ro, "f")}, "ok"},
		{op{Op: "read", Path: filepath.Join(base, "hidden", "f")}, "ok"},
		{op{Op: "exec", Path: "/bin/true"}, "ok"},
		{op{Op: "write", Path: "/dev/null"}, "ok"},
	}
	if abi(t) >= 3 {
		cases = append(cases,
			kase{op{Op: "truncate", Path: filepath.Join(ro, "f")}, "EACCES"},
			kase{op{Op: "truncate", Path: filepath.Join(rw, "f")}, "ok"})
	}
	if abi(t) >= 5 {
		cases = append(cases, kase{op{Op: "ioctl", Path: "/dev/ptmx"}, "ok"})
	}
	rep := expect(t, r, cases...)
	if !rep.Enforced || !rep.FS || rep.ABI != abi(t) {
		t.Errorf("report %+v", rep)
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0] != filepath.Join(base, "missing") {
		t.Errorf("skipped %q, want the missing path", rep.Skipped)
	}
	if data, err := os.ReadFile(filepath.Join(ro, "f")); err != nil || string(data) != "data" {
		t.Errorf("read-only file changed: %q %v", data, err)
	}
}

func TestTruncate(t *testing.T) {
	needABI(t, 3)
	base := tree(t)
	rep := expect(t, Rules{ReadOnly: []string{filepath.Join(base, "ro")}, ReadWrite: []string{filepath.Join(base, "rw")}},
		kase{op{Op: "truncate", Path: filepath.Join(base, "ro", "f")}, "EACCES"},
		kase{op{Op: "truncate", Path: filepath.Join(base, "rw", "f")}, "ok"},
	)
	if !rep.Truncate {
		t.Errorf("report %+v: Truncate false", rep)
	}
}

// The Landlock-only backend: a read allowlist.
func TestLandlockOnlyShape(t *testing.T) {
	needABI(t, 1)
	base := tree(t)
	ro, rw := filepath.Join(base, "ro"), filepath.Join(base, "rw")
	r := Rules{
		ReadOnly:   append(append([]string{}, systemDirs...), ro, "/proc"),
		ReadWrite:  []string{rw},
		StdDevices: true,
	}
	cases := []kase{
		{op{Op: "read", Path: filepath.Join(ro, "f")}, "ok"},
		{op{Op: "read", Path: filepath.Join(base, "hidden", "f")}, "EACCES"},
		{op{Op: "readdir", Path: filepath.Join(base, "hidden")}, "EACCES"},
		{op{Op: "read", Path: "/proc/self/status"}, "ok"},
		{op{Op: "readdir", Path: "/proc/self/fd"}, "ok"},
		{op{Op: "exec", Path: "/bin/true"}, "ok"},
		{op{Op: "write", Path: "/dev/null"}, "ok"},
		{op{Op: "write", Path: filepath.Join(rw, "new")}, "ok"},
		{op{Op: "write", Path: filepath.Join(ro, "f")}, "EACCES"},
		{op{Op: "write", Path: filepath.Join(base, "new")}, "EACCES"},
	}
	cases = append(cases, kase{op{Op: "ioctl", Path: "/dev/ptmx"}, "EACCES"}) // no new terminals: their /dev/pts/N could not be granted
	expect(t, r, cases...)
}

// openPty opens a new pseudo-terminal and returns its slave side and path.
func openPty(t *testing.T) (*os.File, string) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("/dev/pts/%d", n)
	slave, err := os.OpenFile(name, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return slave, name
}

// TestStdDevicesOwnTerminalOnly: StdDevices grants the standard devices
// and the terminal the process's stdin is open on, never another
// /dev/pts/N (the user's other terminals).
func TestStdDevicesOwnTerminalOnly(t *testing.T) {
	needABI(t, 1)
	own, ownName := openPty(t)
	_, otherName := openPty(t)
	r := Rules{ReadOnly: append(append([]string{}, systemDirs...), "/proc"), StdDevices: true}
	cases := []kase{
		{op{Op: "write", Path: otherName}, "EACCES"},
		{op{Op: "read", Path: otherName}, "EACCES"},
		{op{Op: "readdir", Path: "/dev/pts"}, "EACCES"},
		{op{Op: "write", Path: ownName}, "ok"},
		{op{Op: "write", Path: "/dev/null"}, "ok"},
		{op{Op: "read", Path: "/dev/null"}, "ok"},
		{op{Op: "write", Path: "/dev/full"}, "ENOSPC"},
	}
	if abi(t) >= 5 {
		cases = append(cases, kase{op{Op: "ioctl", Path: ownName}, "ok"})
	}
	var ops []op
	for _, c := range cases {
		ops = append(ops, c.o)
	}
	rep, got := childIn(t, own, r, ops...)
	for i, c := range cases {
		if got[i] != c.want {
			t.Errorf("%s %s: got %s, want %s", c.o.Op, c.o.Path, got[i], c.want)
		}
	}
	if len(rep.Terminals) != 1 || rep.Terminals[0] != ownName {
		t.Errorf("Terminals %q, want [%s]", rep.Terminals, ownName)
	}
	// Without a terminal on stdin, no /dev/pts/N at all.
	rep, got = child(t, r, op{Op: "write", Path: ownName})
	if got[0] != "EACCES" || len(rep.Terminals) != 0 {
		t.Errorf("no terminal on stdin: write %s = %s, Terminals %q", ownName, got[0], rep.Terminals)
	}
}

// unixListener listens on a pathname unix socket in a fresh directory and
// returns its path.
func unixListener(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return path
}

// TestRestrictUnix: from ABI 9, RestrictUnix refuses connecting to a
// pathname unix socket outside ReadWrite; below, Landlock cannot, and the
// report says so (the Landlock-only backend then refuses AF_UNIX sockets
// with seccomp).
func TestRestrictUnix(t *testing.T) {
	needABI(t, 1)
	outside, allowed := unixListener(t), unixListener(t)
	r := Rules{ReadOnly: append([]string{}, systemDirs...), ReadWrite: []string{allowed}, RestrictUnix: true}
	want := "EACCES"
	if abi(t) < ResolveUnixABI {
		want = "ok" // the gap the report declares
	}
	rep := expect(t, r,
		kase{op{Op: "pathunix", Path: outside}, want},
		kase{op{Op: "pathunix", Path: allowed}, "ok"},
	)
	line := strings.Join(rep.Degraded, "\n")
	if got := strings.Contains(line, "pathname unix sockets"); rep.ResolveUnix == got || rep.ResolveUnix != (abi(t) >= ResolveUnixABI) {
		t.Errorf("ABI %d: ResolveUnix %v, degraded %q", abi(t), rep.ResolveUnix, rep.Degraded)
	}
	// Not asked: never restricted, never declared.
	rep = expect(t, Rules{ReadOnly: append([]string{}, systemDirs...)}, kase{op{Op: "pathunix", Path: outside}, "ok"})
	if rep.ResolveUnix || strings.Contains(strings.Join(rep.Degraded, "\n"), "unix") {
		t.Errorf("RestrictUnix unset: report %+v", rep)
	}
}

func TestCarveOutEnforced(t *testing.T) {
	needABI(t, 1)
	root := carveTree(t)
	granted, err := CarveOut([]string{root}, []string{filepath.Join(root, "secret", "key"), filepath.Join(root, ".env")}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	r := Rules{ReadOnly: append(append([]string{}, systemDirs...), granted...)}
	expect(t, r,
		kase{op{Op: "read", Path: filepath.Join(root, "secret", "key")}, "EACCES"},
		kase{op{Op: "read", Path: filepath.Join(root, "link", "key")}, "EACCES"},
		kase{op{Op: "read", Path: filepath.Join(root, ".env")}, "EACCES"},
		kase{op{Op: "read", Path: filepath.Join(root, "secret", "other")}, "ok"},
		kase{op{Op: "read", Path: filepath.Join(root, "link", "other")}, "ok"},
		kase{op{Op: "read", Path: filepath.Join(root, "secret", "deep", "x")}, "ok"},
		kase{op{Op: "read", Path: filepath.Join(root, "a", "b.txt")}, "ok"},
		kase{op{Op: "read", Path: filepath.Join(root, "file")}, "ok"},
	)
}

// tcpListener listens on 127.0.0.1 with classic TCP (Landlock does not
// cover Multipath TCP, Go's default for Listen) and returns its port.
func tcpListener(t *testing.T) int {
	t.Helper()
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestTCP(t *testing.T) {
	needABI(t, 4)
	port := tcpListener(t)
	t.Run("deny", func(t *testing.T) {
		rep := expect(t, Rules{DenyNetwork: true},
			kase{op{Op: "connect", N: port}, "EACCES"},
			kase{op{Op: "bind", N: 0}, "EACCES"},
			kase{op{Op: "read", Path: "/proc/self/status"}, "ok"}, // no FS rules: FS untouched
		)
		if !rep.TCP || rep.FS {
			t.Errorf("report %+v", rep)
		}
	})
	t.Run("open", func(t *testing.T) {
		expect(t, Rules{},
			kase{op{Op: "connect", N: port}, "ok"},
			kase{op{Op: "bind", N: 0}, "ok"},
		)
	})
	t.Run("port allowed", func(t *testing.T) {
		expect(t, Rules{DenyNetwork: true, ConnectTCP: []int{port}, BindTCP: []int{0}},
			kase{op{Op: "connect", N: port}, "ok"},
			kase{op{Op: "bind", N: 0}, "ok"},
		)
	})
}

func TestScopeSignals(t *testing.T) {
	needABI(t, 6)
	me := os.Getpid()
	rep := expect(t, Rules{ScopeSignals: true}, kase{op{Op: "kill0", N: me}, "EPERM"})
	if !rep.ScopeSignals {
		t.Errorf("report %+v", rep)
	}
	expect(t, Rules{}, kase{op{Op: "kill0", N: me}, "ok"})
}

func TestScopeAbstractUnix(t *testing.T) {
	needABI(t, 6)
	name := fmt.Sprintf("@cordon-landlock-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	ln, err := net.Listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	rep := expect(t, Rules{ScopeAbstractUnix: true}, kase{op{Op: "abstract", Path: name}, "EPERM"})
	if !rep.ScopeAbstractUnix {
		t.Errorf("report %+v", rep)
	}
	expect(t, Rules{}, kase{op{Op: "abstract", Path: name}, "ok"})
}

func TestReportDegraded(t *testing.T) {
	r := Rules{ReadOnly: []string{"/"}, DenyNetwork: true, ScopeSignals: true, ScopeAbstractUnix: true}
	if d := degraded(r, Report{}); len(d) != 1 || !strings.Contains(d[0], "unavailable") {
		t.Errorf("ABI 0: %q", d)
	}
	d := degraded(r, Report{ABI: 3, Enforced: true, FS: true, Refer: true, Truncate: true})
	if len(d) != 4 {
		t.Errorf("ABI 3: got %d lines, want 4 (ioctl, tcp, signals, abstract): %q", len(d), d)
	}
	r.RestrictUnix = true
	if d := degraded(r, Report{ABI: 8, Enforced: true, FS: true, Refer: true, Truncate: true, IoctlDev: true, TCP: true, ScopeSignals: true, ScopeAbstractUnix: true}); len(d) != 1 || !strings.Contains(d[0], "needs ABI 9") {
		t.Errorf("ABI 8 with RestrictUnix: %q", d)
	}
	if d := degraded(Rules{}, Report{ABI: 1}); len(d) != 0 {
		t.Errorf("nothing asked: %q", d)
	}
	rep, err := Apply(Rules{}) // asks nothing: no domain, safe in-process
	if err != nil || rep.Enforced || len(rep.Degraded) != 0 {
		t.Errorf("Apply(Rules{}) = %+v, %v", rep, err)
	}
}

func TestRulesJSON(t *testing.T) {
	r := Rules{ReadOnly: []string{"/"}, ReadWrite: []string{"/tmp"}, DenyNetwork: true, ConnectTCP: []int{443}, ScopeSignals: true}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Rules
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back) != fmt.Sprint(r) {
		t.Errorf("round trip: %s -> %+v", data, back)
	}
}
