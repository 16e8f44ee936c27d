package globscan

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// ignoringScan scans root with c ignoring the paths ignore (relative to
// root), checks the result against a scan without a cache outside them,
// and returns whether the scan was answered from an earlier one
// (CacheStats.Reused went up).
func ignoringScan(t *testing.T, c *Cache, root string, ignore ...string) bool {
	t.Helper()
	var abs []string
	for _, p := range ignore {
		abs = append(abs, filepath.Join(root, p))
	}
	ignored := subpath.NewSet(abs)
	outside := func(rels []string) []string {
		return slices.DeleteFunc(rels, func(r string) bool { return ignored.Holds(filepath.Join(root, r)) })
	}
	before := c.Stats().Reused
	ms, _, err := c.ScanPatternsIgnoring(root, cachePats, Limits{}, abs)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	if got, want := outside(rels(ms)), outside(plainScan(t, root)); !slices.Equal(got, want) {
		t.Fatalf("scan ignoring %q: %q, want %q", ignore, got, want)
	}
	return c.Stats().Reused > before
}

// TestScanIgnoring: a watched cache answers a scan from the earlier one
// when every change since is at or below a path the caller ignores (a
// run's placeholders: files in a git directory, directories at the top),
// and reads again after any other change, however small: an entry made,
// removed or renamed next to them, a mode changed, a directory removed,
// an entry made inside a directory that is not ignored. The scan that
// ignored directories it had not watched before answers no scan that
// does not ignore them.
func TestScanIgnoring(t *testing.T) {
	ph := []string{"repo/.git/commondir", "repo/.git/config.worktree", ".vscode", ".idea"}
	place := func(t *testing.T, root string) {
		for _, p := range ph[:2] {
			if err := os.WriteFile(filepath.Join(root, p), nil, 0o444); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range ph[2:] {
			if err := os.Mkdir(filepath.Join(root, p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	unplace := func(t *testing.T, root string) {
		for _, p := range ph {
			if err := os.Remove(filepath.Join(root, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// ready makes the placeholders and a first check that records them,
	// then a run's end and start (removed, made again): the state of the
	// check after the next run.
	ready := func(t *testing.T) (string, *Cache) {
		root, c := watchedTree(t, 0)
		settle(t, c, root)
		place(t, root)
		for range 3 {
			ignoringScan(t, c, root, ph...)
		}
		unplace(t, root)
		place(t, root)
		return root, c
	}
	t.Run("only ignored changes", func(t *testing.T) {
		root, c := ready(t)
		if !ignoringScan(t, c, root, ph...) {
			t.Fatal("placeholders removed and made again: the scan was not answered from the earlier one")
		}
	})
	t.Run("a scan that ignores nothing", func(t *testing.T) {
		// Right after the scan that ignored new directories, nothing
		// changed: still, it does not answer a scan that looks at them.
		root, c := watchedTree(t, 0)
		settle(t, c, root)
		place(t, root)
		// And a change it does not ignore, so that it reads again.
		if err := os.WriteFile(filepath.Join(root, "sub/new.txt"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if ignoringScan(t, c, root, ph...) {
			t.Fatal("a scan after a change it does not ignore was answered from the earlier one")
		}
		if watchedScan(t, c, root) {
			t.Error("a scan that ignores nothing was answered from one that ignored new directories")
		}
	})
	t.Run("a change pushed out by ignored ones", func(t *testing.T) {
		// One change that is not ignored, then more ignored names in the
		// same directory than a watch remembers: the first is forgotten
		// by name, not as a change.
		var many []string
		for i := range maxNamed + 5 {
			many = append(many, fmt.Sprintf("repo/.git/ph%d", i))
		}
		root, c := watchedTree(t, 0)
		settle(t, c, root)
		for range 3 {
			ignoringScan(t, c, root, many...)
		}
		if err := os.WriteFile(filepath.Join(root, "repo/.git/x"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, p := range many {
			if err := os.WriteFile(filepath.Join(root, p), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if ignoringScan(t, c, root, many...) {
			t.Error("a change followed by many ignored ones in its directory was not seen")
		}
	})
	for _, tc := range []struct {
		name   string
		change func(root string) error
	}{
		{"a file made in a git directory", func(r string) error {
			return os.WriteFile(filepath.Join(r, "repo/.git/hooks/post-checkout"), []byte("#!/bin/sh\n"), 0o755)
		}},
		{"a file made next to a placeholder", func(r string) error { return os.WriteFile(filepath.Join(r, "repo/.git/commondir2"), nil, 0o644) }},
		{"a .env made deep down", func(r string) error { return os.WriteFile(filepath.Join(r, "deep/p/q5/r/.env"), nil, 0o644) }},
		{"a repository made", func(r string) error { return os.MkdirAll(filepath.Join(r, "sub/new/.git"), 0o755) }},
		{"a directory removed", func(r string) error { return os.Remove(filepath.Join(r, "a/b/d")) }},
		{"a file renamed", func(r string) error {
			return os.Rename(filepath.Join(r, "sub/plain.txt"), filepath.Join(r, "sub/.env"))
		}},
		{"a mode changed", func(r string) error { return os.Chmod(filepath.Join(r, "sub/deep/x.go"), 0o755) }},
		{"a directory's mode changed", func(r string) error { return os.Chmod(filepath.Join(r, "a/b"), 0o700) }},
		{"a directory made at the top", func(r string) error { return os.Mkdir(filepath.Join(r, ".vscodex"), 0o755) }},
		{"a placeholder's source linked elsewhere", func(r string) error {
			return os.Link(filepath.Join(r, "repo/.git/commondir"), filepath.Join(r, "sub/secrets.txt"))
		}},
		{"many ignored changes, then one other", func(r string) error {
			for i := range 2 * maxNamed {
				p := filepath.Join(r, "repo/.git/commondir")
				if err := os.Chmod(p, os.FileMode(0o400|i%2*0o40)); err != nil {
					return err
				}
			}
			for i := range maxNamed + 5 {
				if err := os.Mkdir(filepath.Join(r, ".idea", fmt.Sprint(i)), 0o755); err != nil {
					return err
				}
			}
			return os.WriteFile(filepath.Join(r, "repo/.git/x"), nil, 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, c := ready(t)
			if err := tc.change(root); err != nil {
				t.Fatal(err)
			}
			if ignoringScan(t, c, root, ph...) {
				t.Errorf("after %s the scan was answered from the earlier one", tc.name)
			}
		})
	}
}

func TestCoveredBy(t *testing.T) {
	for _, tc := range []struct {
		need, ignore []string
		want         bool
	}{
		{nil, nil, true},
		{[]string{"/w/a"}, nil, false},
		{[]string{"/w/a", "/w/b/c/d"}, []string{"/w/a", "/w/b"}, true},
		{[]string{"/w/a", "/w/e"}, []string{"/w/a"}, false},
	} {
		if got := coveredBy(tc.need, tc.ignore); got != tc.want {
			t.Errorf("coveredBy(%q, %q) = %v, want %v", tc.need, tc.ignore, got, tc.want)
		}
	}
}
