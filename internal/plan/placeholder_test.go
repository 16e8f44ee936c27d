package plan

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestPlaceholderKinds: every placeholder carries the kind the launcher
// must create, matching what bwrap binds over it (an empty or mask
// directory, an empty or mask file, the commondir file), masks of absent
// denied paths included.
func TestPlaceholderKinds(t *testing.T) {
	p, opts := testPolicy(t)
	ws := p.Workspace
	p.Deny = append(p.Deny, filepath.Join(ws, "private"), filepath.Join(ws, "keys.pem"))
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]PlaceholderKind{emptyDir: PlaceholderDir, maskDir: PlaceholderDir, emptyFile: PlaceholderFile, maskFile: PlaceholderFile, commondirFile: PlaceholderCommondir}
	seen := map[PlaceholderKind]bool{}
	for _, ph := range pl.Placeholders {
		i := slices.Index(pl.Argv, ph.Path)
		if i < 2 || pl.Argv[i-2] != "--ro-bind" {
			t.Errorf("placeholder %s is not bound read-only", ph.Path)
			continue
		}
		src := filepath.Base(pl.Argv[i-1])
		if k, ok := want[src]; !ok || ph.Kind != k {
			t.Errorf("placeholder %s (bound from %s) is a %q, want %q", ph.Path, src, ph.Kind, k)
		}
		seen[ph.Kind] = true
	}
	if !slices.Contains(pl.PlaceholderPaths(), filepath.Join(ws, "private")) {
		t.Errorf("no mask placeholder for the absent denied %s: %q", filepath.Join(ws, "private"), pl.PlaceholderPaths())
	}
	for _, k := range []PlaceholderKind{PlaceholderDir, PlaceholderFile, PlaceholderCommondir} {
		if !seen[k] {
			t.Errorf("no placeholder of kind %q in %+v", k, pl.Placeholders)
		}
	}
}
