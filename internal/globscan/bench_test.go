package globscan

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var benchPatterns = []string{"**/.env", "**/.env.*", "**/secrets.*"}

// makeBenchTree creates 20*20*25 = 10,420 directories with 10 files in each
// leaf (100,000 files), a few of them secrets.
func makeBenchTree(b *testing.B, root string) {
	b.Helper()
	n := 0
	for i := range 20 {
		for j := range 20 {
			for k := range 25 {
				dir := filepath.Join(root, fmt.Sprintf("pkg%02d", i), fmt.Sprintf("mod%02d", j), fmt.Sprintf("dir%02d", k))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				for f := range 10 {
					name := fmt.Sprintf("file%d.go", f)
					if n%997 == 0 {
						name = []string{".env", ".env.local", "secrets.yaml"}[n%3]
					}
					n++
					if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	}
}

func benchScan(b *testing.B, root string) {
	var st Stats
	var matches int
	for b.Loop() {
		ms, s, err := Scan(root, benchPatterns, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		st, matches = s, len(ms)
	}
	perOp := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(st.Entries)/perOp, "entries/s")
	b.ReportMetric(perOp*1e3*100_000/float64(st.Entries), "ms/100k-entries")
	b.ReportMetric(float64(st.Entries), "entries")
	b.ReportMetric(float64(st.Dirs), "dirs")
	b.ReportMetric(float64(matches), "matches")
}

// BenchmarkScan scans a generated tree of ~110k entries (warm cache) with
// the three default deny globs, which do not prune anything.
func BenchmarkScan(b *testing.B) {
	root := b.TempDir()
	makeBenchTree(b, root)
	benchScan(b, root)
}

// BenchmarkScanGOROOT scans $(go env GOROOT) with the default deny globs.
func BenchmarkScanGOROOT(b *testing.B) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	benchScan(b, strings.TrimSpace(string(out)))
}

// BenchmarkScanCached scans the tree of BenchmarkScan again with a Cache
// that recorded it (no directory changed): one lstat per directory
// instead of a listing. The cache's clock runs 3 s ahead, so that the
// freshly made tree is not "racy". With $GLOBSCAN_BENCH_TREE it scans
// that tree instead of making one (making it takes longer than the
// benchmark). It also reports the CPU time of the process per scan.
func BenchmarkScanCached(b *testing.B) {
	root := os.Getenv("GLOBSCAN_BENCH_TREE")
	if root == "" {
		root = b.TempDir()
		makeBenchTree(b, root)
	}
	pats := []Pattern{{Glob: "**/.env"}, {Glob: "**/.env.*"}, {Glob: "**/secrets.*"}}
	dir := b.TempDir()
	c := OpenCache(dir)
	c.now = func() time.Time { return time.Now().Add(3 * time.Second) }
	if _, _, err := c.ScanPatterns(root, pats, Limits{}); err != nil {
		b.Fatal(err)
	}
	if err := c.Save(); err != nil {
		b.Fatal(err)
	}
	var st Stats
	var load time.Duration
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		c := OpenCache(dir)
		c.now = func() time.Time { return time.Now().Add(3 * time.Second) }
		t0 := time.Now()
		c.tree(cacheKey(root, pats), root, pats)
		load += time.Since(t0)
		var err error
		if _, st, err = c.ScanPatterns(root, pats, Limits{}); err != nil {
			b.Fatal(err)
		}
		if st.Cached != st.Dirs {
			b.Fatalf("%d of %d directories taken from the cache", st.Cached, st.Dirs)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1e3/float64(b.N), "ms-cpu/op")
	b.ReportMetric(float64(load.Microseconds())/1e3/float64(b.N), "ms-load/op")
	b.ReportMetric(float64(st.Dirs), "dirs")
}

// BenchmarkScanWatched scans the tree of BenchmarkScanCached (or
// $GLOBSCAN_BENCH_TREE) with a watched Cache that answers no scan whole
// (noMemo): every directory is taken on the watcher's word, without an
// lstat, as the walk server's scans are while nothing changed.
func BenchmarkScanWatched(b *testing.B) {
	root := os.Getenv("GLOBSCAN_BENCH_TREE")
	if root == "" {
		root = b.TempDir()
		makeBenchTree(b, root)
	}
	pats := []Pattern{{Glob: "**/.env"}, {Glob: "**/.env.*"}, {Glob: "**/secrets.*"}}
	c := OpenCache(b.TempDir())
	c.now = func() time.Time { return time.Now().Add(3 * time.Second) }
	if err := c.Watch(0); err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c.noMemo = true
	var st Stats
	for range 3 {
		var err error
		if _, st, err = c.ScanPatterns(root, pats, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
	if st.Vouched < st.Dirs-1 {
		b.Fatalf("%d of %d directories vouched for", st.Vouched, st.Dirs)
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if _, st, _ = c.ScanPatterns(root, pats, Limits{}); st.Vouched < st.Dirs-1 {
			b.Fatalf("%d of %d directories vouched for", st.Vouched, st.Dirs)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1e3/float64(b.N), "ms-cpu/op")
	b.ReportMetric(float64(st.Dirs), "dirs")
}
