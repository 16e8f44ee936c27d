package landlock

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCarveOutLargeHome measures what the Landlock-only backend pays
// at start-up to carve denied paths out of a large allowed home directory:
// 2,000 entries at the top, 500 in ~/.config, and three denied paths
// (~/.ssh, ~/.aws, ~/.config/gh). Run with:
//
//	go test -run '^$' -bench CarveOut ./internal/enforce/landlock/
func BenchmarkCarveOutLargeHome(b *testing.B) {
	home := filepath.Join(b.TempDir(), "home")
	mk := func(dir string, n int) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	mk(home, 2000)
	mk(filepath.Join(home, ".config"), 500)
	for _, d := range []string{".ssh", ".aws", ".config/gh"} {
		mk(filepath.Join(home, d), 3)
	}
	denied := []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".aws"), filepath.Join(home, ".config", "gh")}
	b.ResetTimer()
	var n int
	for i := 0; i < b.N; i++ {
		got, err := CarveOut([]string{home}, denied, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		n = len(got)
	}
	b.ReportMetric(float64(n), "granted")
}
