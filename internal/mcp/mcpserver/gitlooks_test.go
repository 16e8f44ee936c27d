//go:build unix

package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/config"
)

// appendFile appends text to the file p.
func appendFile(t *testing.T, p, text string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// TestGitLooksRefused: the file tools refuse to write where git looks
// besides .git: the hooks directory core.hooksPath names (in the work
// tree, in a nested repository's, or in another writable root) and a
// config file include.path names; files beside them stay writable, and
// a directory that is no longer the hooks directory too.
func TestGitLooksRefused(t *testing.T) {
	other, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := startWith(t, "standard", func(l *config.Layer) { l.Filesystem.Write = append(l.Filesystem.Write, other) })
	home := filepath.Dir(e.ws)
	nestedRepo(t, e.ws, home)
	appendFile(t, filepath.Join(e.ws, ".git", "config"), "[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../.gitconfig-local\n")
	appendFile(t, filepath.Join(e.ws, ".gitconfig-local"), "[user]\n\tname = t\n")
	sub := filepath.Join(e.ws, "sub")
	nestedRepo(t, sub, home)
	appendFile(t, filepath.Join(sub, ".git", "config"), "[core]\n\thooksPath = h\n")

	type call struct {
		tool string
		args map[string]any
		rule string
	}
	check := func(calls []call) {
		t.Helper()
		for _, tc := range calls {
			if tc.rule == "" {
				e.ok(t, tc.tool, tc.args)
				continue
			}
			out := e.violation(t, tc.tool, tc.args)
			if !strings.Contains(out, "git's "+tc.rule+" names") || !strings.Contains(out, "changing cordon's policy") {
				t.Errorf("%s %v: %q does not name %s", tc.tool, tc.args, out, tc.rule)
			}
		}
	}
	check([]call{
		{ToolWriteFile, map[string]any{"path": ".githooks/pre-commit", "content": "#!/bin/sh\ntouch pwned\n"}, "core.hooksPath"},
		{ToolCreateDir, map[string]any{"path": ".githooks"}, "core.hooksPath"},
		{ToolWriteFile, map[string]any{"path": ".gitconfig-local", "content": "[core]\n\tfsmonitor = touch pwned\n"}, "include.path"},
		{ToolEditFile, map[string]any{"path": ".gitconfig-local", "old_string": "[user]", "new_string": "[core]\n\tfsmonitor = touch pwned\n[user]"}, "include.path"},
		{ToolWriteFile, map[string]any{"path": "sub/h/pre-commit", "content": "#!/bin/sh\ntouch pwned\n"}, "core.hooksPath"},
		{ToolWriteFile, map[string]any{"path": "sub/x", "content": "x\n"}, ""},
		{ToolWriteFile, map[string]any{"path": ".gitconfig-other", "content": "x\n"}, ""},
		{ToolWriteFile, map[string]any{"path": ".githooks-not/x", "content": "x\n"}, ""},
	})
	// An absolute core.hooksPath in another writable root (the last one
	// wins).
	appendFile(t, filepath.Join(e.ws, ".git", "config"), "[core]\n\thooksPath = "+filepath.Join(other, "hooks")+"\n")
	check([]call{
		{ToolWriteFile, map[string]any{"path": filepath.Join(other, "hooks", "pre-commit"), "content": "#!/bin/sh\ntouch pwned\n"}, "core.hooksPath"},
		{ToolWriteFile, map[string]any{"path": filepath.Join(other, "notes"), "content": "x\n"}, ""},
		{ToolWriteFile, map[string]any{"path": ".githooks/pre-commit", "content": "x\n"}, ""},
	})
	for _, p := range []string{filepath.Join(sub, "h"), filepath.Join(other, "hooks")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s was created", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, ".gitconfig-local")); string(b) != "[user]\n\tname = t\n" {
		t.Errorf(".gitconfig-local changed: %q", b)
	}
}
