//go:build unix

package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolFilesRefusedOverMCP: write_file through the MCP server refuses a
// virtual environment's .pth and activate script and a project's tool
// files (.npmrc, .cargo/config.toml, .mvn/jvm.config), as sandbox
// violations naming the rule, audited, with nothing written; an ordinary
// module in site-packages stays writable.
func TestToolFilesRefusedOverMCP(t *testing.T) {
	e := start(t, "standard")
	sp := filepath.Join(".venv", "lib", "python3.12", "site-packages")
	if err := os.MkdirAll(filepath.Join(e.ws, sp), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, rule string }{
		{filepath.Join(sp, "x.pth"), "**/site-packages/*.pth"},
		{filepath.Join(sp, "sitecustomize.py"), "**/site-packages/sitecustomize.py"},
		{".venv/bin/activate", "**/bin/activate"},
		{".npmrc", "**/.npmrc"},
		{"sub/.cargo/config.toml", "**/.cargo/config.toml"},
		{".mvn/jvm.config", "**/.mvn/jvm.config"},
	}
	for _, tc := range cases {
		out := e.violation(t, ToolWriteFile, map[string]any{"path": tc.path, "content": "import os; os.system('touch pwned')\n"})
		if !strings.Contains(out, " is protected by rule '"+tc.rule+"'") {
			t.Errorf("write_file %s: %q does not name the rule %q", tc.path, out, tc.rule)
		}
		if _, err := os.Lstat(filepath.Join(e.ws, tc.path)); !os.IsNotExist(err) {
			t.Errorf("%s was written", tc.path)
		}
	}
	e.ok(t, ToolWriteFile, map[string]any{"path": filepath.Join(sp, "pkg", "mod.py"), "content": "X = 1\n"})
	if recs := e.auditRecords(t); len(recs) != len(cases) {
		t.Errorf("%d audit records, want %d", len(recs), len(cases))
	}
}
