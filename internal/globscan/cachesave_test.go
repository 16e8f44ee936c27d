//go:build linux

package globscan

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestCacheSaveAfterFailedScan: a scan that fails (here over its entry
// bound) after an earlier scan of the same root left its tree to be
// saved drops that tree, which it was updating in place; Save then writes
// nothing for it (no half-updated tree, no panic), and the next cache
// reads every directory and finds what the plain scan finds.
func TestCacheSaveAfterFailedScan(t *testing.T) {
	root, dir := t.TempDir(), filepath.Join(t.TempDir(), "walk")
	mkTree(t, root, cacheTree0...)
	c := newTestCache(dir, ahead)
	if _, _, err := c.ScanPatterns(root, cachePats, Limits{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ScanPatterns(root, cachePats, Limits{MaxEntries: 3}); err == nil {
		t.Fatal("a scan over its entry bound did not fail")
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("Save after a failed scan panicked: %v", p)
			}
		}()
		if err := c.Save(); err != nil {
			t.Errorf("Save after a failed scan: %v", err)
		}
	}()
	got, _, _ := scanWith(t, dir, root, ahead)
	if want := plainScan(t, root); !slices.Equal(got, want) {
		t.Errorf("after a failed scan and Save: %q, want %q", got, want)
	}
}

// TestCacheSaveDuringScans: Save may be called while scans of the same
// Cache go on (a Cache is safe for concurrent use): it never encodes a
// tree a scan is updating in place (go test -race sees it), and what it
// saved is a tree the next cache can trust.
func TestCacheSaveDuringScans(t *testing.T) {
	root, dir := t.TempDir(), filepath.Join(t.TempDir(), "walk")
	mkTree(t, root, cacheTree0...)
	c := newTestCache(dir, ahead)
	var wg sync.WaitGroup
	// Directories changing meanwhile: scans find them changed, and
	// leave their trees to be saved.
	wg.Go(func() {
		for i := range 200 {
			for _, d := range []string{"a/b", "sub", "deep/p"} {
				p := filepath.Join(root, d, "churn")
				if i%2 == 0 {
					_ = os.Mkdir(p, 0o755)
				} else {
					_ = os.Remove(p)
				}
			}
		}
	})
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if _, _, err := c.ScanPatterns(root, cachePats, Limits{}); err != nil {
					t.Error(err)
				}
			}
		})
		wg.Go(func() {
			for range 20 {
				if err := c.Save(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got, _, _ := scanWith(t, dir, root, ahead)
	if want := plainScan(t, root); !slices.Equal(got, want) {
		t.Errorf("after concurrent scans and saves: %q, want %q", got, want)
	}
}

// TestScanDirGoneDuringScan: a directory removed between the listing of
// its parent and its own opening (another command at work in the tree)
// is skipped, not an error that fails the whole scan, with a cache or
// without.
func TestScanDirGoneDuringScan(t *testing.T) {
	root := t.TempDir()
	mkTree(t, root, cacheTree0...)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < 100_000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			for _, d := range []string{"a/b", "sub", "deep/p", ""} {
				p := filepath.Join(root, d, "gone")
				if i%2 == 0 {
					_ = os.Mkdir(p, 0o755)
				} else {
					_ = os.Remove(p)
				}
			}
		}
	})
	defer wg.Wait()
	defer close(stop)
	c := newTestCache(filepath.Join(t.TempDir(), "walk"), ahead)
	for i := range 200 {
		if _, _, err := ScanPatterns(root, cachePats, Limits{}); err != nil {
			t.Fatalf("scan %d: %v", i, err)
		}
		if _, _, err := c.ScanPatterns(root, cachePats, Limits{}); err != nil {
			t.Fatalf("cached scan %d: %v", i, err)
		}
	}
}

// TestCacheRacyNotRewritten: without a watcher, a directory read in the
// tick of a change keeps no record (nothing could vouch for it), so a tree
// whose directories a run changes each time (placeholders made and
// removed) is not written again after every scan.
func TestCacheRacyNotRewritten(t *testing.T) {
	root, dir := t.TempDir(), filepath.Join(t.TempDir(), "walk")
	mkTree(t, root, cacheTree0...)
	scanWith(t, dir, root, time.Now)
	for i := range 3 {
		for _, d := range []string{"a/b/c", "sub", "deep/p"} {
			p := filepath.Join(root, d, "placeholder")
			must(t, os.WriteFile(p, nil, 0o644))
			must(t, os.Remove(p))
		}
		c := newTestCache(dir, time.Now)
		if _, _, err := c.ScanPatterns(root, cachePats, Limits{}); err != nil {
			t.Fatal(err)
		}
		if d := c.Stats().Dirty; d != 0 {
			t.Fatalf("scan %d: %d trees to write again after directories changed in the tick of the scan", i+1, d)
		}
	}
}
