package launch

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGitWrites: a config lock file removed rather than renamed onto the
// config (git's write refused) is reported for its config file, once; one
// renamed onto it (a write that worked), other lock files and an
// unwatched directory are not.
func TestGitWrites(t *testing.T) {
	root := t.TempDir()
	a, b, other := filepath.Join(root, "a", ".git"), filepath.Join(root, "b", ".git"), filepath.Join(root, "other")
	for _, d := range []string{a, b, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w, err := watchGitWrites([]string{a, b, filepath.Join(root, "missing")})
	if w == nil || err != nil {
		t.Fatalf("no watch: %v", err)
	}
	write := func(p string) {
		t.Helper()
		if err := os.WriteFile(p, []byte("[core]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // refused twice: reported once
		write(filepath.Join(a, "config.lock"))
		if err := os.Remove(filepath.Join(a, "config.lock")); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(a, "config.worktree.lock"))
	if err := os.Remove(filepath.Join(a, "config.worktree.lock")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(b, "config.lock"))
	if err := os.Rename(filepath.Join(b, "config.lock"), filepath.Join(b, "config")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(b, "index.lock"), filepath.Join(other, "config.lock")} {
		write(p)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{filepath.Join(a, "config"), filepath.Join(a, "config.worktree")}
	if got := w.finish(); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := w.finish(); !slices.Equal(got, want) {
		t.Errorf("again: got %q, want %q", got, want)
	}
	if got := (*gitWrites)(nil).finish(); got != nil {
		t.Errorf("a nil watch: %q", got)
	}
}

// TestGitWritesNoInotify: a watch that cannot have an inotify instance
// (the user's used up) says so, for the run to warn that a refused write
// goes unreported; nothing to watch is no error.
func TestGitWritesNoInotify(t *testing.T) {
	defer func(f func() (int, error)) { inotifyInit = f }(inotifyInit)
	inotifyInit = func() (int, error) { return -1, unix.EMFILE }
	w, err := watchGitWrites([]string{t.TempDir()})
	if w != nil || !errors.Is(err, unix.EMFILE) {
		t.Errorf("without an inotify instance: %v, %v", w, err)
	}
	if w, err := watchGitWrites(nil); w != nil || err != nil {
		t.Errorf("nothing to watch: %v, %v", w, err)
	}
}
