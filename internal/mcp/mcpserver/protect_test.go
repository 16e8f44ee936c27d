//go:build unix

package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nestedRepo makes dir a git repository: with git init when git is
// installed (configured only by the test: no system or global
// configuration), else by hand (HEAD, objects/, config).
func nestedRepo(t *testing.T, dir, home string) {
	t.Helper()
	if git, err := exec.LookPath("git"); err == nil {
		cmd := exec.Command(git, "init", "-q", dir)
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git init %s: %v\n%s", dir, err, out)
		}
		return
	}
	t.Logf("git not found: making %s a repository by hand", dir)
	for _, d := range []string{filepath.Join(dir, ".git", "objects"), filepath.Join(dir, ".git", "refs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range map[string]string{"HEAD": "ref: refs/heads/main\n", "config": "[core]\n\trepositoryformatversion = 0\n"} {
		if err := os.WriteFile(filepath.Join(dir, ".git", name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNestedGitProtected: writes to the configuration and hooks of a
// repository nested in the workspace are refused as sandbox violations that
// name the rule, change nothing, are audited and leave the server serving;
// no text the server gives the agent advises lifting the sandbox.
func TestNestedGitProtected(t *testing.T) {
	e := start(t, "standard")
	sub := filepath.Join(e.ws, "sub")
	nestedRepo(t, sub, filepath.Dir(e.ws))
	cfg := filepath.Join(sub, ".git", "config")
	before, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	cases := []struct {
		tool string
		args map[string]any
		rule string
	}{
		{ToolWriteFile, map[string]any{"path": "sub/.git/config", "content": "[core]\n\tfsmonitor = touch pwned\n"}, "**/.git/config"},
		{ToolEditFile, map[string]any{"path": "sub/.git/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = touch pwned"}, "**/.git/config"},
		{ToolReplaceLines, map[string]any{"path": "sub/.git/config", "start_anchor": "1:000000", "new_text": "x"}, "**/.git/config"},
		{ToolWriteFile, map[string]any{"path": filepath.Join(sub, ".git", "hooks", "pre-commit"), "content": "#!/bin/sh\ntouch pwned\n"}, "**/.git/hooks/"},
		{ToolCreateDir, map[string]any{"path": "sub/.git/hooks/new"}, "**/.git/hooks/"},
		{ToolCreateDir, map[string]any{"path": "other/.git"}, "**/.git"},
		{ToolWriteFile, map[string]any{"path": "sub/.envrc", "content": "touch pwned\n"}, "**/.envrc"},
	}
	for _, tc := range cases {
		out := e.violation(t, tc.tool, tc.args)
		texts = append(texts, out)
		if !strings.Contains(out, " is protected by rule '"+tc.rule+"'") || !strings.Contains(out, "changing cordon's policy") {
			t.Errorf("%s %v: %q does not name the rule %q and how to change it", tc.tool, tc.args, out, tc.rule)
		}
		// The server keeps serving.
		texts = append(texts, e.ok(t, ToolFileInfo, map[string]any{"path": "a.txt"}))
	}
	if after, err := os.ReadFile(cfg); err != nil || string(after) != string(before) {
		t.Errorf("sub/.git/config changed: %q -> %q (%v)", before, after, err)
	}
	for _, p := range []string{filepath.Join(sub, ".git", "hooks", "pre-commit"), filepath.Join(sub, ".git", "hooks", "new"), filepath.Join(e.ws, "other"), filepath.Join(sub, ".envrc")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s was created", p)
		}
	}
	// Ordinary files of the nested repository stay writable.
	texts = append(texts, e.ok(t, ToolWriteFile, map[string]any{"path": "sub/.git/info/exclude", "content": "*.log\n"}))

	recs := e.auditRecords(t)
	if len(recs) != len(cases) {
		t.Fatalf("%d audit records, want %d", len(recs), len(cases))
	}
	r := recs[0]
	if r.Command != "mcp write_file" || r.Operation != "file-write" || r.Path != cfg || r.Action != "denied" || r.Rule != "**/.git/config" || r.Mode != "standard" {
		t.Errorf("audit record: %+v", r)
	}

	// No text for the agent advises lifting the sandbox.
	texts = append(texts, e.ok(t, ToolSandboxStatus, map[string]any{}))
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		texts = append(texts, tl.Description)
	}
	texts = append(texts, e.cs.InitializeResult().Instructions)
	for _, s := range texts {
		if strings.Contains(s, "--no-sandbox") {
			t.Errorf("text mentions --no-sandbox: %q", s)
		}
	}
	var st Status
	if err := json.Unmarshal([]byte(e.ok(t, ToolSandboxStatus, map[string]any{})), &st); err != nil || !strings.Contains(strings.Join(st.Enforced, "\n"), "at any depth") {
		t.Errorf("sandbox_status: %+v %v", st, err)
	}
}
