package plan

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// TestGitConfigCopies: each git directory's config that is a regular file
// is bound from its private copy (Plan.GitConfigs, descriptors from
// helperspec.FdGitConfigs in order), and stays kept read-only for the
// check after the run; a config that is a symbolic link, a missing one
// (a placeholder) and config.worktree stay read-only binds; and
// WithoutGitCopies binds every copied config read-only again.
func TestGitConfigCopies(t *testing.T) {
	p, opts := testPolicy(t)
	p.Protected = policy.Protected
	ws := p.Workspace
	fakeGitDir(t, filepath.Join(ws, ".git"), "config", "config.worktree")
	fakeGitDir(t, filepath.Join(ws, ".git", "modules", "lib"), "config")
	fakeGitDir(t, filepath.Join(ws, "linked", ".git"))
	if err := os.Symlink("../../shared.cfg", filepath.Join(ws, "linked", ".git", "config")); err != nil {
		t.Fatal(err)
	}
	fakeGitDir(t, filepath.Join(ws, "none", ".git"))
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(ws, ".git", "config"), filepath.Join(ws, ".git", "modules", "lib", "config")}
	got := slices.Clone(pl.GitConfigs)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("GitConfigs %q, want %q", pl.GitConfigs, want)
	}
	for _, c := range want {
		if !hasSeq(pl.Argv, gitCopy(pl, c)...) {
			t.Errorf("argv lacks %q:\n%q", gitCopy(pl, c), pl.Argv)
		}
		if !slices.Contains(pl.Guard.KeptReadOnly, filepath.Dir(c)) {
			t.Errorf("%s is not kept read-only for the check after the run: %q", filepath.Dir(c), pl.Guard.KeptReadOnly)
		}
	}
	for _, c := range []string{filepath.Join(ws, ".git", "config.worktree"), filepath.Join(ws, "none", ".git", "config"), filepath.Join(ws, "linked", ".git", "config")} {
		for i, a := range pl.Argv {
			if a == c && i >= 2 && pl.Argv[i-2] == "--bind-fd" {
				t.Errorf("%s is bound from a copy", c)
			}
		}
	}
	ro := pl.WithoutGitCopies()
	if len(ro.GitConfigs) != 0 || len(pl.GitConfigs) != 2 {
		t.Errorf("WithoutGitCopies: %q, and the plan's own %q", ro.GitConfigs, pl.GitConfigs)
	}
	for _, c := range want {
		if !hasSeq(ro.Argv, "--ro-bind", c, c) || slices.Contains(ro.Argv, "--bind-fd") {
			t.Errorf("WithoutGitCopies leaves %s writable:\n%q", c, ro.Argv)
		}
	}
}

// TestExposes: a directory is exposed when a bind's source holds it or
// lies below it; binds of the command's arguments (after "--") and
// other options' operands are not binds.
func TestExposes(t *testing.T) {
	pl := &Plan{Argv: []string{"bwrap", "--ro-bind", "/usr", "/usr", "--tmpfs", "/dev/shm", "--bind", "/home/u/ws", "/home/u/ws",
		"--ro-bind-try", "/run/user/1/bus", "/run/user/1/bus", "--", "cp", "--bind", "/dev/shm", "x"}}
	tests := []struct {
		dir  string
		want bool
	}{
		{"/dev/shm/cordon-1-ab", false},
		{"/usr/share", true},
		{"/home/u/ws/.git", true},
		{"/home/u", true},
		{"/run/user/1/cordon-1-ab", false},
		{"/run/user/1", true},
		{"/", true},
	}
	for _, tc := range tests {
		if got := pl.Exposes(tc.dir); got != tc.want {
			t.Errorf("Exposes(%s) = %v, want %v", tc.dir, got, tc.want)
		}
	}
}
