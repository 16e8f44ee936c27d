//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// unixServer listens on a pathname unix socket at path (its directory
// created 0700, so a sandbox that could list it would still need the name)
// and counts the connections it accepts.
func unixServer(t *testing.T, path string) chan struct{} {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	return accepted
}

// perlConnect is a shell command connecting to a pathname unix socket: it
// prints "connected" or dies with "socket: ..." or "connect: ...".
func perlConnect(path string) string {
	return `perl -MSocket -e 'socket(S, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n"; connect(S, pack_sockaddr_un("` + path + `")) or die "connect: $!\n"; print "connected\n"'`
}

// perlSocketpair uses socketpair(AF_UNIX) and prints "pair ok".
const perlSocketpair = `perl -MSocket -e 'socketpair(A, B, AF_UNIX, SOCK_STREAM, PF_UNSPEC) or die "socketpair: $!\n"; syswrite(A, "p"); sysread(B, $x, 1); print "pair ok\n" if $x eq "p"'`

func drained(ch chan struct{}) int {
	n := 0
	for {
		select {
		case <-ch:
			n++
		default:
			return n
		}
	}
}

// TestLandlockBackendUnixSockets: on the Landlock-only backend with the
// network denied, the host's pathname unix sockets (an ssh-agent's under
// HOME, a docker-style one elsewhere) cannot be connected to, while
// socketpair still works; where the kernel or the policy keeps cordon from
// refusing them (--allow-unix-socket on Landlock ABI < 9, --net open), the
// run says so on a degraded line.
func TestLandlockBackendUnixSockets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	requireLandlock(t)
	if _, err := os.Stat("/usr/bin/perl"); err != nil {
		skipOrFail(t, "perl is needed to connect to a unix socket")
	}
	agent := filepath.Join(e.home, ".agent-sock", "agent.sock")
	docker := filepath.Join(e.root, "run", "docker.sock")
	allowed := filepath.Join(e.root, "allowed", "ok.sock")
	servers := map[string]chan struct{}{agent: unixServer(t, agent), docker: unixServer(t, docker), allowed: unixServer(t, allowed)}

	for _, path := range []string{agent, docker} {
		if off := e.sh(perlConnect(path), "--no-sandbox"); !strings.Contains(off.stdout, "connected") {
			t.Fatalf("unconfined connect to %s must work: %s", path, off)
		}
	}
	time.Sleep(50 * time.Millisecond)
	for _, ch := range servers {
		drained(ch)
	}

	for _, c := range []struct {
		name      string
		flags     []string
		reachable []string // the sockets the command may connect to
		gap       bool     // a degraded line about pathname unix sockets
	}{
		{"net deny", []string{"--net", "deny"}, nil, false},
		{"allowed socket", []string{"--net", "deny", "--allow-unix-socket", allowed}, []string{allowed}, !landlockResolvesUnix(t)},
		{"net open", []string{"--net", "open"}, nil, !landlockResolvesUnix(t)},
	} {
		t.Run(c.name, func(t *testing.T) {
			script := perlConnect(agent) + "; " + perlConnect(docker) + "; " + perlConnect(allowed) + "; " + perlSocketpair + "; echo end"
			r := e.sh(script, append([]string{"--backend", "landlock"}, c.flags...)...)
			if !strings.Contains(r.stdout, "pair ok") || !strings.Contains(r.stdout, "end") {
				t.Fatalf("socketpair must keep working: %s", r)
			}
			gapLine := strings.Contains(r.stderr, "pathname unix sockets are not confined") && strings.Contains(r.stderr, "cordon: degraded: ")
			if gapLine != c.gap {
				t.Errorf("degraded line about unix sockets: %v, want %v: %s", gapLine, c.gap, r)
			}
			time.Sleep(100 * time.Millisecond)
			got := 0
			for path, ch := range servers {
				n := drained(ch)
				got += n
				want := 0
				for _, ok := range c.reachable {
					if ok == path {
						want = 1
					}
				}
				if c.gap {
					if want == 1 && n == 0 {
						t.Errorf("the allowed socket %s was not reached: %s", path, r)
					}
					continue // declared: every socket is reachable
				}
				if n != want {
					t.Errorf("%s accepted %d connections from the sandbox, want %d: %s", path, n, want, r)
				}
			}
			if c.gap {
				return
			}
			if n := strings.Count(r.stdout, "connected"); n != len(c.reachable) || n != got {
				t.Errorf("%d connects succeeded (servers saw %d), want %d: %s", n, got, len(c.reachable), r)
			}
			if len(c.reachable) == 0 && !strings.Contains(r.stderr, "socket: Operation not permitted") && !strings.Contains(r.stderr, "connect: Permission denied") {
				t.Errorf("no refusal in stderr: %s", r)
			}
		})
	}
}

// landlockResolvesUnix reports whether the kernel's Landlock can confine
// pathname unix sockets (ABI 9).
func landlockResolvesUnix(t *testing.T) bool {
	t.Helper()
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	return errno == 0 && v >= 9
}

// openPty opens a new pseudo-terminal: its master and its slave's path.
func openPty(t *testing.T) (*os.File, string) {
	t.Helper()
	// Non-blocking, so the runtime polls it and read deadlines work.
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		skipOrFail(t, fmt.Sprintf("no pseudo-terminals: %v", err))
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	return master, fmt.Sprintf("/dev/pts/%d", n)
}

// readFor reads what f yields within d.
func readFor(f *os.File, d time.Duration) string {
	_ = f.SetReadDeadline(time.Now().Add(d))
	var buf bytes.Buffer
	b := make([]byte, 4096)
	for {
		n, err := f.Read(b)
		buf.Write(b[:n])
		if err != nil {
			return buf.String()
		}
	}
}

// TestLandlockBackendDevices: on the Landlock-only backend the command
// reaches the standard devices and its own terminal, but not the user's
// other terminals: it can neither read what is typed in one nor write
// into it.
func TestLandlockBackendDevices(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	requireLandlock(t)
	other, otherName := openPty(t)
	// Something "typed" in the other terminal, waiting for a reader.
	if _, err := other.Write([]byte("TYPED-8c1\n")); err != nil {
		t.Fatal(err)
	}
	readFor(other, 100*time.Millisecond) // the echo

	own, ownName := openPty(t)
	slave, err := os.OpenFile(ownName, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`timeout 2 cat %[1]s; echo INJECT-4e2 > %[1]s; (exec 3<%[1]s); echo null > /dev/null && echo NULL-OK; head -c 4 /dev/zero | wc -c; head -c 4 /dev/urandom | wc -c; echo OWN-OK > "$(tty)"; echo STDOUT-OK`, otherName)
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := e.command(ctx, "run", "--backend", "landlock", "--", "sh", "-c", script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	outc := make(chan string, 1)
	go func() {
		var buf bytes.Buffer
		_, _ = io.Copy(&buf, own) // ends with EIO when the last slave closes
		outc <- buf.String()
	}()
	waitErr := cmd.Wait()
	var out string
	select {
	case out = <-outc:
	case <-time.After(3 * time.Second):
		out = "(no EOF on the pty)"
	}
	if waitErr != nil {
		t.Logf("cordon: %v", waitErr)
	}
	if strings.Contains(out, "TYPED-8c1") {
		t.Errorf("the sandbox read what was typed in another terminal:\n%s", out)
	}
	if got := readFor(other, 200*time.Millisecond); strings.Contains(got, "INJECT-4e2") {
		t.Errorf("the sandbox wrote into another terminal: %q", got)
	}
	if n := strings.Count(out, "Permission denied"); n < 3 {
		t.Errorf("want 3 refusals of %s (read, write, open), got %d:\n%s", otherName, n, out)
	}
	for _, want := range []string{"NULL-OK", "OWN-OK", "STDOUT-OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	if strings.Count(out, "4\r\n") < 2 {
		t.Errorf("/dev/zero and /dev/urandom must be readable:\n%s", out)
	}
}

// TestLandlockBackendMetadataEnforced: the Landlock-only backend refuses
// metadata changes outside the write paths through its supervisor (Landlock
// has no right for them): it no longer declares them on a degraded line
// nor in cordon status (text and JSON), which says the supervisor enforces
// them; strict mode still refuses the backend for what remains (no pid
// namespace).
func TestLandlockBackendMetadataEnforced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	requireLandlock(t)
	key := filepath.Join(e.home, ".ssh", "id_rsa")
	writeFile(t, key, "KEY")
	if err := os.Chmod(key, 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.sh(fmt.Sprintf("chmod 666 %s; echo rc=$?", key), "--backend", "landlock")
	if strings.Contains(r.stderr, "file metadata") || !strings.Contains(r.stdout, "rc=1") {
		t.Errorf("chmod outside the write paths was not refused, or is still declared: %s", r)
	}
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v %v", key, fi.Mode(), err)
	}
	if s := e.sh("true", "--backend", "landlock", "--mode", "strict"); s.code != 125 || !strings.Contains(s.stderr, "strict mode refuses") || strings.Contains(s.stderr, "metadata") {
		t.Errorf("strict on landlock: %s", s)
	}
	for _, args := range [][]string{{"status"}, {"status", "--json"}} {
		st := e.run(args...)
		if strings.Contains(st.stdout, "no protection of file metadata") || !strings.Contains(st.stdout, "supervisor") {
			t.Errorf("cordon %s does not say the supervisor refuses metadata changes:\n%s", strings.Join(args, " "), st.stdout)
		}
		if !strings.Contains(st.stdout, "own terminal") || !strings.Contains(st.stdout, "unix socket") {
			t.Errorf("cordon %s does not describe devices and unix sockets on the Landlock-only backend:\n%s", strings.Join(args, " "), st.stdout)
		}
	}
}
