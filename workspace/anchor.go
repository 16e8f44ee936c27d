package workspace

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Line is one line of a file as ReadFile returns it.
type Line struct {
	// N is the 1-based line number.
	N int `json:"n"`
	// Hash is LineHash of the line's full text.
	Hash string `json:"hash"`
	// Text is the line without its newline (cut when very long).
	Text string `json:"text"`
}

// Anchor returns the line's anchor, "N:hash".
func (l Line) Anchor() string { return strconv.Itoa(l.N) + ":" + l.Hash }

// String returns the line as "N:hash|text".
func (l Line) String() string { return l.Anchor() + "|" + l.Text }

// HashHexDigits is the width of a line hash in hex digits (24 bits).
const HashHexDigits = 6

// LineHash returns the anchor hash of one line (without its newline): the
// low 24 bits of the 64-bit FNV-1a hash of its bytes, as 6 lowercase hex
// digits.
//
// Collision math: an anchor "N:hash" names line N, so the hash only has to
// tell the line now at N from the line that was there when the file was
// read. If that line changed, the new text has the same 24-bit hash with
// probability 2^-24 ≈ 6.0e-8 (FNV-1a's low bits are well mixed for text).
// A batch of k anchors that are all stale goes unnoticed only if every
// one collides; a batch with at least one stale anchor is missed with
// probability at most 2^-24 per stale anchor, so even an agent making a
// million anchored edits against changed files expects about 0.06 undetected
// stale edits. A line whose content is unchanged but which moved is caught
// too unless the line now at N happens to hash the same (same bound), or is
// identical text, in which case the edit is still correct for that text.
func LineHash(text string) string {
	var b [HashHexDigits]byte
	return string(appendLineHash(b[:0], text))
}

// appendLineHash appends LineHash(text) to b without allocating.
func appendLineHash(b []byte, text string) []byte {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
		hexdig   = "0123456789abcdef"
	)
	v := uint64(offset64)
	for i := 0; i < len(text); i++ {
		v ^= uint64(text[i])
		v *= prime64
	}
	var h [HashHexDigits]byte
	for i := HashHexDigits - 1; i >= 0; i-- {
		h[i] = hexdig[v&0xf]
		v >>= 4
	}
	return append(b, h[:]...)
}

// parseAnchor parses "N:hash" (a trailing "|text" is ignored). "0" and "0:"
// name the position before the first line (InsertAfter only).
func parseAnchor(a string) (n int, hash string, err error) {
	a = strings.TrimSpace(a)
	if i := strings.IndexByte(a, '|'); i >= 0 {
		a = a[:i]
	}
	num, h, _ := strings.Cut(a, ":")
	n, err = strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0, "", fmt.Errorf("anchor %s is not of the form N:hash as read_file returns it", quote(a))
	}
	if n == 0 {
		return 0, "", nil
	}
	if len(h) != HashHexDigits {
		return 0, "", fmt.Errorf("anchor %s is not of the form N:hash as read_file returns it", quote(a))
	}
	return n, strings.ToLower(h), nil
}

// LineEdit is one edit of a batch: replace the lines from Start to End
// (anchors, inclusive) with Text, or, with After set, insert Text after the
// line named by After ("0" inserts before the first line).
type LineEdit struct {
	// Start is the anchor of the first line to replace.
	Start string `json:"start,omitempty"`
	// End is the anchor of the last line to replace; empty means Start.
	End string `json:"end,omitempty"`
	// After is the anchor of the line to insert after (an insert edit).
	After string `json:"after,omitempty"`
	// Text is the new text: zero or more lines; one trailing newline is
	// ignored. Empty text with Start deletes the lines.
	Text string `json:"text"`
}

// ReplaceLines replaces the lines from startAnchor to endAnchor (inclusive)
// with newText. A stale anchor (its line's hash no longer matches) is
// rejected and nothing is written.
func (f *FS) ReplaceLines(p, startAnchor, endAnchor, newText string) (*WriteResult, error) {
	return f.EditLines(p, []LineEdit{{Start: startAnchor, End: endAnchor, Text: newText}})
}

// InsertAfter inserts text after the line named by anchor ("0" inserts at
// the top). A stale anchor is rejected and nothing is written.
func (f *FS) InsertAfter(p, anchor, text string) (*WriteResult, error) {
	return f.EditLines(p, []LineEdit{{After: anchor, Text: text}})
}

type span struct {
	start, end int // 1-based, inclusive; an insert after k is start=k+1, end=k
	lines      []string
	idx        int
}

// EditLines applies a batch of anchored edits to one file: every anchor is
// verified against the current content first, overlapping edits are refused,
// and only then are the edits applied bottom-up and the file written once,
// atomically.
func (f *FS) EditLines(p string, edits []LineEdit) (*WriteResult, error) {
	if len(edits) == 0 {
		return nil, fmt.Errorf("edit %s: no edits given", quote(p))
	}
	t, data, err := f.readForEdit(p)
	if err != nil {
		return nil, err
	}
	defer t.close()
	lines, final := splitLines(data)
	check := func(a string, allowZero bool) (int, error) {
		n, h, err := parseAnchor(a)
		if err != nil {
			return 0, fmt.Errorf("edit %s: %w", quote(p), err)
		}
		if n == 0 {
			if allowZero {
				return 0, nil
			}
			return 0, fmt.Errorf("edit %s: anchor %s names no line", quote(p), quote(a))
		}
		if n > len(lines) {
			return 0, fmt.Errorf("edit %s: anchor %s is stale: the file has only %d lines; re-read the file with read_file and use the new anchors", quote(p), quote(a), len(lines))
		}
		if got := LineHash(lines[n-1]); got != h {
			return 0, fmt.Errorf("edit %s: anchor %s is stale: line %d has changed (hash is now %s); re-read the file with read_file and use the new anchors", quote(p), quote(a), n, got)
		}
		return n, nil
	}
	spans := make([]span, 0, len(edits))
	for i, e := range edits {
		newLines, _ := splitLines(e.Text)
		if e.Text == "\n" {
			newLines = []string{""}
		}
		var s span
		switch {
		case e.After != "" && e.Start == "" && e.End == "":
			n, err := check(e.After, true)
			if err != nil {
				return nil, err
			}
			if len(newLines) == 0 {
				return nil, fmt.Errorf("edit %s: nothing to insert after %s", quote(p), quote(e.After))
			}
			s = span{start: n + 1, end: n, lines: newLines, idx: i}
		case e.After == "" && e.Start != "":
			a, err := check(e.Start, false)
			if err != nil {
				return nil, err
			}
			b := a
			if e.End != "" {
				if b, err = check(e.End, false); err != nil {
					return nil, err
				}
			}
			if b < a {
				return nil, fmt.Errorf("edit %s: end anchor %s comes before start anchor %s", quote(p), quote(e.End), quote(e.Start))
			}
			s = span{start: a, end: b, lines: newLines, idx: i}
		default:
			return nil, fmt.Errorf("edit %s: edit %d needs either start (and end) anchors or an after anchor", quote(p), i+1)
		}
		spans = append(spans, s)
	}
	// Bottom-up: later positions first; at one position, inserts after a
	// line go before a replacement starting on the next line.
	sort.SliceStable(spans, func(i, j int) bool {
		if spans[i].start != spans[j].start {
			return spans[i].start > spans[j].start
		}
		if spans[i].end != spans[j].end {
			return spans[i].end > spans[j].end
		}
		// Several inserts after one line keep their batch order.
		return spans[i].idx > spans[j].idx
	})
	for i := 1; i < len(spans); i++ {
		hi, lo := spans[i-1], spans[i]
		// lo is above hi (an insert covers the empty range start..start-1);
		// they overlap when lo's range reaches hi's start.
		if lo.end >= hi.start {
			return nil, fmt.Errorf("edit %s: edits %d and %d overlap; combine them into one edit", quote(p), lo.idx+1, hi.idx+1)
		}
	}
	for _, s := range spans {
		out := make([]string, 0, len(lines)-(s.end-s.start+1)+len(s.lines))
		out = append(out, lines[:s.start-1]...)
		out = append(out, s.lines...)
		out = append(out, lines[s.end:]...)
		lines = out
	}
	if data == "" {
		final = true
	}
	res, err := f.write(t, joinLines(lines, final))
	if err != nil {
		return nil, err
	}
	res.Replacements = len(spans)
	return res, nil
}

// sortEntries sorts entries by name.
func sortEntries(es []Entry) {
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
}
