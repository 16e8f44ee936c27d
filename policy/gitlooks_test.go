package policy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/gitconfig"
)

// TestGitLooks: the hooks directories and included config files of the
// repositories given (a git directory, a gitlink, the workspace's
// repository) and of the global config, each once; a git directory's own
// entries, which the fixed rules cover, are left out.
func TestGitLooks(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".gitconfig"), "[include]\n\tpath = ~/.gitconfig.d/x\n")
	a := filepath.Join(root, "a", ".git")
	write(filepath.Join(a, "config"), "[core]\n\thooksPath = .githooks\n[include]\n\tpath = config\n\tpath = ../shared.cfg\n")
	mod := filepath.Join(root, "a", ".git", "modules", "m")
	write(filepath.Join(mod, "config"), "[core]\n\tworktree = ../../../m\n\thooksPath = "+filepath.Join(mod, "hooks")+"\n[include]\n\tpath = ../../../shared.cfg\n")
	write(filepath.Join(root, "a", "m", ".git"), "gitdir: ../.git/modules/m\n")
	up := filepath.Join(root, "up", ".git")
	write(filepath.Join(up, "config"), "[core]\n\thooksPath = h\n")
	p := &Policy{GitEnv: gitconfig.Env{Home: home}, Repo: &Repo{WorkTree: filepath.Join(root, "up"), GitDir: up}}
	got := p.GitLooks([]string{a}, []string{filepath.Join(root, "a", "m", ".git")})
	wantHooks := []string{filepath.Join(root, "a", ".githooks"), filepath.Join(root, "up", "h")}
	wantConfigs := []string{filepath.Join(root, "a", "shared.cfg"), filepath.Join(home, ".gitconfig.d", "x")}
	if !slices.Equal(got.Hooks, wantHooks) || !slices.Equal(got.Configs, wantConfigs) {
		t.Errorf("GitLooks = %+v\nwant hooks %q configs %q", got, wantHooks, wantConfigs)
	}
}

// TestDecideGitLooks: cordon test's decision names why a write to the
// workspace repository's core.hooksPath directory or included config was
// refused; a file beside them is allowed.
func TestDecideGitLooks(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../local.cfg\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Policy{Mode: ModeStandard, Workspace: ws, Write: []string{ws}}
	d := p.Decider("")
	for path, want := range map[string]string{
		filepath.Join(ws, ".githooks", "pre-commit"): "git config: core.hooksPath names " + filepath.Join(ws, ".githooks"),
		filepath.Join(ws, "local.cfg"):               "git config: include.path names " + filepath.Join(ws, "local.cfg"),
		filepath.Join(ws, "other.cfg"):               "",
	} {
		got := d.Decide(OpWrite, path)
		if got.Denied != (want != "") || want != "" && got.Rule != want {
			t.Errorf("Decide(write, %s) = %+v, want rule %q", path, got, want)
		}
	}
}
