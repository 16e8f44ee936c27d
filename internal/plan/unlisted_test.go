package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
)

// TestUnlistedDirHidden: a directory the walk cannot list (mode 0311) is
// hidden whole, on both backends, with one run note: bubblewrap masks it,
// the Landlock-only backend leaves it out of the read paths.
func TestUnlistedDirHidden(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root lists a mode-0311 directory: nothing is unlisted for it")
	}
	for _, b := range []backend.Name{backend.Bwrap, backend.Landlock} {
		t.Run(string(b), func(t *testing.T) {
			p, opts := testPolicy(t)
			p.Backend = b
			data := filepath.Join(opts.Home, "data")
			closed := filepath.Join(data, "config")
			if err := os.MkdirAll(closed, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(data, "top"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(closed, 0o311); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(closed, 0o755) })
			p.Read = append(p.Read, data)
			pl, err := Build(p, []string{"true"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(pl.RunNotes, func(n string) bool { return strings.HasPrefix(n, closed+" cannot be listed") }) {
				t.Errorf("no note: %q", pl.RunNotes)
			}
			switch b {
			case backend.Bwrap:
				if !hasSeq(pl.Argv, "--ro-bind", filepath.Join(opts.StateDir, maskDir), closed) {
					t.Errorf("not masked: %q", pl.Argv)
				}
			case backend.Landlock:
				ro := pl.Spec.Landlock.ReadOnly
				if slices.ContainsFunc(ro, func(r string) bool { return r == closed || r == data || strings.HasPrefix(closed, r+"/") }) ||
					!slices.Contains(ro, filepath.Join(data, "top")) {
					t.Errorf("read paths %q", ro)
				}
			}
		})
	}
}
