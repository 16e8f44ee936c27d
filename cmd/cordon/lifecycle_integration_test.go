//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestExitCodes: the command's status, 128+N, 126/127, and 125 with one
// "cordon:" line for everything that fails before the command runs.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.ws, "notexec.sh"), "#!/bin/sh\necho should not run\n")
	if err := os.Chmod(filepath.Join(e.ws, "notexec.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	badCfg := filepath.Join(e.root, "bad.yaml")
	writeFile(t, badCfg, "sandbox:\n  profile: development\n  bogus_key: 1\n")

	cases := []struct {
		name string
		args []string
		want int
		// setup failures: the command must not run, stderr is one line
		setup   bool
		stderrR string // regexp the stderr must match
	}{
		{name: "exit 3", args: []string{"--", "sh", "-c", "exit 3"}, want: 3},
		{name: "exit 0", args: []string{"--", "sh", "-c", "exit 0"}, want: 0},
		{name: "exit 255", args: []string{"--", "sh", "-c", "exit 255"}, want: 255},
		{name: "SIGTERM", args: []string{"--", "sh", "-c", "kill -TERM $$"}, want: 143},
		{name: "SIGKILL", args: []string{"--", "sh", "-c", "kill -KILL $$"}, want: 137},
		{name: "not found", args: []string{"--", "no-such-command-cordon-itest"}, want: 127, stderrR: `(?m)^cordon: .*no-such-command-cordon-itest`},
		{name: "not found abs", args: []string{"--", "/usr/bin/no-such-command-cordon-itest"}, want: 127, stderrR: `(?m)^cordon: `},
		{name: "not executable", args: []string{"--", "./notexec.sh"}, want: 126, stderrR: `(?m)^cordon: .*notexec`},
		{name: "directory", args: []string{"--", "/usr"}, want: 126, stderrR: `(?m)^cordon: `},
		{name: "bad max-memory", args: []string{"--max-memory", "lots"}, want: 125, setup: true, stderrR: `^cordon: .*--max-memory`},
		{name: "bad mode", args: []string{"--mode", "bogus"}, want: 125, setup: true, stderrR: `^cordon: .*--mode`},
		{name: "bad profile", args: []string{"--profile", "nope"}, want: 125, setup: true, stderrR: `^cordon: .*--profile`},
		{name: "unknown flag", args: []string{"--no-such-flag"}, want: 125, setup: true, stderrR: `^cordon: .*no-such-flag`},
		{name: "bad timeout", args: []string{"--timeout", "soon"}, want: 125, setup: true, stderrR: `^cordon: .*--timeout`},
		{name: "bad config", args: []string{"--config", badCfg}, want: 125, setup: true, stderrR: `^cordon: .*bad\.yaml:3:.*bogus_key`},
		{name: "missing config", args: []string{"--config", filepath.Join(e.root, "nope.yaml")}, want: 125, setup: true, stderrR: `^cordon: .*nope\.yaml`},
		{name: "net loopback on landlock", args: []string{"--backend", "landlock", "--net", "loopback"}, want: 125, setup: true, stderrR: `^cordon: .*loopback needs a network namespace`},
		{name: "bad workspace", args: []string{"--workspace", filepath.Join(e.root, "nope")}, want: 125, setup: true, stderrR: `^cordon: .*nope`},
		{name: "backend seatbelt", args: []string{"--backend", "seatbelt"}, want: 125, setup: true, stderrR: `^cordon: --backend seatbelt: the macOS backend runs only on macOS, not on linux; use --backend bwrap or auto\n$`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run"}, c.args...)
			marker := filepath.Join(e.ws, "ran-"+strings.ReplaceAll(c.name, " ", "-"))
			if c.setup {
				args = append(args, "--", "sh", "-c", "touch "+marker+"; echo RAN")
			}
			r := e.run(args...)
			if r.code != c.want {
				t.Errorf("exit %d, want %d\n%s", r.code, c.want, r)
			}
			if c.stderrR != "" && !regexp.MustCompile(c.stderrR).MatchString(userStderr(r.stderr)) {
				t.Errorf("stderr does not match %s:\n%s", c.stderrR, r)
			}
			if c.setup {
				checkOneCordonLine(t, r)
				if exists(marker) || strings.Contains(r.stdout, "RAN") {
					t.Errorf("the command ran although cordon failed to set up:\n%s", r)
				}
			}
			if c.want == 126 && strings.Contains(r.stdout, "should not run") {
				t.Errorf("the non-executable script ran")
			}
		})
	}
}

// TestTimeoutKillsTree: --timeout fires (124) and kills everything the
// command started, also setsid and nohup children.
func TestTimeoutKillsTree(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s0, s1, s2 := uniqueSleep(300), uniqueSleep(301), uniqueSleep(302)
	markers := []string{"sleep " + s0, "sleep " + s1, "sleep " + s2}
	t.Cleanup(func() { killLeftovers(waitNoProcs(markers, 0)) })
	script := fmt.Sprintf(`setsid sleep %s & nohup sleep %s >/dev/null 2>&1 & trap '' TERM; sleep %s`, s0, s1, s2)
	start := time.Now()
	r := e.sh(script, "--timeout", "1s")
	took := time.Since(start)
	if r.code != 124 {
		t.Errorf("exit %d, want 124\n%s", r.code, r)
	}
	if took > 6*time.Second {
		t.Errorf("cordon took %s to enforce a 1s timeout", took)
	}
	if !strings.Contains(r.stderr, "cordon: timed out") {
		t.Errorf("no timeout message:\n%s", r)
	}
	if left := waitNoProcs(markers, 3*time.Second); len(left) > 0 {
		t.Errorf("processes survived the timeout: %v", left)
	}

	// A command that ends before the timeout keeps its own status.
	r = e.sh("exit 5", "--timeout", "5s")
	if r.code != 5 {
		t.Errorf("fast command with --timeout: exit %d, want 5\n%s", r.code, r)
	}
}

// startCordon starts cordon with stdout piped and waits until the command
// prints a line "ready".
func startCordon(t *testing.T, e *sandboxEnv, ctx context.Context, args ...string) (*exec.Cmd, *bytes.Buffer, *bufio.Reader) {
	t.Helper()
	cmd := e.command(ctx, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(out)
	lineC := make(chan string, 1)
	go func() {
		l, _ := br.ReadString('\n')
		lineC <- l
	}()
	select {
	case l := <-lineC:
		if l != "ready\n" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("command did not get ready: %q, stderr %q", l, errb.String())
		}
	case <-time.After(cmdTimeout):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("command not ready after %s; stderr %q", cmdTimeout, errb.String())
	}
	return cmd, &errb, br
}

// readAllTimeout reads r to its end, for at most d.
func readAllTimeout(t *testing.T, r io.Reader, d time.Duration) []byte {
	t.Helper()
	var buf lockedBuf
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(&buf, r)
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Errorf("output did not end within %s", d)
	}
	return []byte(buf.String())
}

func waitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err == nil {
			return 0
		}
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ee.ExitCode()
		}
		t.Fatalf("waiting for cordon: %v", err)
	case <-time.After(cmdTimeout):
		_ = cmd.Process.Kill()
		t.Fatalf("cordon did not exit within %s", cmdTimeout)
	}
	return -1
}

// TestSignalsReachCommand: SIGTERM and SIGINT sent to cordon reach the
// command, whose exit status cordon returns.
func TestSignalsReachCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		sig  syscall.Signal
		name string
		trap bool
		want int
	}{
		{syscall.SIGTERM, "TERM", true, 42},
		{syscall.SIGINT, "INT", true, 43},
		{syscall.SIGHUP, "HUP", true, 44},
		{syscall.SIGTERM, "TERM", false, 143},
		{syscall.SIGINT, "INT", false, 130},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s-trap=%v", c.name, c.trap), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
			defer cancel()
			var script string
			if c.trap {
				script = fmt.Sprintf(`trap 'echo got-%s; exit %d' %s; echo ready; while :; do sleep 0.05; done`, c.name, c.want, c.name)
			} else {
				// exec: the signal's default action ends the command itself.
				script = `echo ready; exec sleep 30`
			}
			cmd, errb, out := startCordon(t, e, ctx, "run", "--", "sh", "-c", script)
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			rest := readAllTimeout(t, out, cmdTimeout)
			code := waitCode(t, cmd)
			if code != c.want {
				t.Errorf("exit %d, want %d; stdout %q, stderr %q", code, c.want, rest, errb.String())
			}
			if c.trap && !strings.Contains(string(rest), "got-"+c.name) {
				t.Errorf("the command's trap did not run; stdout %q, stderr %q", rest, errb.String())
			}
		})
	}
}

// TestKill9LeavesNothing: SIGKILL of cordon takes the whole sandbox down.
func TestKill9LeavesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := uniqueSleep(303)
	s2 := uniqueSleep(304)
	markers := []string{"sleep " + s, "sleep " + s2}
	t.Cleanup(func() { killLeftovers(waitNoProcs(markers, 0)) })
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd, _, _ := startCordon(t, e, ctx, "run", "--", "sh", "-c", fmt.Sprintf(`setsid sleep %s & echo ready; exec sleep %s`, s2, s))
	// Wait until the sleeps are visible on the host, so the test checks
	// that they go away rather than that they never started.
	deadline := time.Now().Add(5 * time.Second)
	for len(procsWith("sleep "+s)) == 0 || len(procsWith("sleep "+s2)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sleep processes never appeared on the host")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = waitCode(t, cmd)
	if left := waitNoProcs(markers, 3*time.Second); len(left) > 0 {
		t.Errorf("sandbox processes survived kill -9 of cordon: %v", left)
	}
	// The killed cordon could not remove its placeholders or its cgroup
	// (when it had one: as root here, or in a delegated cgroup); the next
	// run works and sweeps both away.
	groups := cgroupsOf(t, cmd.Process.Pid)
	// The sandbox's processes are dead, but their zombies stay members of
	// the group until whoever inherited them reaps them (with cordon dead,
	// the machine's init, which may take its time under load); a sweep
	// leaves a populated group alone. Wait, bounded, for them to go.
	for _, g := range groups {
		deadline := time.Now().Add(10 * time.Second)
		for {
			b, err := os.ReadFile(filepath.Join(g, "cgroup.procs"))
			if err != nil || len(bytes.TrimSpace(b)) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the killed run's cgroup %s still holds %q after 10 s", g, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	old := time.Now().Add(-time.Minute)
	for _, g := range groups {
		if err := os.Chtimes(g, old, old); err != nil {
			t.Fatalf("ageing %s: %v", g, err)
		}
	}
	if r := e.run("run", "--", "true"); r.code != 0 {
		t.Fatalf("next run after kill -9: %v", r)
	}
	if ents, err := os.ReadDir(e.ws); err != nil || len(ents) > 0 {
		var names []string
		for _, ent := range ents {
			names = append(names, ent.Name())
		}
		t.Errorf("stray files in the workspace after the next run: %v %v", names, err)
	}
	if len(groups) == 0 {
		t.Logf("the killed run had no cgroup (uid %d): nothing to sweep", os.Geteuid())
	}
	for _, g := range groups {
		if _, err := os.Stat(g); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the killed run's cgroup %s survived the next run", g)
		}
	}
}

// cgroupsOf finds the cgroup directories that the cordon with this pid
// created (cordon-run-PID-PID-HEX) under /sys/fs/cgroup, at most four
// levels down.
func cgroupsOf(t *testing.T, pid int) []string {
	t.Helper()
	prefix := fmt.Sprintf("cordon-run-%d-%d-", pid, pid)
	var found []string
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, ent := range ents {
			if !ent.IsDir() {
				continue
			}
			p := filepath.Join(dir, ent.Name())
			if strings.HasPrefix(ent.Name(), prefix) {
				found = append(found, p)
			} else if depth < 4 && !strings.HasPrefix(ent.Name(), "cordon-") {
				walk(p, depth+1)
			}
		}
	}
	walk("/sys/fs/cgroup", 0)
	return found
}

// TestStdio: stdin, stdout and stderr pass through unchanged, binary-safe
// and separate.
func TestStdio(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := make([]byte, 1<<20)
	if _, err := rand.Read(in); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 256; i++ {
		in[i] = byte(i)
	}
	r := e.runInput(in, "run", "--", "cat")
	if r.code != 0 {
		t.Fatalf("cat: exit %d: %s", r.code, r.stderr)
	}
	if r.stdout != string(in) {
		t.Errorf("stdout differs from stdin: %d bytes in, %d bytes out", len(in), len(r.stdout))
	}
	r = e.runInput([]byte("line1\nline2"), "run", "--", "sh", "-c", `cat; printf 'to-out\n'; printf 'to-err\n' >&2; exit 7`)
	if r.code != 7 {
		t.Errorf("exit %d, want 7", r.code)
	}
	if r.stdout != "line1\nline2to-out\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	if got := userStderr(r.stderr); got != "to-err\n" {
		t.Errorf("stderr = %q", got)
	}
	// No stdin at all (closed / /dev/null) is fine too.
	r = e.run("run", "--", "sh", "-c", `cat; echo done`)
	if r.code != 0 || r.stdout != "done\n" {
		t.Errorf("empty stdin: %s", r)
	}
	// Only stdin, stdout and stderr reach the command: cordon's own
	// descriptors (the binary, the spec, the status socket) do not.
	r = e.run("run", "--", "sh", "-c", `ls /proc/self/fd`)
	fds := strings.Fields(r.stdout)
	for _, fd := range fds {
		if fd != "0" && fd != "1" && fd != "2" && fd != "3" { // 3: ls's own directory
			t.Errorf("the command inherited descriptor %s: %q", fd, r.stdout)
		}
	}
}

// TestTTY: with a terminal on stdin the command gets a terminal, and
// interactive input works.
func TestTTY(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name, script   string
		waitFor, input string
		want           []string
		code           int
	}{
		{"is-tty", `test -t 0 && echo TTY-IN; test -t 1 && echo TTY-OUT; tty && echo TTY-NAME-OK`, "", "", []string{"TTY-IN", "TTY-OUT", "TTY-NAME-OK"}, 0},
		{"ctrl-c", `echo ready; sleep 5; echo not-interrupted`, "ready", "\x03", []string{"ready"}, 130},
		{"read", `printf 'name? '; read x; echo "got:$x"; exit 9`, "name? ", "cordon\n", []string{"got:cordon"}, 9},
		{"interactive-sh", `PS1='prompt> '; export PS1; exec sh -i`, "prompt> ", "echo hi-$((40+2))\nexit 6\n", []string{"hi-42"}, 6},
	}
	// Both backends: on the Landlock-only one a command reading the
	// terminal used to stop (a background process group) and hang.
	for _, backend := range []string{"bwrap", "landlock"} {
		for _, c := range cases {
			t.Run(backend+"/"+c.name, func(t *testing.T) {
				if backend == "landlock" {
					requireLandlock(t)
				}
				out, code := runOnPty(t, e, c.waitFor, c.input, "run", "--backend", backend, "--", "sh", "-c", c.script)
				checkTTY(t, out, code, c.want, c.code)
			})
		}
	}
}

// checkTTY checks one case of TestTTY.
func checkTTY(t *testing.T, out string, code int, want []string, wantCode int) {
	t.Helper()
	if strings.Contains(out, "not-interrupted") || strings.Contains(out, "not a tty") {
		t.Errorf("unexpected terminal output:\n%q", out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("terminal output lacks %q:\n%q", w, out)
		}
	}
	if code != wantCode {
		t.Errorf("exit %d, want %d; output %q", code, wantCode, out)
	}
}

// runOnPty runs cordon with a new pseudo-terminal as its controlling
// terminal and standard streams, writes input once waitFor appeared, and returns everything
// written to the terminal and the exit status.
func runOnPty(t *testing.T, e *sandboxEnv, waitFor, input string, args ...string) (string, int) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := e.command(ctx, args...)
	cmd.Env = append(cmd.Env, "TERM=xterm")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		slave.Close()
		t.Fatal(err)
	}
	slave.Close()
	var buf lockedBuf
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		_, _ = io.Copy(&buf, master) // ends with EIO once every slave is closed
	}()
	if input != "" {
		// Wait for the command's prompt before typing.
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(buf.String(), waitFor) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(buf.String(), waitFor) {
			t.Errorf("no %q on the terminal: %q", waitFor, buf.String())
		}
		if _, err := master.Write([]byte(input)); err != nil {
			t.Errorf("writing to the terminal: %v", err)
		}
	}
	code := waitCode(t, cmd)
	select {
	case <-readDone:
	case <-time.After(2 * time.Second):
	}
	return buf.String(), code
}

type lockedBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
