//go:build linux

package globscan

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestCacheFileRejected: a cache file that cannot be trusted is ignored
// (CacheStats.Rejected says why) and the scan reads every directory: it
// returns what a scan without a cache returns, including a .env the
// stale file does not know, and the next Save replaces the file.
func TestCacheFileRejected(t *testing.T) {
	type env struct {
		dir, file, root string
		c               *Cache // the cache of the scan, before it runs
	}
	cases := []struct {
		name  string
		spoil func(t *testing.T, e *env)
		why   string // in CacheStats.Why
	}{
		{"corrupt (a byte flipped)", func(t *testing.T, e *env) { flip(t, e.file, 0.5) }, "checksum"},
		{"corrupt (the checksum flipped)", func(t *testing.T, e *env) { flip(t, e.file, 1) }, "checksum"},
		{"corrupt (the magic)", func(t *testing.T, e *env) { flip(t, e.file, 0) }, "version"},
		{"truncated", func(t *testing.T, e *env) { truncate(t, e.file, 0.6) }, "checksum"},
		{"truncated to the header", func(t *testing.T, e *env) { truncate(t, e.file, 0) }, "version"},
		{"empty", func(t *testing.T, e *env) { must(t, os.Truncate(e.file, 0)) }, "version"},
		{"foreign owner", func(t *testing.T, e *env) { e.c.uid = os.Geteuid() + 1 }, "owned by another user"},
		{"foreign owner (chown as root)", func(t *testing.T, e *env) {
			if os.Geteuid() != 0 {
				// Only root can give a file away: expect another user.
				e.c.uid = os.Geteuid() + 1
				return
			}
			must(t, os.Chown(e.file, 65534, 65534))
		}, "owned by another user"},
		{"group-writable", func(t *testing.T, e *env) { must(t, os.Chmod(e.file, 0o620)) }, "writable by others"},
		{"world-writable", func(t *testing.T, e *env) { must(t, os.Chmod(e.file, 0o602)) }, "writable by others"},
		{"a symbolic link to a good copy", func(t *testing.T, e *env) {
			good := filepath.Join(filepath.Dir(e.dir), "good.walk")
			b, err := os.ReadFile(e.file)
			must(t, err)
			must(t, os.WriteFile(good, b, 0o600))
			must(t, os.Remove(e.file))
			must(t, os.Symlink(good, e.file))
		}, "symbolic link"},
		{"a FIFO", func(t *testing.T, e *env) {
			must(t, os.Remove(e.file))
			must(t, syscall.Mkfifo(e.file, 0o600))
		}, "not a regular file"},
		{"over the size bound", func(t *testing.T, e *env) { must(t, os.Truncate(e.file, MaxCacheFileBytes+1)) }, "more than"},
		{"made for another root", func(t *testing.T, e *env) {
			other := t.TempDir()
			mkTree(t, other, "x/")
			c := newTestCache(t.TempDir(), ahead)
			if _, _, err := c.ScanPatterns(other, cachePats, Limits{}); err != nil {
				t.Fatal(err)
			}
			must(t, c.Save())
			b, err := os.ReadFile(c.path(cacheKey(other, cachePats)))
			must(t, err)
			must(t, os.WriteFile(e.file, b, 0o600))
		}, "another root"},
		{"written by a clock later than now", func(t *testing.T, e *env) { e.c.now = func() time.Time { return time.Now().Add(-time.Hour) } }, "later than now"},
		{"the directory group-writable", func(t *testing.T, e *env) { must(t, os.Chmod(e.dir, 0o770)) }, "writable by others"},
		{"the directory a symbolic link", func(t *testing.T, e *env) {
			must(t, os.Rename(e.dir, e.dir+".real"))
			must(t, os.Symlink(e.dir+".real", e.dir))
		}, "not a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			e := &env{dir: filepath.Join(base, "walk"), root: filepath.Join(base, "ws")}
			mkTree(t, e.root, cacheTree0...)
			scanWith(t, e.dir, e.root, ahead)
			e.file = newTestCache(e.dir, ahead).path(cacheKey(e.root, cachePats))
			// The tree changes after the cache was written: a stale file
			// used anyway would hide sub/.env.
			mkTree(t, e.root, "sub/.env")
			e.c = newTestCache(e.dir, ahead)
			tc.spoil(t, e)
			done := make(chan struct{})
			var ms []Match
			var st Stats
			var err error
			go func() {
				defer close(done)
				ms, st, err = e.c.ScanPatterns(e.root, cachePats, Limits{})
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the cached scan hangs")
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := rels(ms), plainScan(t, e.root); !slices.Equal(got, want) || !slices.Contains(got, "sub/.env") {
				t.Errorf("got %q, want %q", got, want)
			}
			if st.Cached != 0 {
				t.Errorf("%d directories taken from a rejected cache", st.Cached)
			}
			cs := e.c.Stats()
			if cs.Loaded != 0 || cs.Rejected != 1 || !strings.Contains(cs.Why, tc.why) {
				t.Errorf("cache stats %+v, want one rejected because %q", cs, tc.why)
			}
		})
	}
}

// flip inverts the byte at fraction at of file (1: the last).
func flip(t *testing.T, file string, at float64) {
	t.Helper()
	b, err := os.ReadFile(file)
	must(t, err)
	i := min(int(at*float64(len(b))), len(b)-1)
	b[i] ^= 0xff
	must(t, os.WriteFile(file, b, 0o600))
}

// truncate cuts file to fraction at of its length (0: just the magic).
func truncate(t *testing.T, file string, at float64) {
	t.Helper()
	fi, err := os.Stat(file)
	must(t, err)
	n := int64(at * float64(fi.Size()))
	if at == 0 {
		n = int64(len(cacheMagic))
	}
	must(t, os.Truncate(file, n))
}

// TestCacheSaveRefusesUnsafeDir: Save writes nothing into a cache
// directory that others could write, or that is not the user's.
func TestCacheSaveRefusesUnsafeDir(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string, c *Cache)
	}{
		{"group-writable", func(t *testing.T, dir string, c *Cache) { must(t, os.Mkdir(dir, 0o700)); must(t, os.Chmod(dir, 0o770)) }},
		{"world-writable", func(t *testing.T, dir string, c *Cache) { must(t, os.Mkdir(dir, 0o700)); must(t, os.Chmod(dir, 0o703)) }},
		{"foreign owner", func(t *testing.T, dir string, c *Cache) { must(t, os.Mkdir(dir, 0o700)); c.uid = os.Geteuid() + 1 }},
		{"a symbolic link", func(t *testing.T, dir string, c *Cache) {
			must(t, os.Mkdir(dir+".real", 0o700))
			must(t, os.Symlink(dir+".real", dir))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			root, dir := filepath.Join(base, "ws"), filepath.Join(base, "walk")
			mkTree(t, root, cacheTree0...)
			c := newTestCache(dir, ahead)
			tc.setup(t, dir, c)
			if _, _, err := c.ScanPatterns(root, cachePats, Limits{}); err != nil {
				t.Fatal(err)
			}
			if err := c.Save(); err == nil {
				t.Error("Save wrote into an unsafe directory")
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 0 {
				t.Errorf("files written: %v", ents)
			}
		})
	}
	// A missing directory is created, private.
	base := t.TempDir()
	root, dir := filepath.Join(base, "ws"), filepath.Join(base, "state", "walk")
	mkTree(t, root, cacheTree0...)
	scanWith(t, dir, root, ahead)
	fi, err := os.Stat(dir)
	must(t, err)
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("cache directory mode %v, want 0700", fi.Mode().Perm())
	}
	f, err := os.Stat(newTestCache(dir, ahead).path(cacheKey(root, cachePats)))
	must(t, err)
	if f.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode %v, want 0600", f.Mode().Perm())
	}
}

// TestCacheBounds: a tree over the bound on directories or bytes is not
// written (the next scan reads everything, and is right), and the
// directory keeps at most MaxCacheFiles files and MaxCacheBytes bytes,
// the least recently used removed first.
func TestCacheBounds(t *testing.T) {
	saved := cacheBounds
	t.Cleanup(func() { cacheBounds = saved })
	cases := []struct {
		name   string
		bounds func()
	}{
		{"directories", func() { cacheBounds.dirs = 5 }},
		{"bytes", func() { cacheBounds.fileBytes = 200 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cacheBounds = saved
			tc.bounds()
			root, dir := t.TempDir(), t.TempDir()
			mkTree(t, root, cacheTree0...)
			c := newTestCache(dir, ahead)
			if _, _, err := c.ScanPatterns(root, cachePats, Limits{}); err != nil {
				t.Fatal(err)
			}
			if err := c.Save(); err == nil || !strings.Contains(err.Error(), "more than") {
				t.Errorf("Save of a tree over the bound: %v", err)
			}
			if _, err := os.Stat(c.path(cacheKey(root, cachePats))); err == nil {
				t.Error("a tree over the bound was written")
			}
			mkTree(t, root, "a/b/d/.env")
			c = newTestCache(dir, ahead)
			ms, st, err := c.ScanPatterns(root, cachePats, Limits{})
			if err != nil || st.Cached != 0 || !slices.Equal(rels(ms), plainScan(t, root)) {
				t.Errorf("next scan: %d cached, %q, %v", st.Cached, rels(ms), err)
			}
		})
	}
	t.Run("files and total size", func(t *testing.T) {
		cacheBounds = saved
		cacheBounds.files = 3
		dir := t.TempDir()
		var files []string
		for i := range 5 {
			root := t.TempDir()
			mkTree(t, root, cacheTree0...)
			scanWith(t, dir, root, ahead)
			// Older files were used longer ago.
			p := newTestCache(dir, ahead).path(cacheKey(root, cachePats))
			ts := time.Now().Add(time.Duration(i-10) * time.Minute)
			must(t, os.Chtimes(p, ts, ts))
			files = append(files, p)
		}
		for i, p := range files {
			_, err := os.Stat(p)
			if kept, want := err == nil, i >= 2; kept != want {
				t.Errorf("file %d of 5: kept %v, want %v", i, kept, want)
			}
		}
		// Room for two files: the newest two are kept.
		fi, err := os.Stat(files[4])
		must(t, err)
		cacheBounds.files = saved.files
		cacheBounds.bytes = int(2*fi.Size() + fi.Size()/2)
		root := t.TempDir()
		mkTree(t, root, cacheTree0...)
		scanWith(t, dir, root, ahead)
		ents, err := os.ReadDir(dir)
		must(t, err)
		_, err4 := os.Stat(files[4])
		if len(ents) != 2 || err4 != nil {
			t.Errorf("%d files kept under a bound of two, the newest before kept: %v", len(ents), err4 == nil)
		}
	})
}

// TestCheckOwned: what makes a cache file or directory untrusted.
func TestCheckOwned(t *testing.T) {
	me := os.Geteuid()
	cases := []struct {
		name string
		mode os.FileMode
		uid  int
		dir  bool
		want string // "" or in the reason
	}{
		{"private file", 0o600, me, false, ""},
		{"readable file", 0o644, me, false, ""},
		{"private directory", os.ModeDir | 0o700, me, true, ""},
		{"foreign file", 0o600, me + 1, false, "owned by another user"},
		{"root's file for a user", 0o600, 0, false, "owned by another user"},
		{"foreign directory", os.ModeDir | 0o700, me + 1, true, "owned by another user"},
		{"group-writable file", 0o620, me, false, "writable by others"},
		{"world-writable file", 0o606, me, false, "writable by others"},
		{"world-writable directory", os.ModeDir | 0o777, me, true, "writable by others"},
		{"a link", os.ModeSymlink | 0o777, me, false, "not a regular file"},
		{"a link for the directory", os.ModeSymlink | 0o777, me, true, "not a directory"},
		{"a FIFO", os.ModeNamedPipe | 0o600, me, false, "not a regular file"},
		{"a directory for the file", os.ModeDir | 0o700, me, false, "not a regular file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "root's file for a user" && me == 0 {
				tc.uid = 1
			}
			fi := fakeInfo{mode: tc.mode, st: &syscall.Stat_t{Uid: uint32(tc.uid)}}
			got := checkOwned(fi, me, tc.dir)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("checkOwned = %q, want %q", got, tc.want)
			}
		})
	}
}

// fakeInfo is a FileInfo with a mode and an owner.
type fakeInfo struct {
	mode os.FileMode
	st   *syscall.Stat_t
}

func (f fakeInfo) Name() string       { return "f" }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() os.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return f.st }

// TestCacheConcurrentSaves: concurrent scans and saves of the same tree
// never leave a file that a loader rejects or that gives a wrong result,
// nor a temporary file.
func TestCacheConcurrentSaves(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	mkTree(t, root, cacheTree0...)
	scanWith(t, dir, root, ahead)
	want := plainScan(t, root)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	saves := 0
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				c := newTestCache(dir, ahead)
				if g%2 == 0 {
					// Change two directories, so that the save writes.
					for _, d := range []string{"a/b/c", "sub"} {
						p := filepath.Join(root, d, fmt.Sprintf("tmp%d-%d", g, i))
						if err := os.WriteFile(p, nil, 0o600); err == nil {
							os.Remove(p)
						}
					}
				}
				ms, _, err := c.ScanPatterns(root, cachePats, Limits{})
				cs := c.Stats()
				if err == nil {
					err = c.Save()
				}
				mu.Lock()
				saves += cs.Dirty
				switch {
				case err != nil:
					errs = append(errs, err.Error())
				case cs.Rejected != 0:
					errs = append(errs, "rejected: "+cs.Why)
				case !slices.Equal(rels(ms), want):
					errs = append(errs, strings.Join(rels(ms), ","))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Errorf("%d failures, the first: %s", len(errs), errs[0])
	}
	if saves < 20 {
		t.Errorf("only %d of the 80 scans wrote the cache", saves)
	}
	ents, err := os.ReadDir(dir)
	must(t, err)
	if len(ents) != 1 {
		t.Errorf("files left: %v", ents)
	}
}

// TestDecodeTreeCorrupt: a cache file with bytes changed and its checksum
// fixed after (as a bug or a disk might leave it) decodes to an error or to
// a consistent tree, never to a panic or a link out of range.
func TestDecodeTreeCorrupt(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	mkTree(t, root, cacheTree0...)
	scanWith(t, dir, root, ahead)
	good, err := os.ReadFile(newTestCache(dir, ahead).path(cacheKey(root, cachePats)))
	must(t, err)
	r := rand.New(rand.NewPCG(7, 14))
	later := time.Now().Add(time.Hour)
	decoded, refused := 0, 0
	for range 3000 {
		b := slices.Clone(good[:len(good)-4])
		if r.IntN(4) == 0 {
			b = b[:len(cacheMagic)+r.IntN(len(b)-len(cacheMagic))]
		} else {
			for range 1 + r.IntN(3) {
				b[len(cacheMagic)+r.IntN(len(b)-len(cacheMagic))] = byte(r.IntN(256))
			}
		}
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
		tr, err := decodeTree(b, root, cachePats, later)
		if err != nil {
			refused++
			continue
		}
		decoded++
		checkTree(t, tr)
	}
	if decoded == 0 || refused == 0 {
		t.Errorf("%d decoded, %d refused: the mutations do not cover both", decoded, refused)
	}
}

// checkTree fails unless every node of tr is reached once from its top,
// with valid names and pattern indexes.
func checkTree(t *testing.T, tr *cacheTree) {
	t.Helper()
	seen := 0
	queue := []*node{tr.top}
	for len(queue) > 0 && seen <= tr.dirs {
		n := queue[0]
		queue = queue[1:]
		seen++
		if seen > 1 && !validName(n.name) {
			t.Fatalf("a node named %q", n.name)
		}
		for _, m := range n.matches {
			if !validName(m.name) || int(m.pat) >= len(tr.patterns) {
				t.Fatalf("a match %+v", m)
			}
		}
		for i := range n.kids {
			queue = append(queue, &n.kids[i])
		}
	}
	if seen != tr.dirs {
		t.Fatalf("%d nodes reached, %d decoded", seen, tr.dirs)
	}
}

// FuzzDecodeTree: decodeTree never panics, and what it accepts is a
// consistent tree.
func FuzzDecodeTree(f *testing.F) {
	root, dir := f.TempDir(), f.TempDir()
	mkTree(f, root, cacheTree0...)
	c := newTestCache(dir, ahead)
	if _, _, err := c.ScanPatterns(root, cachePats, Limits{}); err != nil {
		f.Fatal(err)
	}
	if err := c.Save(); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(c.path(cacheKey(root, cachePats)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good[:len(good)-4])
	f.Fuzz(func(t *testing.T, body []byte) {
		b := append(slices.Clone(body), 0, 0, 0, 0)
		binary.LittleEndian.PutUint32(b[len(body):], crc32.Checksum(body, crcTable))
		if tr, err := decodeTree(b, root, cachePats, time.Now().Add(time.Hour)); err == nil {
			checkTree(t, tr)
		}
	})
}

// TestCacheSaveThreshold: a scan in which few directories changed (one in
// 64 or fewer) keeps the earlier file, whose records of those directories
// no longer match, so that the next scans read them again and see the
// change; more changes rewrite it.
func TestCacheSaveThreshold(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	var entries []string
	for i := range 200 {
		entries = append(entries, fmt.Sprintf("d%03d/f", i))
	}
	mkTree(t, root, entries...)
	scanWith(t, dir, root, ahead)
	file := newTestCache(dir, ahead).path(cacheKey(root, cachePats))
	ino := func() uint64 {
		fi, err := os.Stat(file)
		must(t, err)
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	first := ino()
	// scan scans with a new cache, as the next run would: it returns
	// whether the tree is to be written, and saves it.
	scan := func() ([]string, Stats, bool) {
		c := newTestCache(dir, ahead)
		ms, st, err := c.ScanPatterns(root, cachePats, Limits{})
		must(t, err)
		dirty := c.Stats().Dirty > 0
		must(t, c.Save())
		return rels(ms), st, dirty
	}
	mkTree(t, root, "d007/.env")
	for range 2 {
		got, st, dirty := scan()
		if !slices.Contains(got, "d007/.env") || st.Dirs-st.Cached != 1 || dirty {
			t.Errorf("after one change: %q, %d of %d read again, to be written %v", got, st.Dirs-st.Cached, st.Dirs, dirty)
		}
	}
	if ino() != first {
		t.Error("the cache file was rewritten for one changed directory in 201")
	}
	for i := range 5 {
		mkTree(t, root, fmt.Sprintf("d%03d/.env", 100+i))
	}
	if _, _, dirty := scan(); !dirty || ino() == first {
		t.Errorf("the cache file was not rewritten for six changed directories in 201 (to be written: %v)", dirty)
	}
	got, st, _ := scanWith(t, dir, root, ahead)
	if st.Cached != st.Dirs || !slices.Equal(got, plainScan(t, root)) {
		t.Errorf("after the rewrite: %d of %d cached, %q", st.Cached, st.Dirs, got)
	}
}

// TestCacheMinDirs: a first scan of fewer than MinCacheDirs directories
// writes no file; one of as many does.
func TestCacheMinDirs(t *testing.T) {
	saved := cacheBounds
	t.Cleanup(func() { cacheBounds = saved })
	cacheBounds.minDirs = MinCacheDirs
	for _, n := range []int{MinCacheDirs - 2, MinCacheDirs - 1} {
		root, dir := t.TempDir(), t.TempDir()
		var entries []string
		for i := range n {
			entries = append(entries, fmt.Sprintf("d%03d/", i))
		}
		mkTree(t, root, entries...) // n directories below the root
		_, st, c := scanWith(t, dir, root, ahead)
		_, err := os.Stat(c.path(cacheKey(root, cachePats)))
		if written, want := err == nil, st.Dirs >= MinCacheDirs; written != want {
			t.Errorf("a scan of %d directories: file written %v, want %v", st.Dirs, written, want)
		}
	}
}
