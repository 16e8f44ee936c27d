package mcpserver

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// outputBuffer keeps the head and the tail of a command's combined output
// within a budget of max bytes: the first third as it comes, and the last
// two thirds in a ring, since the end is where a failing build or test says
// why. It counts the bytes and lines of everything written, however long,
// and never holds more than max bytes.
type outputBuffer struct {
	mu      sync.Mutex
	max     int
	head    []byte // the first headMax bytes
	headMax int
	ring    []byte // the last tailMax bytes (allocated when the head is full)
	tailMax int
	pos     int   // where the next byte goes in ring
	ringN   int64 // bytes written to the ring
	total   int64 // bytes written
	lines   int64 // newlines written
	last    byte  // the last byte written
}

func newOutputBuffer(max int) *outputBuffer {
	head := max / 3
	return &outputBuffer{max: max, headMax: head, tailMax: max - head}
}

// Write keeps what the head and the ring have room for; it never fails.
func (o *outputBuffer) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	o.total += int64(n)
	o.lines += int64(bytes.Count(p, []byte{'\n'}))
	o.last = p[n-1]
	if room := o.headMax - len(o.head); room > 0 {
		k := min(room, len(p))
		o.head = append(o.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || o.tailMax == 0 {
		return n, nil
	}
	if o.ring == nil {
		o.ring = make([]byte, o.tailMax)
	}
	o.ringN += int64(len(p))
	if len(p) >= o.tailMax {
		copy(o.ring, p[len(p)-o.tailMax:])
		o.pos = 0
		return n, nil
	}
	k := copy(o.ring[o.pos:], p)
	copy(o.ring, p[k:])
	o.pos = (o.pos + len(p)) % o.tailMax
	return n, nil
}

// tail returns the bytes the ring holds, in order.
func (o *outputBuffer) tail() []byte {
	if o.ringN < int64(o.tailMax) {
		return o.ring[:o.ringN]
	}
	return append(append(make([]byte, 0, o.tailMax), o.ring[o.pos:]...), o.ring[:o.pos]...)
}

// lineSlack is how far the head's end, or the tail's start, moves to fall
// on a line boundary: past it, the cut goes through the line.
func lineSlack(n int) int { return min(n/4, 4<<10) }

// text returns the output: all of it when it fit in the budget; otherwise
// the head (ending at a line end when one is near) and the tail (starting
// at a line start when one is near), never cutting a UTF-8 sequence, with
// a line between them that says how many lines and bytes were cut, out of
// how many.
func (o *outputBuffer) text() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	head, tail := o.head, o.tail()
	if int64(len(head)+len(tail)) == o.total {
		return string(head) + string(tail)
	}
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 && len(head)-(i+1) <= lineSlack(len(head)) {
		head = head[:i+1]
	} else {
		head = trimCutRune(head)
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i+1 <= lineSlack(len(tail)) {
		tail = tail[i+1:]
	} else {
		for k := 0; k < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); k++ {
			tail = tail[1:]
		}
	}
	cutBytes := o.total - int64(len(head)) - int64(len(tail))
	cutLines := o.lines - int64(bytes.Count(head, []byte{'\n'})) - int64(bytes.Count(tail, []byte{'\n'}))
	totalLines := o.lines
	if o.last != '\n' {
		totalLines++
	}
	var cut string
	if cutLines > 0 {
		cut = fmt.Sprintf("%s (%d bytes)", plural(cutLines, "line", "lines"), cutBytes)
	} else {
		cut = fmt.Sprintf("%d bytes of one line", cutBytes)
	}
	var b strings.Builder
	b.Grow(len(head) + len(tail) + 300)
	b.Write(head)
	if len(head) > 0 && head[len(head)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[... %s cut here by cordon: the output was %s (%d bytes), more than max_output_bytes (%d); its first %d and last %d bytes are shown ...]\n",
		cut, plural(totalLines, "line", "lines"), o.total, o.max, len(head), len(tail))
	b.Write(tail)
	return b.String()
}

// trimCutRune drops an incomplete UTF-8 sequence that ends b.
func trimCutRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// plural is "1 match", "3 matches".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
