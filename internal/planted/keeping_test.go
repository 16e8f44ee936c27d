package planted

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSnapshotKeeping: a git directory the run's mounts kept read-only is
// recorded without its config and hooks (SnapshotKeeping), and still
// checked as it must be: a change of its config from the host is not the
// run's, a to-do list's new exec line is, and a directory put at its path
// during the run (the kept one renamed away, a new one made) is examined
// whole, its old-looking hook and config keys counted as the run's. With
// every directory recorded whole (Snapshot), the last case reports the
// same: only the recording differs.
func TestSnapshotKeeping(t *testing.T) {
	const evil = "[core]\n\tfsmonitor = evil\n"
	tests := []struct {
		name  string
		plant func(t *testing.T, ws, git string)
		want  []string
	}{
		{
			name: "config changed from the host",
			plant: func(t *testing.T, ws, git string) {
				write(t, filepath.Join(git, "config"), evil, 0o644)
			},
		},
		{
			name: "exec line in a to-do list",
			plant: func(t *testing.T, ws, git string) {
				write(t, filepath.Join(git, "rebase-merge", "git-rebase-todo"), "pick 1234 x\nexec evil\n", 0o644)
			},
			want: []string{"todo sub/.git/rebase-merge/git-rebase-todo exec true"},
		},
		{
			name: "kept directory replaced",
			plant: func(t *testing.T, ws, git string) {
				must(t, os.Rename(filepath.Join(ws, "sub"), filepath.Join(ws, "moved")))
				fakeGitDir(t, git)
				write(t, filepath.Join(git, "hooks", "pre-commit"), "#!/bin/sh\n", 0o755)
				write(t, filepath.Join(git, "config"), evil, 0o644)
			},
			want: []string{"config sub/.git/config core.fsmonitor true", "hook sub/.git/hooks/pre-commit pre-commit true"},
		},
	}
	for _, tc := range tests {
		for _, keeping := range []bool{true, false} {
			t.Run(tc.name, func(t *testing.T) {
				ws := newWorkspace(t)
				git := filepath.Join(ws, "sub", ".git")
				fakeGitDir(t, git)
				write(t, filepath.Join(git, "config"), "[core]\n\tbare = false\n", 0o644)
				dirs, names, note := discover([]string{ws}, Limits{})
				if note != "" {
					t.Fatal(note)
				}
				if !slices.Contains(dirs, git) {
					t.Fatalf("discover found %v, not %s", dirs, git)
				}
				b := Snapshot(dirs, names)
				if keeping {
					b = SnapshotKeeping(dirs, names, []string{git})
					if s := b.dirs[git]; s == nil || !s.keptOnly || s.configs != nil || s.hooks != nil {
						t.Fatalf("the kept directory was recorded whole: %+v", s)
					}
				}
				tc.plant(t, ws, git)
				rep, err := b.Check([]string{ws}, Options{KeptReadOnly: []string{git}})
				if err != nil {
					t.Fatal(err)
				}
				got := summary(rep)
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("keeping %v: findings %q, want %q", keeping, got, tc.want)
				}
			})
		}
	}
}
