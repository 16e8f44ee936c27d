package agenthook

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodex: Codex's PreToolUse input (its hooks' input schema: session_id,
// turn_id, transcript_path, cwd, hook_event_name, model, permission_mode,
// tool_name, tool_input, tool_use_id): Bash is rewritten with allow and
// updatedInput only (what Codex's parser accepts); apply_patch is decided
// by the files the patch names.
func TestCodex(t *testing.T) {
	h := newHookEnv(t)
	call := func(tool, command string) map[string]any {
		return map[string]any{
			"session_id": "019a0f3c-1111-2222-3333-444455556666", "turn_id": "turn-1",
			"transcript_path": nil, "cwd": h.ws, "hook_event_name": "PreToolUse",
			"model": "gpt-5-codex", "permission_mode": "default",
			"tool_name": tool, "tool_input": map[string]any{"command": command}, "tool_use_id": "call-1",
		}
	}
	code, ans, _ := h.serve(t, "codex", call("Bash", "cat ~/.ssh/id_rsa"))
	o, _ := ans["hookSpecificOutput"].(map[string]any)
	if code != 0 || o["permissionDecision"] != "allow" || o["permissionDecisionReason"] != nil ||
		o["updatedInput"].(map[string]any)["command"] != Wrap(h.env.Cordon, h.ws, "cat ~/.ssh/id_rsa") {
		t.Fatalf("Bash: %d %v", code, ans)
	}
	// A shell tool given as an argv gets cordon run's argv before it.
	argv := map[string]any{"session_id": "s", "cwd": h.ws, "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": []string{"bash", "-lc", "cat ~/.ssh/id_rsa"}}}
	_, ans, _ = h.serve(t, "codex", argv)
	got := ans["hookSpecificOutput"].(map[string]any)["updatedInput"].(map[string]any)["command"]
	if fmt.Sprint(got) != fmt.Sprint(WrapArgv(h.env.Cordon, h.ws, []string{"bash", "-lc", "cat ~/.ssh/id_rsa"})) {
		t.Fatalf("argv: %v", ans)
	}
	for _, tc := range []struct{ patch, deny string }{
		{"*** Begin Patch\n*** Update File: main.go\n@@\n-a\n+b\n*** End Patch", ""},
		{"*** Begin Patch\n*** Add File: ../../.bashrc\n+x\n*** End Patch", "protected"},
		{"*** Begin Patch\n*** Update File: main.go\n*** Move to: ../other/main.go\n*** End Patch", "not listed"},
		{"*** Begin Patch\n*** Delete File: .git/config\n*** End Patch", ".git"},
	} {
		code, ans, stderr := h.serve(t, "codex", call("apply_patch", tc.patch))
		d, r := decision(ans)
		if code != 0 || (tc.deny == "") != (ans == nil) || (tc.deny != "" && (d != "deny" || !strings.Contains(r, tc.deny))) {
			t.Errorf("patch %q: %d %v %q", tc.patch, code, ans, stderr)
		}
	}
	if code, _, _ := h.serve(t, "codex", call("apply_patch", "no files")); code != ExitBlock {
		t.Errorf("a patch naming no file: exit %d", code)
	}
}

// TestGemini: Gemini CLI's BeforeTool input; the shell is rewritten by
// hookSpecificOutput.tool_input (merged over the model's arguments), a
// denied file tool answers decision deny with the reason, an allowed one
// an empty object.
func TestGemini(t *testing.T) {
	h := newHookEnv(t)
	call := func(tool string, input map[string]any) map[string]any {
		return map[string]any{
			"session_id": "s1", "transcript_path": filepath.Join(h.home, ".gemini/tmp/t.json"), "cwd": h.ws,
			"hook_event_name": "BeforeTool", "timestamp": "2026-11-28T01:00:00Z", "tool_name": tool, "tool_input": input,
		}
	}
	_, ans, _ := h.serve(t, "gemini", call("run_shell_command", map[string]any{"command": "ls $HOME", "description": "list"}))
	got := ans["hookSpecificOutput"].(map[string]any)["tool_input"].(map[string]any)["command"]
	if ans["decision"] != "allow" || got != Wrap(h.env.Cordon, h.ws, "ls $HOME") {
		t.Fatalf("shell: %v", ans)
	}
	_, ans, _ = h.serve(t, "gemini", call("read_file", map[string]any{"absolute_path": filepath.Join(h.ws, ".env")}))
	if ans["decision"] != "deny" || !strings.Contains(ans["reason"].(string), "**/.env") {
		t.Fatalf("read_file .env: %v", ans)
	}
	_, ans, _ = h.serve(t, "gemini", call("read_file", map[string]any{"file_path": filepath.Join(h.ws, "main.go")}))
	if ans == nil || len(ans) != 0 {
		t.Fatalf("read_file main.go: %v", ans)
	}
	_, ans, _ = h.serve(t, "gemini", call("list_directory", map[string]any{"dir_path": h.home}))
	if ans["decision"] != "deny" {
		t.Fatalf("list_directory home: %v", ans)
	}
}

// TestCursor: Cursor's beforeShellExecution cannot rewrite, so a command
// is refused with the confined one to run, and that one is allowed;
// beforeReadFile is decided.
func TestCursor(t *testing.T) {
	h := newHookEnv(t)
	base := map[string]any{"conversation_id": "c1", "generation_id": "g1", "workspace_roots": []string{h.ws}}
	call := func(event string, kv ...any) map[string]any {
		m := map[string]any{"hook_event_name": event}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	_, ans, _ := h.serve(t, "cursor", call("beforeShellExecution", "command", "npm install", "cwd", h.ws))
	wrapped := Wrap(h.env.Cordon, h.ws, "npm install")
	if ans["permission"] != "deny" || !strings.HasSuffix(ans["agent_message"].(string), wrapped) {
		t.Fatalf("unwrapped: %v", ans)
	}
	_, ans, _ = h.serve(t, "cursor", call("beforeShellExecution", "command", wrapped, "cwd", filepath.Join(h.ws, "sub")))
	if ans["permission"] != "allow" {
		t.Fatalf("wrapped: %v", ans)
	}
	_, ans, _ = h.serve(t, "cursor", call("beforeShellExecution", "command", wrapped+"; cat ~/.ssh/id_rsa", "cwd", h.ws))
	if ans["permission"] != "deny" {
		t.Fatalf("wrapped and more: %v", ans)
	}
	_, ans, _ = h.serve(t, "cursor", call("beforeReadFile", "file_path", filepath.Join(h.ws, "key"), "content", "KEY"))
	if ans["permission"] != "deny" {
		t.Fatalf("read key: %v", ans)
	}
	_, ans, _ = h.serve(t, "cursor", call("beforeReadFile", "file_path", filepath.Join(h.ws, "main.go"), "content", "x"))
	if ans["permission"] != "allow" {
		t.Fatalf("read main.go: %v", ans)
	}
}
