package planted

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestVenvRoots: the virtual environments found at the top of a root and
// one level down, in order, whether looked up through a descriptor of the
// directory at the top (none there: the common case) or through the root
// (a .venv that is a link to another directory of the root is found, as
// a path through the root resolves it; a pyvenv.cfg that is no regular
// file is not a virtual environment).
func TestVenvRoots(t *testing.T) {
	ws := newWorkspace(t)
	cfg := func(dir string) { write(t, filepath.Join(ws, dir, "pyvenv.cfg"), "home = /usr/bin\n", 0o644) }
	cfg(".")
	cfg("a")
	cfg("a/.venv")
	cfg("b/venv")
	cfg("shared/env")
	must(t, os.MkdirAll(filepath.Join(ws, "c"), 0o755))
	must(t, os.Symlink("../shared/env", filepath.Join(ws, "c", ".venv")))
	must(t, os.MkdirAll(filepath.Join(ws, "d", "pyvenv.cfg"), 0o755))
	must(t, os.MkdirAll(filepath.Join(ws, "e", "src"), 0o755))
	cfg(".tox/py312")
	cfg("node_modules/x/.venv")
	r, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := venvRoots(r)
	slices.Sort(got)
	want := []string{".", ".tox/py312", "a", "a/.venv", "b/venv", "c/.venv"}
	if !slices.Equal(got, want) {
		t.Errorf("venvRoots = %q, want %q", got, want)
	}
}
