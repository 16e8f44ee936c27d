// Package testenv is what cordon's tests share about their environment:
// the rule for a test that cannot run here (skip with the reason, but fail
// under CI=true, where the machine is set up to run everything), the
// switch for the heavy tests that only the full check runs, the tools a
// test drives, found or skipped by that rule, the fake home every test
// that runs cordon uses (FakeHome), and the loopback listener its servers
// serve on (Listen), and the bounded wait for what another process does
// (WaitFor).
//
// It is imported by tests only. It must not start servers that listen
// beyond the loopback, nor touch the real home directory.
package testenv

import (
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
)

// CI reports whether the tests run under CI=true: nothing the machine
// could run may skip there.
func CI() bool { return os.Getenv("CI") == "true" }

// HeavyVar is the environment variable that turns on the heavy tests (the
// scale and first-build tests): .ci/run's full pass sets it; `go test
// ./...` leaves them out so that it stays quick.
const HeavyVar = "CORDON_TEST_HEAVY"

// SkipOrFail skips t with the reason, or fails it under CI=true, where a
// test that cannot run is a broken machine, not a choice.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("%s (CI=true: nothing may skip)", msg)
	}
	t.Skip(msg)
}

// Heavy skips t unless HeavyVar is 1: a heavy test (minutes of CPU on a
// small machine) runs in .ci/run's full pass, not in the quick one.
func Heavy(t testing.TB) {
	t.Helper()
	if os.Getenv(HeavyVar) != "1" {
		t.Skipf("a heavy test: set %s=1 to run it (.ci/run does)", HeavyVar)
	}
}

// Tool returns the path of the program name, looked up in PATH, or skips
// t by SkipOrFail's rule when it is missing (hint says how to install it).
func Tool(t testing.TB, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		SkipOrFail(t, "%s is not installed (%s)", name, hint)
	}
	return p
}

// Home is a test's fake home directory, made by FakeHome: nothing of the
// real home is ever read or written through it.
type Home struct {
	// Root is a fresh temporary directory (symbolic links resolved) that
	// holds the rest, and whatever else the test needs beside the home.
	Root string
	// Dir is the home directory, Root/home, with .config and
	// .local/state made.
	Dir string
	// Workspace is the project, Dir/src/proj (made).
	Workspace string
}

// FakeHome makes a fake home under a new temporary directory.
func FakeHome(t testing.TB) *Home {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &Home{Root: root, Dir: filepath.Join(root, "home")}
	h.Workspace = filepath.Join(h.Dir, "src", "proj")
	for _, d := range []string{h.Workspace, filepath.Join(h.Dir, ".config"), filepath.Join(h.Dir, ".local", "state")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// Env is the home's part of an environment: HOME and the XDG directories
// cordon reads (the cache too, so that nothing lands in the real one).
func (h *Home) Env() []string {
	return []string{
		"HOME=" + h.Dir,
		"XDG_CONFIG_HOME=" + filepath.Join(h.Dir, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(h.Dir, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(h.Dir, ".cache"),
	}
}

// Setenv sets Env in the test's own process for its duration (tests that
// call cordon's packages in process; t.Setenv forbids t.Parallel).
func (h *Home) Setenv(t testing.TB) {
	t.Helper()
	for _, kv := range h.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Listen is a TCP listener on 127.0.0.1, on a port the kernel picks, closed
// when the test ends: the one kind of server address a test may start (no
// test sends a packet beyond this machine's loopback).
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// WaitFor polls f every 20 ms until it is true, and fails the test when it
// is not within the bound given ("what" names it in the failure).
func WaitFor(t testing.TB, what string, within time.Duration, f func() bool) {
	t.Helper()
	for end := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		if f() {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s", what, within)
		}
	}
}

// Stopped reports whether every thread of process pid is stopped (state
// T in /proc/PID/task/TID/stat): kill(SIGSTOP) returns before they all
// are, and on a loaded machine one may still run meanwhile.
func Stopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// The state follows the command's name in parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}

// Inotify runs start, which starts an inotify instance (a watched walk
// cache's Watch), again while it fails for want of instances (EMFILE):
// the user's fs.inotify.max_user_instances, 128 by default, is shared by
// every test and cordon run of the user at once, and a closed instance
// counts until the kernel has freed it. It tries for at most 20 s; then,
// or on another error, it is SkipOrFail.
func Inotify(t testing.TB, start func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := start()
		if err == nil {
			return
		}
		if !errors.Is(err, syscall.EMFILE) || time.Now().After(deadline) {
			SkipOrFail(t, "no inotify instance: %v", err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
