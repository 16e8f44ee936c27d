package workspace

import (
	"fmt"
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
