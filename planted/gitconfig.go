package planted

import (
	"bytes"
	"strings"
)

// configEntry is one key of a git configuration file, with where it is.
type configEntry struct {
	// Section is the section name, lower-cased.
	Section string
	// Sub is the subsection: case-sensitive in the quoted form, lower-cased
	// in the legacy [section.sub] form.
	Sub string
	// HasSub is set when the section has a subsection.
	HasSub bool
	// Name is the variable name, lower-cased.
	Name string
	// Value is the decoded value ("" for a bare key).
	Value string
	// Bare is set for a key without "=" (boolean true).
	Bare bool
	// Line and EndLine are the first and last line (0-based, inclusive):
	// a value continued with a backslash spans several lines.
	Line, EndLine int
	// Col is where the key starts in Line when a section header precedes
	// it on the same line, else 0.
	Col int
}

// Key returns the entry's dotted name: section[.sub].name.
func (e configEntry) Key() string {
	if e.HasSub {
		return e.Section + "." + e.Sub + "." + e.Name
	}
	return e.Section + "." + e.Name
}

// tuple identifies the entry's meaning, for comparing two versions of a file.
func (e configEntry) tuple() string {
	b := "0"
	if e.Bare {
		b = "1"
	}
	return strings.Join([]string{e.Section, e.Sub, e.Name, b, e.Value}, "\x00")
}

// splitLines splits data after each "\n", keeping the terminators.
func splitLines(data []byte) [][]byte {
	if len(data) == 0 {
		return nil
	}
	return bytes.SplitAfter(data, []byte("\n"))
}

// trimEOL drops a line's "\n" or "\r\n".
func trimEOL(l []byte) []byte {
	l = bytes.TrimSuffix(l, []byte("\n"))
	return bytes.TrimSuffix(l, []byte("\r"))
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' }

func skipSpace(l []byte, p int) int {
	for p < len(l) && isSpace(l[p]) {
		p++
	}
	return p
}

// parseConfig parses a git configuration file the way git reads it
// (git-config(1), "CONFIGURATION FILE"), tolerantly: a line git would
// reject is skipped (git then refuses the whole file, so nothing in it
// runs). Sections are [section], [section "sub"] and the legacy
// [section.sub]; a key may follow a header on the same line; values may be
// quoted, contain \n \t \b \" \\ escapes, end at an unquoted # or ;, and
// continue on the next line after a final backslash. Lines may end in
// "\r\n".
func parseConfig(data []byte) []configEntry {
	// Git skips a UTF-8 byte order mark at the start of the file.
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		data = append(bytes.Repeat([]byte(" "), 3), data[3:]...)
	}
	lines := splitLines(data)
	var out []configEntry
	sec, sub, hasSub, valid := "", "", false, true
	for i := 0; i < len(lines); i++ {
		l := trimEOL(lines[i])
		p := skipSpace(l, 0)
		col := 0
		// Several headers may follow one another on a line; the last
		// one counts, as in git.
		for p < len(l) && l[p] == '[' {
			s, sb, hs, end, ok := parseHeader(l, p)
			valid = ok
			if !ok {
				break
			}
			sec, sub, hasSub = s, sb, hs
			p = skipSpace(l, end)
			col = p
		}
		if p >= len(l) || l[p] == '#' || l[p] == ';' || !valid || !isAlpha(l[p]) {
			continue
		}
		start := p
		for p < len(l) && (isAlnum(l[p]) || l[p] == '-') {
			p++
		}
		e := configEntry{Section: sec, Sub: sub, HasSub: hasSub, Name: strings.ToLower(string(l[start:p])),
			Line: i, EndLine: i, Col: col}
		p = skipSpace(l, p)
		switch {
		case p >= len(l) || l[p] == '#' || l[p] == ';':
			e.Bare = true
		case l[p] == '=':
			e.Value, e.EndLine = parseValue(lines, i, p+1)
			i = e.EndLine
		default:
			continue // git: "bad config line"
		}
		out = append(out, e)
	}
	return out
}

// parseHeader parses a section header starting at l[p] == '['. It returns
// the section (lower-cased), the subsection, whether there is one, and the
// index just after ']'.
func parseHeader(l []byte, p int) (sec, sub string, hasSub bool, end int, ok bool) {
	p++
	start := p
	for p < len(l) && (isAlnum(l[p]) || l[p] == '-' || l[p] == '.') {
		p++
	}
	name := string(l[start:p])
	if name == "" {
		return "", "", false, 0, false
	}
	if p < len(l) && l[p] == ']' {
		// [section] or the legacy [section.sub], which git lower-cases.
		name = strings.ToLower(name)
		if s, sb, found := strings.Cut(name, "."); found {
			return s, sb, true, p + 1, true
		}
		return name, "", false, p + 1, true
	}
	if p >= len(l) || !isSpace(l[p]) {
		return "", "", false, 0, false
	}
	p = skipSpace(l, p)
	if p >= len(l) || l[p] != '"' {
		return "", "", false, 0, false
	}
	p++
	var b strings.Builder
	for ; p < len(l) && l[p] != '"'; p++ {
		if l[p] == '\\' && p+1 < len(l) {
			p++
		}
		b.WriteByte(l[p])
	}
	if p+1 >= len(l) || l[p] != '"' || l[p+1] != ']' {
		return "", "", false, 0, false
	}
	return strings.ToLower(name), b.String(), true, p + 2, true
}

// parseValue decodes a value that starts at lines[i][p], following
// backslash continuations; it returns the value and its last line.
func parseValue(lines [][]byte, i, p int) (string, int) {
	var b []byte
	inQ := false
	spaces := 0
	l := trimEOL(lines[i])
	for {
		if p >= len(l) {
			return string(b), i // end of line ends the value (an open quote too)
		}
		c := l[p]
		p++
		switch {
		case c == '\\':
			if p >= len(l) {
				if i+1 >= len(lines) {
					return string(b), i
				}
				i++
				l, p = trimEOL(lines[i]), 0
				continue
			}
			c = l[p]
			p++
			switch c {
			case 'n':
				c = '\n'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			}
		case c == '"':
			inQ = !inQ
			continue
		case !inQ && (c == '#' || c == ';'):
			return string(b), i
		case !inQ && isSpace(c):
			if len(b) > 0 {
				spaces++
			}
			continue
		}
		for ; spaces > 0; spaces-- {
			b = append(b, ' ')
		}
		b = append(b, c)
	}
}

// disarmPrefix starts every line that cordon commented out.
const disarmPrefix = "# cordon-disarmed: "

// commentOut returns data with the lines of entries turned into comments
// ("# cordon-disarmed: " + the original line, continuation lines too),
// everything else byte for byte. A key that follows a section header on
// the same line is moved to a line of its own first, so the header stays.
func commentOut(data []byte, entries []configEntry) []byte {
	mark := map[int]int{} // line -> column where the comment starts
	for _, e := range entries {
		for l := e.Line; l <= e.EndLine; l++ {
			if _, ok := mark[l]; !ok {
				mark[l] = 0
			}
		}
		mark[e.Line] = e.Col
	}
	var out bytes.Buffer
	out.Grow(len(data) + len(mark)*len(disarmPrefix))
	for i, ln := range splitLines(data) {
		col, ok := mark[i]
		if !ok {
			out.Write(ln)
			continue
		}
		if col > 0 && col < len(ln) {
			eol := "\n"
			if bytes.HasSuffix(ln, []byte("\r\n")) {
				eol = "\r\n"
			}
			out.Write(ln[:col])
			out.WriteString(eol)
			ln = ln[col:]
		}
		out.WriteString(disarmPrefix)
		out.Write(ln)
	}
	return out.Bytes()
}
