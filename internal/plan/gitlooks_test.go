package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// TestProtectGitLooks: where git looks besides a git directory's own
// entries (core.hooksPath, include.path), inside a writable root, is kept
// read-only (existing) or behind a placeholder (missing), with the
// directories between the root and it pinned; the Guard lists it for the
// check after the run; what lies outside every writable root is not.
func TestProtectGitLooks(t *testing.T) {
	p, opts := testPolicy(t)
	p.Protected = policy.Protected
	ws, st := p.Workspace, opts.StateDir
	fakeGitDir(t, filepath.Join(ws, ".git"))
	cfg := "[core]\n\thooksPath = .husky/_\n[include]\n\tpath = ../.gitconfig-local\n\tpath = ../missing.cfg\n\tpath = /nonexistent-outside/x.cfg\n"
	if err := os.WriteFile(filepath.Join(ws, ".git", "config"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	fakeGitDir(t, filepath.Join(ws, "sub", ".git"))
	if err := os.WriteFile(filepath.Join(ws, "sub", ".git", "config"), []byte("[core]\n\thooksPath = tools/hooks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{".husky/_/h", ".gitconfig-local", "sub/tools/README"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ro := func(path string) []string { return []string{"--ro-bind", path, path} }
	pin := func(path string) []string { return []string{"--bind", path, path} }
	ph := func(src, path string) []string { return []string{"--ro-bind", filepath.Join(st, src), path} }
	for _, w := range [][]string{
		pin(filepath.Join(ws, ".husky")),
		ro(filepath.Join(ws, ".husky", "_")),
		ro(filepath.Join(ws, ".gitconfig-local")),
		ph(emptyFile, filepath.Join(ws, "missing.cfg")),
		pin(filepath.Join(ws, "sub", "tools")),
		ph(emptyDir, filepath.Join(ws, "sub", "tools", "hooks")),
	} {
		if !hasSeq(pl.Argv, w...) {
			t.Errorf("argv lacks %q", w)
		}
	}
	if !slices.ContainsFunc(pl.Notes, func(n string) bool {
		return strings.Contains(n, filepath.Join(ws, ".husky", "_")+" (the hooks directory core.hooksPath names)")
	}) {
		t.Errorf("no note for --explain: %q", pl.Notes)
	}
	g := pl.Guard.Git
	wantHooks := []string{filepath.Join(ws, ".husky", "_"), filepath.Join(ws, "sub", "tools", "hooks")}
	wantConfigs := []string{filepath.Join(ws, ".gitconfig-local"), filepath.Join(ws, "missing.cfg")}
	if !slices.Equal(g.Hooks, wantHooks) || !slices.Equal(g.Configs, wantConfigs) {
		t.Errorf("Guard.Git = %+v, want hooks %q configs %q", g, wantHooks, wantConfigs)
	}
}

// TestHooksPathIsTheWorkspace: core.hooksPath naming the workspace itself
// keeps the workspace read-only (git would run any file there named like a
// hook), and the run says so once.
func TestHooksPathIsTheWorkspace(t *testing.T) {
	p, opts := testPolicy(t)
	p.Protected = policy.Protected
	ws := p.Workspace
	fakeGitDir(t, filepath.Join(ws, ".git"))
	if err := os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n\thooksPath = .\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !hasSeq(pl.Argv, "--ro-bind", ws, ws) || !slices.ContainsFunc(pl.RunNotes, func(n string) bool { return strings.HasPrefix(n, ws+" is read-only in this run") }) {
		t.Errorf("workspace not kept read-only, or not said: %q", pl.RunNotes)
	}
}
