//go:build linux

package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tmuxShell is cordon shell running in a detached tmux session of its own
// (a private tmux server), in e's workspace.
type tmuxShell struct {
	t      *testing.T
	socket string
}

func startShell(t *testing.T, e *sandboxEnv) *tmuxShell {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		skipOrFail(t, "tmux is needed to drive cordon shell in a terminal: apt-get install -y tmux")
	}
	s := &tmuxShell{t: t, socket: filepath.Join(e.root, "tmux.sock")}
	cmdline := "cd " + shellQuote(e.ws) + " && exec env -i"
	for _, kv := range e.environ() {
		cmdline += " " + shellQuote(kv)
	}
	cmdline += " " + shellQuote(cordonBin) + " shell"
	if out, err := s.tmux("new-session", "-d", "-x", "200", "-y", "60", cmdline+"; sleep 60").CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = s.tmux("kill-server").Run() })
	s.waitFor("cordon$") // capture-pane drops the trailing space
	return s
}

func (s *tmuxShell) tmux(args ...string) *exec.Cmd {
	return exec.Command("tmux", append([]string{"-S", s.socket}, args...)...)
}

// send types keys (tmux send-keys names: Enter, Up).
func (s *tmuxShell) send(keys ...string) {
	s.t.Helper()
	if out, err := s.tmux(append([]string{"send-keys", "-t", "0"}, keys...)...).CombinedOutput(); err != nil {
		s.t.Fatalf("tmux send-keys: %v: %s", err, out)
	}
}

// screen is the pane's text.
func (s *tmuxShell) screen() string {
	out, _ := s.tmux("capture-pane", "-p", "-t", "0", "-S", "-200").Output()
	return string(out)
}

// waitFor waits until the screen shows want n times (default once), at
// most 30 seconds.
func (s *tmuxShell) waitFor(want string, n ...int) string {
	s.t.Helper()
	count := 1
	if len(n) > 0 {
		count = n[0]
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		scr := s.screen()
		if strings.Count(scr, want) >= count {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the terminal never showed %q (%d times):\n%s", want, count, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestShell drives cordon shell in a real terminal: a line runs confined,
// /sandbox status, /sandbox test and /sandbox violations work, the up
// arrow recalls a line, and keys typed after a command ended reach the
// shell, not the finished command.
func TestShell(t *testing.T) {
	t.Parallel()
	e, _ := monitorFixture(t)
	s := startShell(t, e)
	// Each step waits for its output and the next prompt: keys typed
	// while a command runs are that command's.
	prompts := 1
	step := func(want string, n int, keys ...string) string {
		t.Helper()
		s.send(keys...)
		prompts++
		s.waitFor(want, n)
		return s.waitFor("cordon$", prompts)
	}
	step("\nLINE-ONE\n", 1, "cat ~/.ssh/id_rsa; echo LINE-ONE", "Enter")
	scr := step("audit log: ", 1, "/sandbox status", "Enter")
	for _, w := range []string{"mode standard, profile development", "workspace: " + e.ws, "denied:    " + e.home + "/.ssh"} {
		if !strings.Contains(scr, w) {
			t.Errorf("/sandbox status lacks %q:\n%s", w, scr)
		}
	}
	step("file-read ~/.ssh/id_rsa by cat: filesystem.deny: ~/.ssh (not to be allowed)", 1, "/sandbox test cat ~/.ssh/id_rsa", "Enter")
	step("file-read        ~/.ssh/id_rsa", 1, "/sandbox violations", "Enter")
	// Up four times: the first line again.
	scr = step("\nLINE-ONE\n", 2, "Up", "Up", "Up", "Up", "Enter")
	if strings.Contains(scr, "PRIVATE-KEY") {
		t.Errorf("the secret was read:\n%s", scr)
	}
	// $? is the line before's, as in a shell (found by using cordon: it
	// was always 0).
	step("cordon$ sh -c 'exit 3'", 1, "sh -c 'exit 3'", "Enter")
	step("\nSTATUS=3\n", 1, "echo STATUS=$?", "Enter")
	// exit N ends cordon shell (it ran inside the sandbox before), and
	// with it the terminal's session (its command line execs cordon:
	// nothing runs after it).
	s.send("exit 3", "Enter")
	deadline := time.Now().Add(20 * time.Second)
	for s.tmux("has-session").Run() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("cordon shell did not end within 20 s of exit:\n%s", s.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
