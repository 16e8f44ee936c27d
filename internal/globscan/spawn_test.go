package globscan

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestScanWidths: a scan starts with one worker and starts more only once
// spawnQueue directories wait (spawn); whatever the width of the tree,
// below, at and above that, with and without a cache, every match is
// found once.
func TestScanWidths(t *testing.T) {
	for _, width := range []int{1, spawnQueue - 1, spawnQueue, 10 * spawnQueue} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			root := t.TempDir()
			for i := range width {
				d := filepath.Join(root, fmt.Sprintf("d%d", i), "sub")
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, ".env"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, cached := range []bool{false, true} {
				var c *Cache
				if cached {
					c = OpenCache(t.TempDir())
				}
				for round := range 2 { // the second from the cache
					ms, st, err := c.ScanPatterns(root, []Pattern{{Glob: "**/.env"}}, Limits{})
					if err != nil {
						t.Fatal(err)
					}
					if len(ms) != width {
						t.Fatalf("cached %v, round %d: %d matches, want %d", cached, round, len(ms), width)
					}
					seen := map[string]bool{}
					for _, m := range ms {
						if seen[m.Rel] {
							t.Fatalf("%s reported twice", m.Rel)
						}
						seen[m.Rel] = true
					}
					if want := 1 + 2*width; st.Dirs != want {
						t.Errorf("cached %v, round %d: %d directories, want %d", cached, round, st.Dirs, want)
					}
				}
			}
		})
	}
}
