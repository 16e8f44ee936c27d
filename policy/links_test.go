package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLinkTargets: the links among the paths that lead into the trees
// within are found whether their directory is listed at once (listFrom
// paths or more in it), cannot be listed (searchable only), is empty, or
// holds a few paths looked up one by one.
func TestLinkTargets(t *testing.T) {
	root := t.TempDir()
	within := filepath.Join(root, "ws")
	outside := filepath.Join(root, "out")
	for _, d := range []string{within, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(within, "bashrc")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// dir holds n candidate names; link names a link to target, away one
	// to a file outside within, file a regular file.
	setup := func(t *testing.T, dir string, n int, plant bool, mode os.FileMode) []string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var paths []string
		for i := range n {
			paths = append(paths, filepath.Join(dir, fmt.Sprintf(".name%d", i)))
		}
		if plant {
			if err := os.Symlink(target, paths[0]); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, "x"), paths[1]); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(paths[2], nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return paths
	}
	for _, tc := range []struct {
		name  string
		n     int
		plant bool
		mode  os.FileMode
		want  []string
	}{
		{"listed", 3 * listFrom, true, 0o755, []string{target}},
		{"searchable, not readable", 3 * listFrom, true, 0o311, []string{target}},
		{"a few, looked up", 3, true, 0o755, []string{target}},
		{"empty", 2 * listFrom, false, 0o755, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(root, "home-"+tc.name)
			paths := setup(t, dir, tc.n, tc.plant, tc.mode)
			paths = append(paths, filepath.Join(dir, ".config", "fish")) // below a missing directory
			got := LinkTargets(paths, []string{within})
			if !slices.Equal(got, tc.want) {
				t.Errorf("LinkTargets = %q, want %q", got, tc.want)
			}
		})
	}
}
