package workspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// sniffBytes is how much of the start of a file is searched for a NUL byte
// to tell a binary file (as git and GNU grep do).
const sniffBytes = 8192

// isBinary reports whether data, the start of a file, has a NUL byte in
// its first sniffBytes.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), sniffBytes)], 0) >= 0
}

// trimCutSequence drops an incomplete UTF-8 sequence that ends data (the
// start of a longer file, cut at a limit).
func trimCutSequence(data []byte) []byte {
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				return data[:i]
			}
			break
		}
	}
	return data
}

// NotTextError is the error of a read of a file that is not UTF-8 text: a
// binary file (a NUL byte in its first 8 KiB), or a line that is not valid
// UTF-8 among those asked for. Its message says so and how to look at the
// file instead, rather than returning replacement characters.
type NotTextError struct {
	// Path is the path as the caller gave it.
	Path string
	// Size is the file's size in bytes.
	Size int64
	// Line is the first line asked for that is not valid UTF-8, or 0 for
	// a binary file.
	Line int
	// Column is the 1-based byte offset of the first invalid byte in Line.
	Column int
	// Byte is that byte.
	Byte byte
}

// Error returns the one-sentence message, with the run_command argv that
// shows the file's bytes.
func (e *NotTextError) Error() string {
	od, _ := json.Marshal([]string{"od", "-A", "d", "-c", e.Path})
	if e.Line == 0 {
		return fmt.Sprintf("%s is a binary file (%d bytes; it has NUL bytes): read_file shows text only; to see its bytes, use run_command with argv %s (file_info gives its size and type)",
			quote(e.Path), e.Size, od)
	}
	return fmt.Sprintf("%s is not UTF-8 text: line %d has the invalid byte 0x%02x at byte %d of the line: read_file shows UTF-8 text only; the file is binary or in another encoding: see its bytes with run_command and argv %s, convert it with iconv, or read other lines with start_line and end_line",
		quote(e.Path), e.Line, e.Byte, e.Column, od)
}

// invalidAt returns the 1-based offset and value of the first byte of
// line that is not valid UTF-8 (line must not be valid).
func invalidAt(line string) (int, byte) {
	for i := 0; i < len(line); {
		r, n := utf8.DecodeRuneInString(line[i:])
		if r == utf8.RuneError && n <= 1 {
			return i + 1, line[i]
		}
		i += n
	}
	return 0, 0
}

// ReadResult is the result of ReadFile.
type ReadResult struct {
	// Path is the resolved absolute path.
	Path string `json:"path"`
	// Lines are the lines returned, numbered from 1.
	Lines []Line `json:"lines"`
	// TotalLines is the number of lines in the file (in the part read,
	// when the file exceeded the read limit).
	TotalLines int `json:"total_lines"`
	// Truncated is set when lines were left out or cut because of a limit.
	Truncated bool `json:"truncated"`
}

// Text renders the result as one "N:hash|text" line per line, ending with
// the truncation marker when Truncated.
func (r *ReadResult) Text() string {
	var b strings.Builder
	for _, l := range r.Lines {
		b.WriteString(l.String())
		b.WriteByte('\n')
	}
	if r.Truncated {
		b.WriteString(strings.TrimPrefix(truncMarker, "\n"))
		b.WriteByte('\n')
	}
	return b.String()
}

// textFile is a file read by readText.
type textFile struct {
	t     *target
	data  []byte
	size  int64 // the file's size
	trunc bool  // data is the start of the file, cut at the read limit
	valid bool  // data is valid UTF-8
}

// readText is readChecked for a text file: a binary file (a NUL byte in its
// first 8 KiB) is a *NotTextError. When the data is not valid UTF-8, the
// reader checks the lines it returns (see eachLine).
func (f *FS) readText(p string) (*textFile, error) {
	t, data, size, trunc, err := f.readChecked(p)
	if err != nil {
		return nil, err
	}
	if isBinary(data) {
		return nil, &NotTextError{Path: p, Size: size}
	}
	if trunc {
		// The read limit may cut a character in two: its first bytes
		// would be shown as a replacement character.
		data = trimCutSequence(data)
	}
	return &textFile{t: t, data: data, size: size, trunc: trunc, valid: utf8.Valid(data)}, nil
}

// ReadFile reads lines startLine..endLine (1-based, inclusive) of a file as
// anchored lines. startLine < 1 means 1; endLine < 1 or past the end means
// the last line. At most Limits.MaxReadLines lines and MaxOutputBytes bytes
// are returned; lines longer than MaxLineBytes are cut on a UTF-8 boundary
// (their anchors still hash the whole line). A binary file (a NUL byte in
// its first 8 KiB), or a line to return that is not valid UTF-8, is a
// *NotTextError.
func (f *FS) ReadFile(p string, startLine, endLine int) (*ReadResult, error) {
	tf, err := f.readText(p)
	if err != nil {
		return nil, err
	}
	res := &ReadResult{Path: tf.t.abs, Truncated: tf.trunc}
	var bad *NotTextError
	res.TotalLines, res.Truncated, bad = f.eachLine(string(tf.data), startLine, endLine, tf.trunc, tf.valid, func(n int, full, text string) {
		res.Lines = append(res.Lines, Line{N: n, Hash: LineHash(full), Text: text})
	})
	if bad != nil {
		bad.Path, bad.Size = p, tf.size
		return nil, bad
	}
	return res, nil
}

// ReadTextResult is a read rendered as text.
type ReadTextResult struct {
	// Path is the resolved absolute path.
	Path string
	// Text is what ReadResult.Text returns for the same read.
	Text string
	// First and Last are the numbers of the first and last line returned
	// (0 when none).
	First, Last int
	// TotalLines and Truncated are as in ReadResult.
	TotalLines int
	Truncated  bool
}

// ReadText is ReadFile rendered at once as ReadResult.Text renders it, without
// a Line per line: the fast path of the read_file tool.
func (f *FS) ReadText(p string, startLine, endLine int) (*ReadTextResult, error) {
	tf, err := f.readText(p)
	if err != nil {
		return nil, err
	}
	data := tf.data
	res := &ReadTextResult{Path: tf.t.abs}
	var b strings.Builder
	b.Grow(len(data) + 16*(bytes.Count(data, []byte{'\n'})+1) + len(truncMarker))
	var num [20]byte
	var bad *NotTextError
	res.TotalLines, res.Truncated, bad = f.eachLine(string(data), startLine, endLine, tf.trunc, tf.valid, func(n int, full, text string) {
		if res.First == 0 {
			res.First = n
		}
		res.Last = n
		b.Write(strconv.AppendInt(num[:0], int64(n), 10))
		b.WriteByte(':')
		b.Write(appendLineHash(num[:0], full))
		b.WriteByte('|')
		b.WriteString(text)
		b.WriteByte('\n')
	})
	if bad != nil {
		bad.Path, bad.Size = p, tf.size
		return nil, bad
	}
	if res.Truncated {
		b.WriteString(strings.TrimPrefix(truncMarker, "\n"))
		b.WriteByte('\n')
	}
	res.Text = b.String()
	return res, nil
}

// eachLine calls emit for lines startLine..endLine (1-based, inclusive;
// startLine < 1 means 1, endLine < 1 or past the end means the last line)
// of s (full is the line, shown the line as returned: long lines are cut), until Limits.MaxReadLines lines or
// MaxOutputBytes bytes were emitted. It returns the number of lines in s and
// whether anything was left out or cut (or trunc, the file was cut). Unless
// valid (s is known to be valid UTF-8), each line emitted is checked, and
// bad describes the first that is not valid UTF-8 (Line, Column, Byte).
func (f *FS) eachLine(s string, startLine, endLine int, trunc, valid bool, emit func(n int, full, shown string)) (total int, truncated bool, bad *NotTextError) {
	truncated = trunc
	if s != "" {
		total = strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
	}
	if startLine < 1 {
		startLine = 1
	}
	if endLine < 1 || endLine > total {
		endLine = total
	}
	out, emitted := 0, 0
	rest := s
	for n := 1; n <= endLine; n++ {
		text := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			text, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if n < startLine {
			continue
		}
		if emitted >= f.Limits.MaxReadLines {
			truncated = true
			break
		}
		shown := text
		if len(text) > f.Limits.MaxLineBytes {
			shown = truncUTF8(text, f.Limits.MaxLineBytes) + " [... line truncated]"
			truncated = true
		}
		out += len(shown) + 12
		if out > f.Limits.MaxOutputBytes && emitted > 0 {
			truncated = true
			break
		}
		if !valid && bad == nil && !utf8.ValidString(shown) {
			col, c := invalidAt(shown)
			bad = &NotTextError{Line: n, Column: col, Byte: c}
		}
		emit(n, text, shown)
		emitted++
	}
	return total, truncated, bad
}
