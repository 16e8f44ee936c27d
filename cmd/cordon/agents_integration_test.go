//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/agenthook"
)

// claudePreToolUse is a PreToolUse hook input as Claude Code's hooks
// reference documents it.
func (e *sandboxEnv) claudePreToolUse(tool string, input map[string]any) []byte {
	b, err := json.Marshal(map[string]any{
		"session_id":      "abc123",
		"transcript_path": filepath.Join(e.home, ".claude", "projects", "proj", "00893aaf.jsonl"),
		"cwd":             e.ws,
		"permission_mode": "default",
		"hook_event_name": "PreToolUse",
		"tool_name":       tool,
		"tool_input":      input,
		"tool_use_id":     "toolu_01ABC123",
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// hookAnswer is the hookSpecificOutput of cordon hook's answer.
type hookAnswer struct {
	HookSpecificOutput struct {
		HookEventName            string         `json:"hookEventName"`
		PermissionDecision       string         `json:"permissionDecision"`
		PermissionDecisionReason string         `json:"permissionDecisionReason"`
		UpdatedInput             map[string]any `json:"updatedInput"`
	} `json:"hookSpecificOutput"`
}

// TestHookBashRunsConfined: cordon hook claude-code rewrites a Bash call,
// and the rewritten command, run as Claude Code runs a Bash command (bash
// -c, in the project, the user's environment), runs confined: it cannot
// read a key in the fake ~/.ssh that the same command reads unconfined,
// and it writes the workspace; quotes, $(...), backticks and newlines of
// the agent's command reach the shell inside as written.
func TestHookBashRunsConfined(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.extra = append(e.extra, "CLAUDE_PROJECT_DIR="+e.ws)
	writeFile(t, filepath.Join(e.home, ".ssh", "id_rsa"), "SSH-KEY-5c1e")
	command := "cat \"$HOME/.ssh/id_rsa\"; echo \"it's\" $(echo sub) `echo tick` > out.txt\n" +
		"printf '%s\\n' 'line two' >> out.txt"

	// Unconfined, the command reads the key: the fake home is real.
	plain := exec.Command("bash", "-c", command)
	plain.Dir, plain.Env = t.TempDir(), e.environ()
	if out, _ := plain.CombinedOutput(); !strings.Contains(string(out), "SSH-KEY-5c1e") {
		t.Fatalf("unconfined, the command does not read the key: %q", out)
	}

	r := e.runInput(e.claudePreToolUse("Bash", map[string]any{"command": command, "description": "Write out.txt", "timeout": 120000}), "hook", "claude-code")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("cordon hook: %s", r)
	}
	var a hookAnswer
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
		t.Fatalf("answer %q: %v", r.stdout, err)
	}
	h := a.HookSpecificOutput
	if h.HookEventName != "PreToolUse" || h.PermissionDecision != "allow" || h.UpdatedInput["description"] != "Write out.txt" || h.UpdatedInput["timeout"] != float64(120000) {
		t.Fatalf("answer %s", r.stdout)
	}
	rewritten, _ := h.UpdatedInput["command"].(string)
	if rewritten != agenthook.Wrap(cordonBin, e.ws, command) {
		t.Fatalf("rewritten %q", rewritten)
	}

	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	run := exec.CommandContext(ctx, "bash", "-c", rewritten)
	run.Dir, run.Env, run.WaitDelay = e.ws, e.environ(), 2*time.Second
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Run(); err != nil {
		t.Fatalf("the rewritten command: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "SSH-KEY-5c1e") || !strings.Contains(out.String(), "cat: ") {
		t.Fatalf("the rewritten command read the key, or cat did not fail:\n%s", out.String())
	}
	if got := readFile(t, filepath.Join(e.ws, "out.txt")); got != "it's sub tick\nline two\n" {
		t.Fatalf("out.txt = %q (output %s)", got, out.String())
	}
}

// TestHookFileToolsBinary: the real binary decides the file tools with the
// fake home's policy (a key reached through a link in the workspace is
// refused, a workspace file gets no decision) and refuses input it cannot
// parse with exit status 2.
func TestHookFileToolsBinary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, ".ssh", "id_rsa"), "SSH-KEY-5c1e")
	writeFile(t, filepath.Join(e.ws, "main.go"), "package main")
	if err := os.Symlink(filepath.Join(e.home, ".ssh", "id_rsa"), filepath.Join(e.ws, "notes")); err != nil {
		t.Fatal(err)
	}
	r := e.runInput(e.claudePreToolUse("Read", map[string]any{"file_path": filepath.Join(e.ws, "notes")}), "hook", "claude-code")
	var a hookAnswer
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil || r.code != 0 ||
		a.HookSpecificOutput.PermissionDecision != "deny" || !strings.Contains(a.HookSpecificOutput.PermissionDecisionReason, "filesystem.deny") {
		t.Fatalf("read of the key by a link: %s", r)
	}
	if r := e.runInput(e.claudePreToolUse("Read", map[string]any{"file_path": "main.go"}), "hook", "claude-code"); r.code != 0 || r.stdout != "" {
		t.Fatalf("read of main.go: %s", r)
	}
	for _, in := range []string{"", "{", `{"hook_event_name":"PreToolUse"}`} {
		r := e.runInput([]byte(in), "hook", "claude-code")
		if r.code != 2 || r.stdout != "" || !strings.HasPrefix(r.stderr, "cordon: hook claude-code: refused: ") {
			t.Errorf("input %q: %s", in, r)
		}
	}
	for _, args := range [][]string{{"hook"}, {"hook", "nobody"}, {"hook", "claude-code", "--bogus"}} {
		if r := e.runInput([]byte(`{}`), args...); r.code != 2 {
			t.Errorf("cordon %q: %s", args, r)
		}
	}
}

// TestSetupClaudeCodeBinary: cordon setup claude-code on a fake home with
// the user's own settings: --dry-run writes nothing, setup adds the hooks
// (this binary's absolute path) and the MCP server and keeps the user's
// keys, a second run says nothing changed, --undo restores the files byte
// for byte; an unparsable file is refused with one cordon: line.
func TestSetupClaudeCodeBinary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	settings := filepath.Join(e.home, ".claude", "settings.json")
	claudeJSON := filepath.Join(e.home, ".claude.json")
	writeFile(t, settings, "{\n  \"model\": \"opus\",\n  \"env\": {\n    \"FOO\": \"1\"\n  }\n}\n")
	writeFile(t, claudeJSON, "{\n  \"numStartups\": 7\n}\n")
	before := readFile(t, settings) + readFile(t, claudeJSON)

	r := e.run("setup", "claude-code", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "would write ~/.claude/settings.json:") || readFile(t, settings)+readFile(t, claudeJSON) != before {
		t.Fatalf("--dry-run: %s", r)
	}
	if r := e.run("setup", "claude-code"); r.code != 0 {
		t.Fatalf("setup: %s", r)
	}
	s := readFile(t, settings)
	if !strings.Contains(s, `"model": "opus"`) || !strings.Contains(s, `"FOO": "1"`) || strings.Count(s, agenthook.Quote(cordonBin)+" hook claude-code") != 2 {
		t.Fatalf("settings.json:\n%s", s)
	}
	if c := readFile(t, claudeJSON); !strings.Contains(c, `"numStartups": 7`) || !strings.Contains(c, `"command": "`+cordonBin+`"`) {
		t.Fatalf(".claude.json:\n%s", c)
	}
	r = e.run("setup", "claude-code")
	if r.code != 0 || strings.Count(r.stdout, "nothing changed") != 2 {
		t.Fatalf("second setup: %s", r)
	}
	if r := e.run("setup", "claude-code", "--undo"); r.code != 0 || readFile(t, settings)+readFile(t, claudeJSON) != before {
		t.Fatalf("--undo: %s\n%s", r, readFile(t, settings))
	}
	writeFile(t, settings, "{\"model\": \"opus\",}")
	r = e.run("setup", "claude-code")
	if r.code != 125 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "cordon: ~/.claude/settings.json: not valid JSON") || readFile(t, settings) != "{\"model\": \"opus\",}" {
		t.Fatalf("unparsable settings: %s", r)
	}
}
