//go:build linux

package globscan

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func init() {
	// The trees of these tests are small: cache them all the same
	// (TestCacheMinDirs checks the bound).
	cacheBounds.minDirs = 1
}

// cachePats are the patterns of the cache tests: deny globs that search
// the whole tree and one that descends into what it matches.
var cachePats = []Pattern{{Glob: "**/.env"}, {Glob: "**/secrets.*"}, {Glob: "**/.git", Descend: true}}

// ahead is a clock running ahead of the real one by more than racyWindow:
// a tree the test just made is then as good as an old one, and its
// records are trusted (without it every directory would be read again).
func ahead() time.Time { return time.Now().Add(racyWindow + time.Second) }

// newTestCache returns a cache in dir whose clock is now.
func newTestCache(dir string, now func() time.Time) *Cache {
	c := OpenCache(dir)
	c.now = now
	return c
}

// scanWith scans root with a fresh cache in dir (as the next run would)
// and saves it; it returns the matches' Rel, the stats and the cache.
func scanWith(t *testing.T, dir, root string, now func() time.Time) ([]string, Stats, *Cache) {
	t.Helper()
	c := newTestCache(dir, now)
	ms, st, err := c.ScanPatterns(root, cachePats, Limits{})
	if err != nil {
		t.Fatalf("cached scan: %v", err)
	}
	if err := c.Save(); err != nil {
		t.Fatalf("saving the cache: %v", err)
	}
	return rels(ms), st, c
}

// plainScan is the scan without a cache: what a cached scan must return.
func plainScan(t *testing.T, root string) []string {
	t.Helper()
	ms, _, err := ScanPatterns(root, cachePats, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return rels(ms)
}

// cacheTree0 is the tree of the cache tests.
// deep/p has enough subdirectories to be walked through a descriptor.
var cacheTree0 = []string{"a/b/c/f.txt", "a/b/d/", "sub/plain.txt", "sub/deep/x.go", "top.env.txt", "repo/.git/HEAD", "repo/.git/hooks/", ".env",
	"deep/p/q1/", "deep/p/q2/f", "deep/p/q3/", "deep/p/q4/", "deep/p/q5/r/"}

// statDir returns path's identity.
func statDir(t *testing.T, path string) dirID {
	t.Helper()
	id, _, err := statID(path, false)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestCacheRecordValidation forges the record of one directory in a
// saved cache (it says sub has no .env, while sub now holds one) and
// changes one field of its identity: any difference with the directory
// as it is, or a record not trusted, makes the scan read sub again and
// find the .env. The control case, where the identity is the directory's
// own, shows the record would be used.
func TestCacheRecordValidation(t *testing.T) {
	cases := []struct {
		name   string
		forge  func(n *node)
		hidden bool // the stale record is used: .env is not found
	}{
		{"control: same device, inode and ctime", func(n *node) {}, true},
		{"ctime seconds differ", func(n *node) { n.id.sec-- }, false},
		{"ctime nanoseconds differ", func(n *node) { n.id.nsec = (n.id.nsec + 1) % 1e9 }, false},
		{"inode differs", func(n *node) { n.id.ino++ }, false},
		{"device differs", func(n *node) { n.id.dev++ }, false},
		{"racy record (not trusted)", func(n *node) { n.flags &^= nodeTrusted }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, dir := t.TempDir(), t.TempDir()
			mkTree(t, root, cacheTree0...)
			scanWith(t, dir, root, ahead)
			// sub gains a .env; then the record of sub is forged to be
			// sub as it is now, minus the .env, and tc changes it.
			mkTree(t, root, "sub/.env")
			c := newTestCache(dir, ahead)
			key := cacheKey(root, cachePats)
			tr := c.tree(key, root, cachePats)
			if tr == nil {
				t.Fatalf("the cache was not loaded: %+v", c.Stats())
			}
			n := tr.top.kid("sub")
			if n == nil || n.flags&nodeTrusted == 0 {
				t.Fatalf("no trusted record of sub: %+v", n)
			}
			n.id = statDir(t, filepath.Join(root, "sub"))
			tc.forge(n)
			ms, _, err := c.ScanPatterns(root, cachePats, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			found := slices.Contains(rels(ms), "sub/.env")
			if found == tc.hidden {
				t.Errorf("sub/.env found = %v, want %v: %q", found, !tc.hidden, rels(ms))
			}
		})
	}
}

// kid returns the node of the subdirectory name, or nil.
func (n *node) kid(name string) *node {
	for i := range n.kids {
		if n.kids[i].name == name {
			return &n.kids[i]
		}
	}
	return nil
}

// TestCacheSeesChanges: every change of a directory's entries, made
// however, is seen by the next cached scan, which otherwise reads only
// what changed; it returns what a scan without a cache returns.
func TestCacheSeesChanges(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, root string)
		reread int // directories read again (the others from the cache)
	}{
		{"nothing", func(t *testing.T, root string) {}, 0},
		{"a .env created", func(t *testing.T, root string) { mkTree(t, root, "a/b/c/.env") }, 1},
		{"a .env created and the mtime restored (touch -d)", func(t *testing.T, root string) {
			d := filepath.Join(root, "sub")
			fi, err := os.Stat(d)
			if err != nil {
				t.Fatal(err)
			}
			mkTree(t, root, "sub/.env")
			if err := os.Chtimes(d, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			if fi2, _ := os.Stat(d); !fi2.ModTime().Equal(fi.ModTime()) {
				t.Fatal("the mtime was not restored")
			}
		}, 1},
		{"a file renamed to .env", func(t *testing.T, root string) {
			must(t, os.Rename(filepath.Join(root, "sub", "plain.txt"), filepath.Join(root, "sub", ".env")))
		}, 1},
		{"a .env removed", func(t *testing.T, root string) { must(t, os.Remove(filepath.Join(root, ".env"))) }, 1},
		{"a directory holding a .env moved in", func(t *testing.T, root string) {
			other := filepath.Join(filepath.Dir(root), filepath.Base(root)+"-other")
			mkTree(t, other, "x/y/.env")
			must(t, os.Rename(filepath.Join(other, "x"), filepath.Join(root, "a", "b", "d", "x")))
		}, 3},
		{"a directory replaced by a link", func(t *testing.T, root string) {
			must(t, os.RemoveAll(filepath.Join(root, "a", "b", "c")))
			must(t, os.Symlink("/", filepath.Join(root, "a", "b", "c")))
		}, 1},
		{"a directory replaced by another of the same name", func(t *testing.T, root string) {
			must(t, os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub.old")))
			mkTree(t, root, "sub/deep/secrets.yaml")
		}, 5}, // the root, sub and sub/deep, new, and sub.old and its deep, unknown
		{"a .env made where directories are looked up by descriptor", func(t *testing.T, root string) { mkTree(t, root, "deep/p/q5/r/.env") }, 1},
		{"a directory looked up by descriptor replaced by a link", func(t *testing.T, root string) {
			must(t, os.RemoveAll(filepath.Join(root, "deep", "p", "q3")))
			must(t, os.Symlink(root, filepath.Join(root, "deep", "p", "q3")))
		}, 1},
		{"a directory looked up by descriptor replaced by a directory holding a .env", func(t *testing.T, root string) {
			must(t, os.Rename(filepath.Join(root, "deep", "p", "q1"), filepath.Join(root, "q1.old")))
			mkTree(t, root, "deep/p/q1/.env")
		}, 4}, // the root, deep/p, q1 (new) and q1.old (unknown)
		{"a git directory made", func(t *testing.T, root string) { mkTree(t, root, "a/b/d/.git/HEAD") }, 2},
		{"a mode changed (chmod)", func(t *testing.T, root string) { must(t, os.Chmod(filepath.Join(root, "sub", "deep"), 0o700)) }, 1},
		{"a directory's times set (utimes)", func(t *testing.T, root string) {
			must(t, os.Chtimes(filepath.Join(root, "a"), time.Unix(1e9, 0), time.Unix(1e9, 0)))
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, dir := t.TempDir(), t.TempDir()
			mkTree(t, root, cacheTree0...)
			first, st0, _ := scanWith(t, dir, root, ahead)
			if st0.Cached != 0 || !slices.Equal(first, plainScan(t, root)) {
				t.Fatalf("first scan: %d cached, %q", st0.Cached, first)
			}
			tc.change(t, root)
			got, st, _ := scanWith(t, dir, root, ahead)
			if want := plainScan(t, root); !slices.Equal(got, want) {
				t.Errorf("cached scan after the change: %q, want %q", got, want)
			}
			if read := st.Dirs - st.Cached; read != tc.reread {
				t.Errorf("%d directories read again (of %d), want %d", read, st.Dirs, tc.reread)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCacheRacy: directories whose ctime is within racyWindow of the
// scan's start are not trusted by the next scan (a change in the same
// clock tick as the read would not show in the ctime): a scan right after
// the tree was made reads everything again; one made later trusts them.
func TestCacheRacy(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	mkTree(t, root, cacheTree0...)
	now := time.Now
	_, st, _ := scanWith(t, dir, root, now)
	if st.Cached != 0 {
		t.Fatalf("first scan: %d cached", st.Cached)
	}
	_, st, _ = scanWith(t, dir, root, now)
	if st.Cached != 0 {
		t.Errorf("a scan right after the tree was made took %d of %d directories from the cache", st.Cached, st.Dirs)
	}
	// The same directories, recorded by a scan that starts more than
	// racyWindow after their ctimes, are trusted.
	_, _, _ = scanWith(t, dir, root, ahead)
	_, st, _ = scanWith(t, dir, root, ahead)
	if st.Cached != st.Dirs {
		t.Errorf("%d of %d directories taken from the cache, want all", st.Cached, st.Dirs)
	}
	// A change at the edge: sub is changed, then read by a scan whose
	// clock says the change is racyWindow minus a little old.
	mkTree(t, root, "sub/.env")
	edge := func() time.Time { return time.Now().Add(racyWindow - 100*time.Millisecond) }
	scanWith(t, dir, root, edge)
	c := newTestCache(dir, ahead)
	tr := c.tree(cacheKey(root, cachePats), root, cachePats)
	if n := tr.top.kid("sub"); n == nil || n.flags&nodeTrusted != 0 {
		t.Errorf("sub, changed within racyWindow of the scan, is trusted: %+v", n)
	}
}

// TestCacheRandomChanges: over random trees, random patterns and random
// changes (entries created, removed, renamed, replaced by links or
// directories), a cached scan returns what a scan without a cache
// returns, with records as trusted as they can be (the clock ahead).
func TestCacheRandomChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 3))
	trees, rounds := 20, 6
	if testing.Short() {
		trees = 5
	}
	reused := 0
	for ti := range trees {
		root, dir := t.TempDir(), t.TempDir()
		randTree(t, r, root, 40+r.IntN(120))
		var pats []Pattern
		for len(pats) < 1+r.IntN(3) {
			if p := randPattern(r); Validate(p) == nil {
				pats = append(pats, Pattern{Glob: p, Descend: r.IntN(3) == 0})
			}
		}
		pats = append(pats, Pattern{Glob: "**/.env"})
		for round := range rounds {
			c := newTestCache(dir, ahead)
			ms, st, err := c.ScanPatterns(root, pats, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := ScanPatterns(root, pats, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ms, want) {
				t.Fatalf("tree %d round %d, patterns %v: cached scan\n got  %q\n want %q", ti, round, pats, rels(ms), rels(want))
			}
			must(t, c.Save())
			reused += st.Cached
			randChanges(t, r, root, 1+r.IntN(4))
		}
	}
	if reused == 0 {
		t.Error("no directory was ever taken from the cache")
	}
}

// randChanges makes n random changes under root.
func randChanges(t *testing.T, r *rand.Rand, root string, n int) {
	t.Helper()
	var all []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != root {
			all = append(all, p)
		}
		return nil
	})
	var dirs []string
	for _, p := range all {
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			dirs = append(dirs, p)
		}
	}
	dirs = append(dirs, root)
	for range n {
		d := dirs[r.IntN(len(dirs))]
		name := filepath.Join(d, propNames[r.IntN(len(propNames))])
		switch k := r.IntN(6); {
		case k == 0:
			os.WriteFile(name, nil, 0o644)
		case k == 1:
			os.Mkdir(name, 0o755)
		case k == 2 && len(all) > 0:
			os.RemoveAll(all[r.IntN(len(all))])
		case k == 3 && len(all) > 0:
			os.Rename(all[r.IntN(len(all))], name)
		case k == 4:
			os.RemoveAll(name)
			os.Symlink(root, name)
		default:
			// A file or directory replaced by a directory holding a .env.
			os.RemoveAll(name)
			os.MkdirAll(name, 0o755)
			os.WriteFile(filepath.Join(name, ".env"), nil, 0o644)
		}
	}
}

// TestKeepsCtime: the file systems whose ctimes the cache trusts.
func TestKeepsCtime(t *testing.T) {
	cases := []struct {
		name string
		typ  int64
		want bool
	}{
		{"ext4", 0xef53, true},
		{"xfs", 0x58465342, true},
		{"btrfs", 0x9123683e, true},
		{"tmpfs", 0x01021994, true},
		{"overlayfs", 0x794c7630, true},
		{"nfs", 0x6969, false},
		{"fuse", 0x65735546, false},
		{"vfat", 0x4d44, false},
		{"smb2", 0xfe534d42, false},
		{"9p", 0x01021997, false},
	}
	for _, tc := range cases {
		if got := keepsCtime(tc.typ); got != tc.want {
			t.Errorf("%s: keepsCtime = %v, want %v", tc.name, got, tc.want)
		}
	}
}
