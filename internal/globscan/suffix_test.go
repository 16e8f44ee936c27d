package globscan

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestAnySuffix: "**/A/NAME" (literal components) matches exactly the
// entries whose path is, or ends in, "/A/NAME", as doublestar does, found
// by the name lookup rather than an automaton.
func TestAnySuffix(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{".mvn/jvm.config", "x/.mvn/jvm.config", "y/jvm.config", "a.mvn/jvm.config", "z/b.mvn/jvm.config",
		"g/gradle/wrapper/gradle-wrapper.properties", "gradle/gradle-wrapper.properties", ".yarn/releases/y.cjs", "p/.yarn/releases/q"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pats := []Pattern{{Glob: "**/.mvn/jvm.config", Descend: true}, {Glob: "**/gradle/wrapper/gradle-wrapper.properties", Descend: true}, {Glob: "**/.yarn/releases", Descend: true}}
	for _, p := range pats {
		cp, err := compile(p.Glob)
		if err != nil || cp.anyName == "" || cp.anySuffix == "" {
			t.Fatalf("%s: not a name lookup (%v)", p.Glob, err)
		}
	}
	ms, _, err := ScanPatterns(root, pats, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Rel)
	}
	slices.Sort(got)
	want := []string{".mvn/jvm.config", ".yarn/releases", "g/gradle/wrapper/gradle-wrapper.properties", "p/.yarn/releases", "x/.mvn/jvm.config"}
	if !slices.Equal(got, want) {
		t.Errorf("matches %q, want %q", got, want)
	}
}
