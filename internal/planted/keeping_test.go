package planted

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSnapshotKeeping: a git directory the run's mounts kept read-only is
// recorded with the stat fields of its kept entries (SnapshotKeeping), and
// checked as it must be: a config written in place is the host's (only it
// reaches the file while the mount stands), one renamed or replaced
// during the run is examined (that takes the mount away, and the run
// cannot be told from the host there), a to-do list's new exec line is
// the run's, and a directory put at its path during the run (the kept one
// renamed away, a new one made) is examined whole, its old-looking hook
// and config keys counted as the run's. With every directory recorded
// whole (Snapshot), each case reports the same: only the recording
// differs.
func TestSnapshotKeeping(t *testing.T) {
	const evil = "[core]\n\tfsmonitor = evil\n"
	tests := []struct {
		name  string
		plant func(t *testing.T, ws, git string)
		want  []string
		// whole, when set, is what a directory recorded whole
		// (Snapshot) reports: all of it is compared.
		whole []string
	}{
		{
			// Only the host reaches the file while the mount stands,
			// and taking the mount away renames or removes the path,
			// which the directory's times show.
			name: "config written in place from the host",
			plant: func(t *testing.T, ws, git string) {
				write(t, filepath.Join(git, "config"), evil, 0o644)
			},
			whole: []string{"config sub/.git/config core.fsmonitor true"},
		},
		{
			name: "config renamed away, written, renamed back",
			plant: func(t *testing.T, ws, git string) {
				must(t, os.Rename(filepath.Join(git, "config"), filepath.Join(git, "c2")))
				write(t, filepath.Join(git, "c2"), evil, 0o644)
				must(t, os.Rename(filepath.Join(git, "c2"), filepath.Join(git, "config")))
			},
			want: []string{"config sub/.git/config core.fsmonitor true"},
		},
		{
			name: "config removed and made anew",
			plant: func(t *testing.T, ws, git string) {
				must(t, os.Remove(filepath.Join(git, "config")))
				write(t, filepath.Join(git, "config"), evil, 0o644)
			},
			want: []string{"config sub/.git/config core.fsmonitor true"},
		},
		{
			name: "hooks renamed away, a hook added, renamed back",
			plant: func(t *testing.T, ws, git string) {
				must(t, os.Rename(filepath.Join(git, "hooks"), filepath.Join(git, "h2")))
				write(t, filepath.Join(git, "h2", "pre-commit"), "#!/bin/sh\n", 0o755)
				must(t, os.Rename(filepath.Join(git, "h2"), filepath.Join(git, "hooks")))
			},
			want: []string{"hook sub/.git/hooks/pre-commit pre-commit true"},
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
					if s := b.dirs[git]; s == nil || !s.keptOnly || s.entries == nil {
						t.Fatalf("the kept directory's entries were not recorded: %+v", s)
					}
				}
				tc.plant(t, ws, git)
				rep, err := b.Check([]string{ws}, Options{KeptReadOnly: []string{git}})
				if err != nil {
					t.Fatal(err)
				}
				got := summary(rep)
				slices.Sort(got)
				want := tc.want
				if !keeping && tc.whole != nil {
					want = tc.whole
				}
				if !slices.Equal(got, want) {
					t.Errorf("keeping %v: findings %q, want %q", keeping, got, want)
				}
			})
		}
	}
}

// TestKeptPlaceholderTakenAway: the run's own placeholders (ignored by the
// check) are trusted only while they are the files it made: a hooks
// placeholder removed by another process, which takes the mount on it
// away, and made anew by the run with a hook in it, is checked as any
// hooks directory (found by an attack across two concurrent runs); a
// commondir placeholder made anew is too. Left as they were, they are
// not looked at.
func TestKeptPlaceholderTakenAway(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, git string)
		want  []string
	}{
		{name: "left as they were", plant: func(t *testing.T, git string) {}},
		{
			name: "hooks placeholder made anew with a hook",
			plant: func(t *testing.T, git string) {
				must(t, os.Remove(filepath.Join(git, "hooks")))
				write(t, filepath.Join(git, "hooks", "pre-commit"), "#!/bin/sh\n", 0o755)
			},
			want: []string{"hook sub/.git/hooks/pre-commit pre-commit true"},
		},
		{
			name: "commondir placeholder made anew",
			plant: func(t *testing.T, git string) {
				must(t, os.Remove(filepath.Join(git, "commondir")))
				write(t, filepath.Join(git, "commondir"), "../../elsewhere\n", 0o644)
			},
			want: []string{"commondir sub/.git/commondir commondir true"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := newWorkspace(t)
			git := filepath.Join(ws, "sub", ".git")
			fakeGitDir(t, git)
			write(t, filepath.Join(git, "config"), "[core]\n\tbare = false\n", 0o644)
			// The placeholders, as the launcher makes them before the
			// snapshot: an empty hooks directory, a commondir naming ".".
			must(t, os.Remove(filepath.Join(git, "hooks")))
			must(t, os.Mkdir(filepath.Join(git, "hooks"), 0o755))
			write(t, filepath.Join(git, "commondir"), ".\n", 0o644)
			ignore := []string{filepath.Join(git, "hooks"), filepath.Join(git, "commondir")}
			dirs, names, _ := discover([]string{ws}, Limits{})
			b := SnapshotKeeping(dirs, names, []string{git})
			tc.plant(t, git)
			rep, err := b.Check([]string{ws}, Options{KeptReadOnly: []string{git}, Ignore: ignore})
			if err != nil {
				t.Fatal(err)
			}
			got := summary(rep)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("findings %q, want %q", got, tc.want)
			}
		})
	}
}
