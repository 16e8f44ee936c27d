// Package subpath is the one test of whether a path lies at or below a
// directory, for every package of cordon (policy.Within and policy.CoveredBy
// are its names above the policy layer). It compares whole components, so
// /w/anchor2 is not within /w/anchor, and never touches the file system.
package subpath

import (
	"path/filepath"
	"strings"
)

// Within reports whether the absolute path p is dir or lies below it. Both
// must be clean, but for a trailing slash on dir; every absolute path is
// within "/".
func Within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	dir = strings.TrimSuffix(dir, "/")
	// p == dir, or p starts with dir+"/" (not built: it would allocate,
	// and policy decisions call this for every access the monitor sees).
	return len(p) >= len(dir) && p[:len(dir)] == dir && (len(p) == len(dir) || p[len(dir)] == '/')
}

// Below reports whether p lies strictly below dir (Within, but not dir
// itself).
func Below(p, dir string) bool {
	return p != strings.TrimSuffix(dir, "/") && p != dir && Within(p, dir)
}

// Rel returns p relative to dir, slash-separated ("." for dir itself), and
// whether p is within dir (see Within).
func Rel(dir, p string) (string, bool) {
	if !Within(p, dir) {
		return "", false
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, strings.TrimSuffix(dir, "/")), "/")
	if rel == "" {
		rel = "."
	}
	return rel, true
}

// Set is a set of directories, for whether a path lies at or below any of
// them: Within for many directories at once, a look-up per component of
// the path rather than a comparison per directory.
type Set map[string]bool

// NewSet returns the set of the absolute paths of dirs, cleaned (others
// are left out), or nil when none is left.
func NewSet(dirs []string) Set {
	var s Set
	for _, d := range dirs {
		if filepath.IsAbs(d) {
			if s == nil {
				s = Set{}
			}
			s[filepath.Clean(d)] = true
		}
	}
	return s
}

// Holds reports whether the absolute clean path p is in s or lies below a
// directory of s; false for a nil s.
func (s Set) Holds(p string) bool {
	if len(s) == 0 {
		return false
	}
	for q := p; ; q = filepath.Dir(q) {
		if s[q] {
			return true
		}
		if q == filepath.Dir(q) {
			return false
		}
	}
}
