package globscan

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// Names and pattern pieces chosen so that random patterns often match random
// trees, including the corner cases of doublestar's syntax.
var (
	propNames = []string{"a", "b", "c", "ab", "ax", "x", "y", "z", ".env", ".env.local",
		"secrets.yaml", "build", "token.json", ".git", "node_modules", "k1.pem", "a[b]", "a,b", "{x}"}
	propSegs = []string{"**", "**", "*", "a", "b", "x", "?", "[ab]", "[!a]", "[a-c]*", "{a,b}",
		"{x,y/z}", "{a,**}", "a*", "*b", "a**", "**x", ".env*", "*.pem", `a\[b\]`, "{.env,b}*",
		"build", "{,a}x", "a{b,**/c}", `x\/y`, "[!/]*", "{a,{b,c}/x}", "[.-0]b", "a,b", `\{x\}`, "a[!x]b", "x[.-0]y", "a[!/]b", "*[!.]*"}
)

func randPattern(r *rand.Rand) string {
	n := 1 + r.IntN(4)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = propSegs[r.IntN(len(propSegs))]
	}
	return strings.Join(parts, "/")
}

// randTree builds a random tree of at most ~maxEntries entries under root and
// returns the directories (relative, slash-separated, "" for root).
func randTree(t *testing.T, r *rand.Rand, root string, maxEntries int) []string {
	dirs := []string{""}
	for range maxEntries {
		parent := dirs[r.IntN(len(dirs))]
		if strings.Count(parent, "/") >= 5 {
			continue
		}
		name := propNames[r.IntN(len(propNames))]
		rel := name
		if parent != "" {
			rel = parent + "/" + name
		}
		p := filepath.Join(root, filepath.FromSlash(rel))
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		switch k := r.IntN(10); {
		case k < 4:
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, rel)
		case k < 9:
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			// A symlink to the root: following it would loop and find
			// matches under a path that is not a real entry.
			if err := os.Symlink(root, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dirs
}

// bruteForce is the specification: every entry whose path matches one of the
// patterns with doublestar.Match, not looking inside matched directories and
// not following symlinks.
func bruteForce(t *testing.T, root string, patterns []string) []string {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		for _, pat := range patterns {
			if ok, _ := doublestar.Match(normalize(pat), rel); ok {
				out = append(out, rel)
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestScanMatchesBruteForce compares Scan with the brute-force walk over
// random trees and random patterns (fixed seed, bounded size), and checks
// that CouldMatchBelow never prunes a directory with a match below it.
func TestScanMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(2024, 7))
	trees, patsPerTree := 40, 25
	if testing.Short() {
		trees = 8
	}
	checked, nonEmpty := 0, 0
	for ti := range trees {
		root := t.TempDir()
		dirs := randTree(t, r, root, 60+r.IntN(200))
		for range patsPerTree {
			np := 1 + r.IntN(3)
			var pats []string
			for len(pats) < np {
				if p := randPattern(r); Validate(p) == nil {
					pats = append(pats, p)
				}
			}
			want := bruteForce(t, root, pats)
			ms, _, err := Scan(root, pats, Limits{})
			if err != nil {
				t.Fatalf("tree %d: Scan(%q): %v", ti, pats, err)
			}
			if got := rels(ms); !slices.Equal(got, want) {
				t.Fatalf("tree %d: Scan(%q)\n got  %q\n want %q", ti, pats, got, want)
			}
			checked++
			if len(want) > 0 {
				nonEmpty++
			}
			// Pruning soundness for each pattern alone, on every directory
			// of the tree: if anything strictly below dir matches (by
			// doublestar.Match, ignoring matched-ancestor masking),
			// CouldMatchBelow must be true.
			for _, pat := range pats {
				all := allMatches(t, root, pat)
				for _, d := range dirs {
					if d == "" {
						continue
					}
					below := slices.ContainsFunc(all, func(m string) bool { return strings.HasPrefix(m, d+"/") })
					if below && !CouldMatchBelow(pat, d) {
						t.Fatalf("CouldMatchBelow(%q, %q) = false, but a path below matches: %q", pat, d, all)
					}
				}
			}
		}
	}
	t.Logf("%d pattern sets checked, %d with matches", checked, nonEmpty)
	if nonEmpty < checked/4 {
		t.Errorf("only %d of %d random cases had matches; the generator is too weak", nonEmpty, checked)
	}
}

// allMatches is every path under root (symlinks not followed) matching pat.
func allMatches(t *testing.T, root, pat string) []string {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if ok, _ := doublestar.Match(normalize(pat), rel); ok {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
