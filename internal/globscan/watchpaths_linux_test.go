//go:build linux

package globscan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// TestWatchPaths: WatchPaths reports its paths watched only once every
// watch they need was there before, and Changes then counts each change to
// what they name: a file's content or mode, an entry made in a directory
// listed, a path that did not exist made, a directory above renamed; a
// new file at the path of a removed one is not taken for watched.
func TestWatchPaths(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, root string)
	}{
		{"a file written", func(t *testing.T, root string) { appendTo(t, filepath.Join(root, "a/config"), "x") }},
		{"a file's mode", func(t *testing.T, root string) { chmod(t, filepath.Join(root, "a/config"), 0o755) }},
		{"an entry made in a listed directory", func(t *testing.T, root string) { appendTo(t, filepath.Join(root, "a/hooks/pre-commit"), "x") }},
		{"an absent path made", func(t *testing.T, root string) { mkdir(t, filepath.Join(root, "a/rebase-merge")) }},
		{"a directory above renamed", func(t *testing.T, root string) {
			if err := os.Rename(filepath.Join(root, "a"), filepath.Join(root, "b")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			mkdir(t, filepath.Join(root, "a/hooks"))
			appendTo(t, filepath.Join(root, "a/config"), "[core]\n")
			paths := []string{filepath.Join(root, "a/config"), filepath.Join(root, "a/hooks"), filepath.Join(root, "a/rebase-merge/git-rebase-todo")}
			c := OpenCache(t.TempDir())
			testenv.Inotify(t, func() error { return c.Watch(0) })
			defer c.Close()
			if c.WatchPaths(paths) {
				t.Fatal("the first WatchPaths reported its paths already watched")
			}
			n, ok := c.Changes()
			if !ok || !c.WatchPaths(paths) {
				t.Fatalf("the second WatchPaths (ok %v) did not find its watches", ok)
			}
			if m, _ := c.Changes(); m != n {
				t.Fatalf("changes counted with none made: %d, then %d", n, m)
			}
			tc.change(t, root)
			if m, ok := c.Changes(); !ok || m == n {
				t.Errorf("%s: not counted (%d, then %d)", tc.name, n, m)
			}
		})
	}
	t.Run("a new file at a removed one's path", func(t *testing.T) {
		root := t.TempDir()
		f := filepath.Join(root, "config")
		appendTo(t, f, "x")
		c := OpenCache(t.TempDir())
		testenv.Inotify(t, func() error { return c.Watch(0) })
		defer c.Close()
		c.WatchPaths([]string{f})
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
		appendTo(t, f, "y")
		c.Changes()
		if c.WatchPaths([]string{f}) {
			t.Error("a new file at a removed one's path was taken for watched")
		}
	})
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}
