package globscan

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestGlobAgreesWithScan: for every path of the test tree, Glob.Hides
// (the one-path check the MCP file tools use) says hidden exactly when Scan
// reported the path or a directory above it.
func TestGlobAgreesWithScan(t *testing.T) {
	root := t.TempDir()
	mkTree(t, root, tree...)
	var all []string
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			all = append(all, filepath.ToSlash(strings.TrimPrefix(p, root+"/")))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, pat := range []string{"**/.env", "**/.env.*", "**/secrets.*", "secrets.*", "./secrets.*", "secrets/",
		"build/**/token.json", "**/build/**/token.json", "a/**/b", "a/*/c", "{x,y}/**/z", "{x/q,w}/z",
		"k[0-9].pem", "k[!0-9].pem", "**/k?.pem", `odd/a\[b\]/f`, "app/**", "odd/[{]/f", "app/*", "**", "[!.]*"} {
		g, err := Compile(pat)
		if err != nil {
			t.Fatalf("Compile(%q): %v", pat, err)
		}
		ms, _, err := Scan(root, []string{pat}, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rel := range all {
			scanned := false
			for _, m := range ms {
				if rel == m.Rel || strings.HasPrefix(rel, m.Rel+"/") {
					scanned = true
				}
			}
			if got := g.Hides(rel); got != scanned {
				t.Errorf("%q: Hides(%q) = %v, Scan hides it: %v", pat, rel, got, scanned)
			}
		}
		if g.Hides(".") || g.Match("") {
			t.Errorf("%q matches the root", pat)
		}
	}
}
