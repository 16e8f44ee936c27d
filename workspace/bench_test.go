//go:build unix

package workspace

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// BenchmarkReadText measures read_file's fast path on a 2,000-line file,
// ASCII and with some non-ASCII text on every line.
func BenchmarkReadText(b *testing.B) {
	for _, tc := range []struct{ name, extra string }{{"ascii", ""}, {"utf8", " caf\u00e9 \u2713"}} {
		b.Run(tc.name, func(b *testing.B) {
			ws := b.TempDir()
			var sb strings.Builder
			for i := 1; i <= 2000; i++ {
				fmt.Fprintf(&sb, "line %d: the quick brown fox jumps over the lazy dog%s %d\n", i, tc.extra, i*i)
			}
			mustWrite(b, filepath.Join(ws, "big.txt"), sb.String())
			fsys := newFS(b, ws, policy.ModeStandard)
			b.SetBytes(int64(sb.Len()))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := fsys.ReadText("big.txt", 0, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// goSrc is the Go source tree, the tree the search benchmarks walk (about
// 1,300 directories and 15,000 files, three of them .gitignore files).
func goSrc(b *testing.B) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "src")
}

// BenchmarkFind measures find_files of "**/*_test.go" over the Go source
// tree, .gitignore files applied.
func BenchmarkFind(b *testing.B) {
	fsys := newFS(b, goSrc(b), policy.ModeStandard)
	fsys.Limits.MaxResults = 1 << 30
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r, err := fsys.Find(".", "**/*_test.go", FindOptions{}); err != nil || len(r.Paths) == 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkGrep measures grep for a regular expression over the Go source
// tree, .gitignore files applied.
func BenchmarkGrep(b *testing.B) {
	fsys := newFS(b, goSrc(b), policy.ModeStandard)
	fsys.Limits.MaxResults = 1 << 30
	fsys.Limits.MaxOutputBytes = 1 << 40
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r, err := fsys.Grep(`func \(\w+ \*\w+\) Close\(\) error`, ".", GrepOptions{}); err != nil || len(r.Matches) == 0 {
			b.Fatal(err)
		}
	}
}
