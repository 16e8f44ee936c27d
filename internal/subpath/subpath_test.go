package subpath

import "testing"

func TestWithinBelowRel(t *testing.T) {
	for _, tc := range []struct {
		p, dir string
		within bool
		below  bool
		rel    string
	}{
		{"/w", "/w", true, false, "."},
		{"/w/a/b", "/w", true, true, "a/b"},
		{"/w/a", "/w/", true, true, "a"},
		{"/w2", "/w", false, false, ""},
		{"/wa/b", "/w", false, false, ""},
		{"/", "/", true, false, "."},
		{"/x", "/", true, true, "x"},
		{"/x/y", "/", true, true, "x/y"},
		{"/w", "/w/a", false, false, ""},
		{"x", "/", false, false, ""},
	} {
		if got := Within(tc.p, tc.dir); got != tc.within {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.p, tc.dir, got, tc.within)
		}
		if got := Below(tc.p, tc.dir); got != tc.below {
			t.Errorf("Below(%q, %q) = %v, want %v", tc.p, tc.dir, got, tc.below)
		}
		rel, ok := Rel(tc.dir, tc.p)
		if ok != tc.within || rel != tc.rel {
			t.Errorf("Rel(%q, %q) = %q, %v, want %q, %v", tc.dir, tc.p, rel, ok, tc.rel, tc.within)
		}
	}
}

func TestSet(t *testing.T) {
	s := NewSet([]string{"/w/a", "/w/b/c/", "relative"})
	for p, want := range map[string]bool{"/w/a": true, "/w/a/x/y": true, "/w/b/c": true, "/w/b/cd": false, "/w/b": false, "/w": false, "/": false, "relative": false, "/relative": false} {
		if got := s.Holds(p); got != want {
			t.Errorf("Holds(%q) = %v, want %v", p, got, want)
		}
	}
	if NewSet(nil) != nil || NewSet([]string{"rel"}) != nil {
		t.Error("a set of no absolute path is not nil")
	}
	if NewSet(nil).Holds("/x") {
		t.Error("a nil set holds a path")
	}
	if !NewSet([]string{"/"}).Holds("/any/path") {
		t.Error("the root does not hold a path below it")
	}
}
