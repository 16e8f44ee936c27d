//go:build linux

package main

import (
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

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// TestWalkServer: in a workspace of 2,000 directories a run starts a walk
// server, on both backends; with it answering the walks of the next runs,
// what the host changed between two runs is still seen (a .env made deep
// down is hidden from the command) and what a run planted is still found
// and disarmed (a hook of a repository made deep down); a command in the
// sandbox can read the server's token neither through its path nor a
// link; the server keeps no descriptor the run that started it inherited;
// and the server stops, removing its files, once its socket is gone.
func TestWalkServer(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		bf := []string{"--backend", backend}
		largeWorkspace(t, e)
		walk := filepath.Join(e.home, ".local", "state", "cordon", "walk")
		token := filepath.Join(walk, "server.token")
		// The run that starts the server has a pipe open that its caller
		// waits on: the server must not keep it.
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		cmd := e.command(context.Background(), append(append([]string{"run"}, bf...), "--", "true")...)
		cmd.ExtraFiles = []*os.File{pw}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("first run: %v\n%s", err, out)
		}
		pw.Close()
		pr.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(pr); err != nil {
			t.Errorf("the pipe the first run inherited is still open after it (the walk server keeps it?): %v", err)
		}
		awaitWalkServer(t, e)
		secret, err := os.ReadFile(token)
		if err != nil {
			t.Fatal(err)
		}

		// Settled: the server repeats a scan that watched new
		// directories; a few runs make sure every walk is answered.
		for range 3 {
			if r := e.sh("true", bf...); r.code != 0 {
				t.Fatalf("run: %s", r)
			}
		}
		writeFile(t, filepath.Join(e.ws, "src", "7", "357", ".env"), "HOST-SECRET-31")
		if r := e.sh("cat src/7/357/.env", bf...); strings.Contains(r.all(), "HOST-SECRET-31") {
			t.Errorf("a .env made on the host between two runs was readable:\n%s", r)
		}
		r := e.sh(`cd src/9/450 && git init -q r && printf '#!/bin/sh\ntouch "$HOME/HOOK-RAN"\n' > r/.git/hooks/pre-commit && chmod +x r/.git/hooks/pre-commit`, bf...)
		hook := filepath.Join(e.ws, "src", "9", "450", "r", ".git", "hooks", "pre-commit")
		if fi, err := os.Stat(hook); err == nil && fi.Mode()&0o111 != 0 {
			t.Errorf("the planted hook is still executable:\n%s", r)
		}
		if !strings.Contains(r.stderr, "pre-commit") {
			t.Errorf("no warning of the planted hook:\n%s", r)
		}

		link := filepath.Join(e.ws, "token-link")
		if err := os.Symlink(token, link); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{token, link} {
			if r := e.run(append(append([]string{"run"}, bf...), "--", "cat", p)...); r.code == 0 || strings.Contains(r.all(), string(secret)) {
				t.Errorf("the sandbox read the walk server's token through %s:\n%s", p, r)
			}
		}
	})
}

// TestWalkServerStopped: a walk server that is stopped (SIGSTOP: on a
// kernel without Landlock's signal scoping, a command on the Landlock-only
// backend can send it) still takes connections into its socket, but
// answers nothing. A run gives up on it within a second and walks itself:
// a hook its command planted in a nested repository is still found and
// disarmed (the planted check's 3 s bound was used up waiting for the
// server, 13 s, and the hook was left armed), and the next run does not
// wait for it again. A run with CORDON_NO_WALK_SERVER=1 does not ask it.
func TestWalkServerStopped(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		bf := []string{"--backend", backend}
		largeWorkspace(t, e)
		if r := e.sh("true", bf...); r.code != 0 {
			t.Fatalf("first run: %s", r)
		}
		pid := awaitWalkServer(t, e)
		if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Kill(pid, unix.SIGCONT) })
		testenv.WaitFor(t, "every thread of the walk server stopped", 5*time.Second, func() bool { return testenv.Stopped(pid) })
		// CORDON_NO_WALK_SERVER=1: the run does not ask it (a run that
		// asked would give up on it and remove its token).
		token := filepath.Join(e.home, ".local", "state", "cordon", "walk", "server.token")
		e.extra = []string{"CORDON_NO_WALK_SERVER=1"}
		if r := e.sh("true", bf...); r.code != 0 {
			t.Fatalf("run: %s", r)
		}
		e.extra = nil
		if _, err := os.Lstat(token); err != nil {
			t.Errorf("a run with CORDON_NO_WALK_SERVER=1 asked the walk server: %v", err)
		}
		start := time.Now()
		r := e.sh(`cd src/9/450 && git init -q r && printf '#!/bin/sh\ntouch "$HOME/HOOK-RAN"\n' > r/.git/hooks/pre-commit && chmod +x r/.git/hooks/pre-commit`, bf...)
		took := time.Since(start)
		hook := filepath.Join(e.ws, "src", "9", "450", "r", ".git", "hooks", "pre-commit")
		if fi, err := os.Stat(hook); err != nil || fi.Mode()&0o111 != 0 {
			t.Errorf("the planted hook is still executable (or missing: %v):\n%s", err, r)
		}
		if !strings.Contains(r.stderr, "pre-commit") || strings.Contains(r.stderr, "not everything") {
			t.Errorf("the planted hook was not found and disarmed in full:\n%s", r)
		}
		if took > 12*time.Second {
			t.Errorf("a run waited %v for a stopped walk server", took)
		}
		start = time.Now()
		if r := e.sh("true", bf...); r.code != 0 {
			t.Fatalf("run: %s", r)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("the next run took %v: it waited for the stopped walk server again", took)
		}
	})
}

// largeWorkspace makes 2,000 directories in e's workspace and lets e's
// runs start a walk server.
func largeWorkspace(t *testing.T, e *sandboxEnv) {
	t.Helper()
	e.walkServer = true
	for i := range 2000 {
		mkdir(t, filepath.Join(e.ws, "src", fmt.Sprint(i/50), fmt.Sprint(i)))
	}
	// A directory changed within the last 2 s is read again by every
	// walk (its ctime may not show a change made in the same clock
	// tick): older, it is taken on the watcher's word.
	time.Sleep(2100 * time.Millisecond)
}

// awaitWalkServer waits for the walk server a run of e started, makes the
// test's cleanup stop it (its socket removed) and wait until it is gone,
// and returns its process id.
func awaitWalkServer(t *testing.T, e *sandboxEnv) int {
	t.Helper()
	walk := filepath.Join(e.home, ".local", "state", "cordon", "walk")
	token := filepath.Join(walk, "server.token")
	testenv.WaitFor(t, "the walk server's token", 10*time.Second, func() bool { _, err := os.Stat(token); return err == nil })
	conn, err := net.Dial("unix", filepath.Join(walk, "server.sock"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := conn.(*net.UnixConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil || cerr != nil {
		t.Fatalf("the walk server's process: %v %v", err, cerr)
	}
	conn.Close()
	pid := int(cred.Pid)
	t.Cleanup(func() {
		os.Remove(filepath.Join(walk, "server.sock"))
		testenv.WaitFor(t, "the walk server gone", 10*time.Second, func() bool { return processGone(pid) })
	})
	return pid
}

// processGone reports whether the process pid is gone (or a zombie: it
// is not the test's child, whoever reaps it).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}
