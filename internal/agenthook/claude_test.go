package agenthook

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// TestClaudeCodeBash: a Bash call is allowed with updatedInput whose
// command is the original under cordon run, quoted so that bash -c gets
// it byte for byte, every other tool_input member kept.
func TestClaudeCodeBash(t *testing.T) {
	h := newHookEnv(t)
	for _, cmd := range tricky {
		code, ans, stderr := h.serve(t, "claude-code", h.claudeCall("Bash", map[string]any{
			"command": cmd, "description": "Run it", "timeout": 600000, "run_in_background": false,
		}))
		if code != 0 || stderr != "" {
			t.Fatalf("%q: exit %d, stderr %q", cmd, code, stderr)
		}
		d, _ := decision(ans)
		if d != "allow" {
			t.Fatalf("%q: decision %q, want allow: %v", cmd, d, ans)
		}
		u := ans["hookSpecificOutput"].(map[string]any)["updatedInput"].(map[string]any)
		if u["description"] != "Run it" || u["timeout"] != float64(600000) || u["run_in_background"] != false {
			t.Errorf("%q: other members not kept: %v", cmd, u)
		}
		got := u["command"].(string)
		if want := Wrap(h.env.Cordon, h.ws, cmd); got != want {
			t.Errorf("%q: command %q, want %q", cmd, got, want)
		}
		// What bash makes of the same command line: the argv of
		// cordon run, the agent's command one argument.
		bash := testenv.Tool(t, "bash", "apt-get install -y bash")
		argv := argvOf(t, bash, h.ws, cmd)
		want := []string{"run", "--workspace", h.ws, "--", "bash", "-c", cmd}
		if strings.Join(argv, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("%q: bash runs %q, want %q", cmd, argv, want)
		}
	}
}

// argvOf runs Wrap's command line for cmd with bash -c, as Claude Code
// runs a Bash command, with a stand-in for cordon (at a path holding a
// quote and a space) that prints its arguments.
func argvOf(t *testing.T, bash, ws, cmd string) []string {
	t.Helper()
	prog := filepath.Join(t.TempDir(), "it's cordon")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nprintf '%s\\0' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bash, "-c", Wrap(prog, ws, cmd)).Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestClaudeCodeFileTools: each file tool's path is resolved as the tool
// would (relative to cwd, .., ~, symbolic links) and decided by the
// workspace's policy; a denial names the rule, an allowed call gets no
// decision (Claude Code's own permission flow goes on).
func TestClaudeCodeFileTools(t *testing.T) {
	h := newHookEnv(t)
	for _, tc := range []struct {
		name, tool string
		input      map[string]any
		deny       string // a part of the reason; "" for no decision
	}{
		{"read workspace file", "Read", map[string]any{"file_path": filepath.Join(h.ws, "main.go")}, ""},
		{"read relative", "Read", map[string]any{"file_path": "sub/a.txt"}, ""},
		{"read .env", "Read", map[string]any{"file_path": filepath.Join(h.ws, ".env")}, "filesystem.deny: **/.env"},
		{"read ssh key", "Read", map[string]any{"file_path": filepath.Join(h.home, ".ssh/id_rsa")}, "filesystem.deny"},
		{"read key by link", "Read", map[string]any{"file_path": filepath.Join(h.ws, "key")}, ".ssh/id_rsa"},
		{"read by dir link", "Read", map[string]any{"file_path": filepath.Join(h.ws, "sshdir/id_rsa")}, "filesystem.deny"},
		{"read .env by link", "Read", map[string]any{"file_path": filepath.Join(h.ws, "sub/env")}, "filesystem.deny: **/.env"},
		{"read by dotdot", "Read", map[string]any{"file_path": h.ws + "/../../.bashrc"}, "filesystem.read: not listed"},
		{"read by link then dotdot", "Read", map[string]any{"file_path": h.ws + "/sshdir/../.bashrc"}, "not listed"},
		{"read tilde", "Read", map[string]any{"file_path": "~/.bashrc"}, "not listed"},
		{"read sibling", "Read", map[string]any{"file_path": filepath.Join(h.home, "src/other/notes.txt")}, "filesystem.read: not listed"},
		{"read host proc", "Read", map[string]any{"file_path": "/proc/self/environ"}, "sandbox's own"},
		{"read host tmp", "Read", map[string]any{"file_path": "/tmp/x"}, "sandbox's own"},
		{"read loop", "Read", map[string]any{"file_path": filepath.Join(h.ws, "loop")}, "symbolic links"},
		{"edit workspace", "Edit", map[string]any{"file_path": filepath.Join(h.ws, "main.go"), "old_string": "a", "new_string": "b"}, ""},
		{"write new file", "Write", map[string]any{"file_path": filepath.Join(h.ws, "new/dir/f.go"), "content": "x"}, ""},
		{"write git config", "Write", map[string]any{"file_path": filepath.Join(h.ws, ".git/config"), "content": "x"}, ".git"},
		{"edit a hook: why, not where to work", "Edit", map[string]any{"file_path": filepath.Join(h.ws, ".git/hooks/pre-commit"), "old_string": "a", "new_string": "b"}, "code placed there runs later on the user's machine"},
		{"write bashrc", "Write", map[string]any{"file_path": filepath.Join(h.home, ".bashrc"), "content": "x"}, "protected: **/.bashrc"},
		{"write home file", "Write", map[string]any{"file_path": filepath.Join(h.home, "notes.txt"), "content": "x"}, "filesystem.write: not listed"},
		{"write through up link", "Write", map[string]any{"file_path": filepath.Join(h.ws, "up/notes.txt"), "content": "x"}, "filesystem.write: not listed"},
		{"multiedit claude settings", "MultiEdit", map[string]any{"file_path": filepath.Join(h.ws, ".claude/settings.json"), "edits": []any{}}, "protected"},
		{"notebook", "NotebookEdit", map[string]any{"notebook_path": filepath.Join(h.ws, "n.ipynb"), "new_source": "x"}, ""},
		{"glob workspace", "Glob", map[string]any{"pattern": "**/*.go"}, ""},
		{"glob absolute out", "Glob", map[string]any{"pattern": filepath.Join(h.home, "src/other") + "/*"}, "not listed"},
		{"glob climbing", "Glob", map[string]any{"pattern": "../../.ssh/*"}, "filesystem.deny"},
		{"glob home", "Glob", map[string]any{"pattern": "*", "path": h.home}, "not listed"},
		{"glob through a dir link", "Glob", map[string]any{"pattern": "sshdir/*"}, "filesystem.deny"},
		{"glob through a dir link, deep", "Glob", map[string]any{"pattern": "sshdir/**/*"}, "filesystem.deny"},
		{"glob tilde", "Glob", map[string]any{"pattern": "~/.ssh/*"}, "filesystem.deny"},
		{"glob fixed sub dir", "Glob", map[string]any{"pattern": "docs/*.md"}, ""},
		{"grep workspace with .env", "Grep", map[string]any{"pattern": "TOKEN"}, ".env"},
		{"grep sub dir", "Grep", map[string]any{"pattern": "a", "path": "docs"}, ""},
		{"grep dir with a link out", "Grep", map[string]any{"pattern": "a", "path": "pkg2"}, "filesystem.read: not listed"},
		{"grep dir with a link to a tree holding .env", "Grep", map[string]any{"pattern": "a", "path": "pkg3"}, "sub2/.env"},
		{"grep sub dir with link to .env", "Grep", map[string]any{"pattern": "a", "path": "sub"}, ".env"},
		{"grep file", "Grep", map[string]any{"pattern": "a", "path": "main.go"}, ""},
		{"tool not decided", "WebFetch", map[string]any{"url": "https://example.com"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ans, stderr := h.serve(t, "claude-code", h.claudeCall(tc.tool, tc.input))
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			d, r := decision(ans)
			if tc.deny == "" {
				if ans != nil {
					t.Fatalf("want no decision, got %v", ans)
				}
				return
			}
			if d != "deny" || !strings.Contains(r, tc.deny) || !strings.HasPrefix(r, "cordon: ") || strings.Contains(r, "\n") {
				t.Fatalf("want a one-line deny naming %q, got %q %q", tc.deny, d, r)
			}
		})
	}
}

// TestMalformedFailsClosed: input the hook cannot parse exits 2 (every
// agent here blocks the tool on 2) with one cordon: line on stderr and
// nothing on stdout.
func TestMalformedFailsClosed(t *testing.T) {
	h := newHookEnv(t)
	ok := h.claudeCall("Read", map[string]any{"file_path": filepath.Join(h.ws, "main.go")})
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range ok {
			m[a] = b
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name, agent string
		input       any
	}{
		{"not json", "claude-code", "not json"},
		{"empty", "claude-code", ""},
		{"array", "claude-code", "[]"},
		{"two values", "claude-code", `{} {}`},
		{"wrong event", "claude-code", with("hook_event_name", "PostToolUse")},
		{"no event", "claude-code", with("hook_event_name", nil)},
		{"no cwd", "claude-code", with("cwd", nil)},
		{"relative cwd", "claude-code", with("cwd", "src")},
		{"tool_input not object", "claude-code", with("tool_input", "x")},
		{"no file_path", "claude-code", with("tool_input", map[string]any{})},
		{"file_path not string", "claude-code", with("tool_input", map[string]any{"file_path": 3})},
		{"bash without command", "claude-code", h.claudeCall("Bash", map[string]any{"description": "x"})},
		{"unknown agent", "aider", ok},
		{"gemini wrong event", "gemini", ok},
		{"cursor unknown event", "cursor", map[string]any{"hook_event_name": "stop", "cwd": h.ws}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ans, stderr := h.serve(t, tc.agent, tc.input)
			if code != ExitBlock || ans != nil || !strings.HasPrefix(stderr, "cordon: ") || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("want exit 2, one cordon: line and no answer; got %d %v %q", code, ans, stderr)
			}
		})
	}
}

// TestPolicyThatDoesNotLoad: a workspace whose policy does not load (the
// home directory) refuses the file tools with the reason.
func TestPolicyThatDoesNotLoad(t *testing.T) {
	h := newHookEnv(t)
	call := h.claudeCall("Read", map[string]any{"file_path": filepath.Join(h.home, ".bashrc")})
	call["cwd"] = h.home
	_, ans, _ := h.serve(t, "claude-code", call)
	if d, r := decision(ans); d != "deny" || !strings.Contains(r, "does not load") {
		t.Fatalf("got %q %q", d, r)
	}
}
