//go:build linux

package mcpserver

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/config"
)

// TestRunCommandSession: run_command's calls share one sandbox (the
// server's launch.Session): the shells' pids grow in its pid namespace,
// where a sandbox of each call's own gives every shell the same pid. Each
// call still ends with its whole tree (a setsid process it left is killed
// before the call returns), its timeout kills the tree, and a hook it
// planted is disarmed before its result.
func TestRunCommandSession(t *testing.T) {
	if !slices.Contains(runModes(t), "standard") {
		t.Skip("no OS sandbox here")
	}
	e := start(t, "standard")
	pid := func(out string) int {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		n, err := strconv.Atoi(lines[len(lines)-1])
		if !strings.HasPrefix(out, "exit code: 0\n") || err != nil {
			t.Fatalf("output %q", out)
		}
		return n
	}
	first := pid(e.ok(t, ToolRunCommand, map[string]any{"command": "echo $$"}))
	start := time.Now()
	out := e.ok(t, ToolRunCommand, map[string]any{"command": "setsid sh -c 'sleep 3; echo late > late' & echo $$"})
	second := pid(out)
	out = e.ok(t, ToolRunCommand, map[string]any{"command": "setsid sh -c 'sleep 3; echo late > tlate' & sleep 30", "timeout_seconds": 1})
	if !strings.HasPrefix(out, "exit code: 124 (timed out after 1s") {
		t.Errorf("timeout: %q", out)
	}
	third := pid(e.ok(t, ToolRunCommand, map[string]any{"command": "echo $$"}))
	if first == third || second == third {
		t.Errorf("pids %d %d %d: the calls did not share a sandbox", first, second, third)
	}
	out = e.ok(t, ToolRunCommand, map[string]any{"command": "mkdir -p nested/.git/hooks && git init -q nested && printf '#!/bin/sh\\n' > nested/.git/hooks/pre-commit && chmod +x nested/.git/hooks/pre-commit; echo $?"})
	if !strings.Contains(out, "planted git hook nested/.git/hooks/pre-commit: disarmed") {
		t.Errorf("the planted hook: %q", out)
	}
	if fi, err := os.Stat(filepath.Join(e.ws, "nested", ".git", "hooks", "pre-commit")); err == nil && fi.Mode()&0o111 != 0 {
		t.Errorf("the planted hook is still armed: %v", fi.Mode())
	}
	time.Sleep(time.Until(start.Add(4 * time.Second)))
	for _, f := range []string{"late", "tlate"} {
		if _, err := os.Stat(filepath.Join(e.ws, f)); err == nil {
			t.Errorf("%s: a process a call left ran on", f)
		}
	}
}

// TestRunCommandSessionLimits: each call in the session has its own
// process limit (as root a cgroup, the session's, its counters taken
// from the end of the call before, with the helper started ahead moved
// in; RLIMIT_NPROC counted otherwise): a call that forks past it is
// refused, and told so where a cgroup counts the refused forks, every
// time, and a call after it runs, told nothing of it.
func TestRunCommandSessionLimits(t *testing.T) {
	if !slices.Contains(runModes(t), "standard") {
		t.Skip("no OS sandbox here")
	}
	e := startWith(t, "standard", func(l *config.Layer) { l.Resources.MaxProcesses = config.Ptr(20) })
	for i := range 3 {
		out := e.ok(t, ToolRunCommand, map[string]any{"command": "i=0; while [ $i -lt 40 ]; do sleep 2 & i=$((i+1)); done; wait"})
		// Without a cgroup (a normal user) the line is best effort
		// (nprocWatch samples): the refused fork says the limit held.
		if !strings.Contains(out, "process limit of 20") && (os.Geteuid() == 0 || !strings.Contains(out, "Cannot fork")) {
			t.Errorf("call %d: no line naming the process limit: %q", i, out)
		}
		// The call after runs in the same cgroup as root (a session's
		// commands share one): the refused forks counted are its own,
		// none.
		if out := e.ok(t, ToolRunCommand, map[string]any{"command": "echo fine"}); !strings.HasPrefix(out, "exit code: 0\n") || !strings.Contains(out, "fine\n") || strings.Contains(out, "process limit") {
			t.Errorf("call %d after the limit: %q", i, out)
		}
	}
}

// TestRunCommandSaysWarnings: run_command's result carries the run's
// warnings and the violation monitor's denials, as cordon run prints them:
// a git command that could not write the repository's config ends with
// exit code 1 where the shell exited 0, and the result says why, before
// the output (found by using cordon mcp: the exit code came without a
// word); with on_violation: warn each denied access is named.
func TestRunCommandSaysWarnings(t *testing.T) {
	if !slices.Contains(runModes(t), "standard") {
		t.Skip("no OS sandbox here")
	}
	e := start(t, "standard")
	nestedRepo(t, e.ws, filepath.Dir(e.ws))
	for range 2 { // the second call runs in the session's sandbox
		out := e.ok(t, ToolRunCommand, map[string]any{"command": "git config core.fsmonitor 'touch planted'; git config core.hooksPath h; echo done"})
		if !strings.HasPrefix(out, "exit code: 1\n") || !strings.Contains(out, "\nwarning: ") || !strings.Contains(out, "done\n") {
			t.Errorf("a refused git config change: no warning: %q", out)
		}
		if !strings.Contains(out, "a git command could not write .git/config") && !strings.Contains(out, "not written to the host's config") {
			t.Errorf("the warning does not say what was refused: %q", out)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(e.ws, ".git", "config"))
	if err != nil || strings.Contains(string(cfg), "fsmonitor") || strings.Contains(string(cfg), "hooksPath") {
		t.Errorf("the host's config: %q %v", cfg, err)
	}

	e = startWith(t, "standard", func(l *config.Layer) { l.OnViolation = config.Ptr("warn") })
	out := e.ok(t, ToolRunCommand, map[string]any{"command": "cat .env; echo done"})
	if !strings.Contains(out, "\ndenied: ") || !strings.Contains(out, ".env") {
		t.Errorf("on_violation warn: the denial is not named: %q", out)
	}
}

// TestRunCommandGitConfig: a git command that writes the repository's
// config works through run_command although its calls share a session:
// it runs in a sandbox of its own, where git writes a private copy, and
// the safe keys reach the host's config (a session's sandbox refused the
// write: found by using cordon mcp). The calls around it keep the session.
func TestRunCommandGitConfig(t *testing.T) {
	if !slices.Contains(runModes(t), "standard") {
		t.Skip("no OS sandbox here")
	}
	e := start(t, "standard")
	nestedRepo(t, e.ws, filepath.Dir(e.ws))
	e.ok(t, ToolRunCommand, map[string]any{"command": "echo $$"})
	out := e.ok(t, ToolRunCommand, map[string]any{"command": "git config user.name cordon-test && git config --get user.name"})
	if !strings.HasPrefix(out, "exit code: 0\n") || !strings.Contains(out, "cordon-test\n") || strings.Contains(out, "warning: ") {
		t.Errorf("git config through run_command: %q", out)
	}
	cfg, err := os.ReadFile(filepath.Join(e.ws, ".git", "config"))
	if err != nil || !strings.Contains(string(cfg), "cordon-test") {
		t.Errorf("the host's config: %q %v", cfg, err)
	}
	if out := e.ok(t, ToolRunCommand, map[string]any{"argv": []string{"git", "status", "--short"}}); !strings.HasPrefix(out, "exit code: 0\n") {
		t.Errorf("git status: %q", out)
	}
}
