package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
)

// TestWindowsSession is an agent's session on Windows: the Go SDK's MCP
// client drives the server (the same Server cordon-mcp runs) over an
// in-memory transport. The file tools work in the workspace by handle,
// refuse what Windows names otherwise than the rules (case, streams,
// devices, short names), and run_command runs in a Job Object.
func TestWindowsSession(t *testing.T) {
	base, err := os.MkdirTemp("", "cordon-mcp-")
	if err != nil {
		t.Fatal(err)
	}
	// Wine refuses the deletion os.RemoveAll asks for: its failure is
	// left alone (see workspace's tempDir).
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	home := filepath.Join(base, "home")
	ws := filepath.Join(home, "proj")
	for _, d := range []string{filepath.Join(ws, "src"), filepath.Join(ws, ".git", "hooks"), filepath.Join(ws, ".git", "objects"), filepath.Join(base, "outside")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{
		filepath.Join(ws, "a.txt"):               "alpha\nbeta\n",
		filepath.Join(ws, "src", "main.go"):      "package main\n\n// Needle\nfunc main() {}\n",
		filepath.Join(ws, ".env"):                "TOKEN=secret\n",
		filepath.Join(ws, ".git", "HEAD"):        "ref: refs/heads/main\n",
		filepath.Join(base, "outside", "secret"): "outside\n",
	} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := policy.Host{Home: home, Cwd: ws, Getenv: os.LookupEnv}
	p, err := policy.Load(policy.Options{Host: h, Workspace: ws, Flags: config.NewFlags(), SkipUserConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(home, ".local", "state", "cordon")
	lg, err := audit.Open(filepath.Join(state, "audit.jsonl"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	cs := connect(t, Options{Policy: p, Audit: lg, SessionID: "win", Version: "test",
		Plan: plan.Options{Home: home, Getenv: os.LookupEnv, StateDir: state}})
	for _, tc := range []struct {
		tool string
		args map[string]any
		fail bool   // a tool error is wanted
		want string // a substring of the text
	}{
		{ToolReadFile, map[string]any{"path": "a.txt"}, false, "alpha"},
		{ToolReadFile, map[string]any{"path": ws + `\a.txt`}, false, "alpha"},
		{ToolWriteFile, map[string]any{"path": `src\new.txt`, "content": "one\ntwo\n"}, false, "created"},
		{ToolEditFile, map[string]any{"path": "src/new.txt", "old_string": "two", "new_string": "three"}, false, ""},
		{ToolReadFile, map[string]any{"path": "src/new.txt"}, false, "three"},
		{ToolListDir, map[string]any{"path": "src"}, false, "main.go"},
		{ToolFindFiles, map[string]any{"pattern": "**/*.go"}, false, "src/main.go"},
		{ToolGrep, map[string]any{"pattern": "Needle"}, false, "main.go"},
		{ToolCreateDir, map[string]any{"path": "build/out"}, false, ""},
		{ToolReadFile, map[string]any{"path": ".ENV"}, true, "sandbox violation: path '.ENV' is denied by rule '**/.env'"},
		{ToolReadFile, map[string]any{"path": "a.txt:secret"}, true, "alternate data stream"},
		{ToolReadFile, map[string]any{"path": "../outside/secret"}, true, "outside the workspace"},
		{ToolReadFile, map[string]any{"path": filepath.Join(base, "outside", "secret")}, true, "outside the workspace"},
		{ToolWriteFile, map[string]any{"path": ".git/hooks/pre-commit", "content": "x"}, true, "protected"},
		{ToolWriteFile, map[string]any{"path": `.git\config`, "content": "x"}, true, "protected"},
		{ToolWriteFile, map[string]any{"path": ".Git/config", "content": "x"}, true, "differs only in case"},
		{ToolWriteFile, map[string]any{"path": "GIT~1/config", "content": "x"}, true, "short (8.3) name"},
		{ToolWriteFile, map[string]any{"path": "src/AUX", "content": "x"}, true, "device AUX"},
		{ToolRunCommand, map[string]any{"command": "type src\\new.txt"}, false, "three"},
		{ToolRunCommand, map[string]any{"argv": []string{"cmd.exe", "/d", "/c", "exit", "3"}}, false, "exit code: 3"},
	} {
		out, isErr := callTool(t, cs, tc.tool, tc.args)
		if isErr != tc.fail || !strings.Contains(out, tc.want) {
			t.Errorf("%s %v: isError=%v %q; want isError=%v and %q", tc.tool, tc.args, isErr, out, tc.fail, tc.want)
		}
	}
	for _, f := range []string{filepath.Join(ws, ".git", "hooks", "pre-commit"), filepath.Join(ws, ".git", "config")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was written", f)
		}
	}
	recs, _, err := audit.Read(filepath.Join(state, "audit.jsonl"), audit.Filter{Actions: []string{"denied"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 8 {
		t.Errorf("%d denied records in the audit log, want one for each refusal: %+v", len(recs), recs)
	}
}
