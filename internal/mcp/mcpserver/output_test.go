//go:build unix

package mcpserver

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// cutLine matches the line outputBuffer puts where it cut.
var cutLine = regexp.MustCompile(`(?m)^\[\.\.\. (?:(\d+) lines? \((\d+) bytes\)|(\d+) bytes of one line) cut here by cordon: the output was (\d+) lines? \((\d+) bytes\), more than max_output_bytes \((\d+)\); its first (\d+) and last (\d+) bytes are shown \.\.\.\]\n`)

// TestOutputBuffer: output within the budget comes back whole; longer
// output keeps its head and its tail, within the budget however it was
// written (in small or huge writes, in lines or as one huge line), cut on
// line boundaries when one is near and never inside a UTF-8 sequence, with
// a line saying exactly how many lines and bytes were cut out of how many.
func TestOutputBuffer(t *testing.T) {
	numbered := func(n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name   string
		out    string
		max    int
		chunk  int    // write size; 0 writes it at once
		head   string // the text must start with it
		tail   string // and end with it
		whole  bool   // nothing cut
		oneCut bool   // cut inside one line
	}{
		{name: "empty", out: "", max: 100, whole: true},
		{name: "fits", out: "a\nb\n", max: 100, whole: true},
		{name: "exactly", out: strings.Repeat("x", 99) + "\n", max: 100, whole: true},
		{name: "one over", out: strings.Repeat("x\n", 51), max: 100, head: "x\n", tail: "x\n"},
		{name: "lines", out: numbered(100000), max: 3000, head: "line 1\nline 2\n", tail: "line 99999\nline 100000\n"},
		{name: "lines in small writes", out: numbered(20000), max: 3000, chunk: 7, head: "line 1\n", tail: "line 20000\n"},
		{name: "lines in big writes", out: numbered(20000), max: 3000, chunk: 5000, head: "line 1\n", tail: "line 20000\n"},
		{name: "no final newline", out: strings.TrimSuffix(numbered(5000), "\n"), max: 1000, head: "line 1\n", tail: "line 5000"},
		{name: "one huge line", out: strings.Repeat("y", 1<<20), max: 4096, head: "yyyy", tail: "yyyy", oneCut: true},
		{name: "huge line at the end", out: numbered(10) + strings.Repeat("z", 1<<20) + "\n", max: 4096, head: "line 1\n", tail: "zzz\n", oneCut: true},
		{name: "multibyte", out: strings.Repeat("é✓😀", 10000), max: 1000, chunk: 3, oneCut: true},
		{name: "budget of one byte", out: "abc\n", max: 1, oneCut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOutputBuffer(tc.max)
			data := []byte(tc.out)
			for len(data) > 0 {
				n := len(data)
				if tc.chunk > 0 {
					n = min(n, tc.chunk)
				}
				if w, err := o.Write(data[:n]); w != n || err != nil {
					t.Fatalf("Write: %d, %v", w, err)
				}
				data = data[n:]
			}
			got := o.text()
			if tc.whole {
				if got != tc.out {
					t.Fatalf("got %q, want the whole output", got)
				}
				return
			}
			m := cutLine.FindStringSubmatchIndex(got)
			if m == nil {
				t.Fatalf("no cut line in %q", got)
			}
			num := func(i int) int64 {
				if m[2*i] < 0 {
					return 0
				}
				n, _ := strconv.ParseInt(got[m[2*i]:m[2*i+1]], 10, 64)
				return n
			}
			head, tail := got[:m[0]], got[m[1]:]
			if !strings.HasSuffix(head, "\n") && head != "" {
				t.Fatalf("the cut line does not start a line: %q", got)
			}
			shownHead, shownTail := num(7), num(8)
			if strings.HasSuffix(tc.out[:shownHead], "\n") {
				if head != tc.out[:shownHead] {
					t.Errorf("head %q is not the first %d bytes", head, shownHead)
				}
			} else if strings.TrimSuffix(head, "\n") != tc.out[:shownHead] {
				t.Errorf("head %q is not the first %d bytes", head, shownHead)
			}
			if tail != tc.out[len(tc.out)-int(shownTail):] {
				t.Errorf("tail %q is not the last %d bytes", tail, shownTail)
			}
			if shownHead+shownTail > int64(tc.max) {
				t.Errorf("%d + %d bytes shown, over the budget of %d", shownHead, shownTail, tc.max)
			}
			if len(got) > tc.max+300 {
				t.Errorf("%d bytes returned for a budget of %d", len(got), tc.max)
			}
			if !utf8.ValidString(head) || !utf8.ValidString(tail) {
				t.Errorf("a UTF-8 sequence was cut: %q ... %q", head[max(0, len(head)-8):], tail[:min(8, len(tail))])
			}
			if !strings.HasPrefix(head, tc.head) || !strings.HasSuffix(tail, tc.tail) {
				t.Errorf("got %q ... %q, want %q ... %q", head[:min(40, len(head))], tail[max(0, len(tail)-40):], tc.head, tc.tail)
			}
			total := int64(len(tc.out))
			lines := int64(strings.Count(tc.out, "\n"))
			if !strings.HasSuffix(tc.out, "\n") {
				lines++
			}
			cutBytes := total - shownHead - shownTail
			cutMiddle := tc.out[shownHead : total-shownTail]
			if tc.oneCut != (m[6] >= 0) {
				t.Errorf("cut inside one line: %v, want %v: %q", m[6] >= 0, tc.oneCut, got[m[0]:m[1]])
			}
			if gotBytes := num(2) + num(3); gotBytes != cutBytes {
				t.Errorf("says %d bytes cut, %d were", gotBytes, cutBytes)
			}
			if n := int64(bytes.Count([]byte(cutMiddle), []byte{'\n'})); num(1) != n {
				t.Errorf("says %d lines cut, %d newlines were", num(1), n)
			}
			if num(4) != lines || num(5) != total || num(6) != int64(tc.max) {
				t.Errorf("says the output was %d lines (%d bytes), budget %d; it was %d lines (%d bytes), budget %d", num(4), num(5), num(6), lines, total, tc.max)
			}
		})
	}
}
