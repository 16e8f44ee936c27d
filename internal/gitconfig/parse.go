// Package gitconfig reads git's configuration as git reads it: the one
// parser of git config files in cordon (git-config(1), "CONFIGURATION
// FILE"), which keeps where each entry is so that a key can be commented
// out in place, and Locate, which says where git will look for hooks and
// which config files it will read for a repository (core.hooksPath,
// include.path, includeIf.*.path), from the files alone.
//
// Edit is its writer: it deletes the lines of entries and appends new ones
// (the bytes to write; it writes no file itself).
//
// It never runs git, never writes a file, and never follows an include outside
// the bounds git itself keeps (a depth of 10). What it cannot read counts
// as absent; callers that protect files therefore protect what they were
// told and check the rest after a run.
package gitconfig

import (
	"bytes"
	"fmt"
	"strings"
)

// Entry is one key of a git configuration file, with where it is.
type Entry struct {
	// Section is the section name, lower-cased.
	Section string
	// Sub is the subsection: case-sensitive in the quoted form
	// ([section "Sub"]), lower-cased in the legacy [section.sub] form.
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

// Key returns the entry's dotted name as git prints it:
// section[.sub].name.
func (e Entry) Key() string {
	if e.Section == "" && !e.HasSub {
		return e.Name // a key before any section header
	}
	if e.HasSub {
		return e.Section + "." + e.Sub + "." + e.Name
	}
	return e.Section + "." + e.Name
}

// Is reports whether e is the key section.name (no subsection); section
// and name compare without case, as git compares them.
func (e Entry) Is(section, name string) bool {
	return !e.HasSub && e.Section == strings.ToLower(section) && e.Name == strings.ToLower(name)
}

// ValueOrTrue is the value as a program reading the key sees it: "true"
// for a bare key.
func (e Entry) ValueOrTrue() string {
	if e.Bare {
		return "true"
	}
	return e.Value
}

// Tuple identifies the entry's meaning, for comparing two versions of a
// file: the same key with the same value, wherever it is.
func (e Entry) Tuple() string {
	b := "0"
	if e.Bare {
		b = "1"
	}
	return strings.Join([]string{e.Section, e.Sub, e.Name, b, e.Value}, "\x00")
}

// ParseError is a line git refuses ("bad config line N"): git then
// refuses the whole file, and runs nothing it names.
type ParseError struct {
	// Line is the line, 1-based as git counts it.
	Line int
}

func (e *ParseError) Error() string { return fmt.Sprintf("bad config line %d", e.Line) }

// parser is the state of one Parse: git's get_next_char over data.
type parser struct {
	data []byte
	pos  int
	line int // 0-based line of the character last read
	eof  bool
	// nl: the character last read was a real end of line.
	nl bool
	// lineStart is the offset where the current line starts.
	lineStart int
}

// next returns the next character as git's get_next_char does: "\r\n"
// is "\n", and the end of the data is a "\n" that sets eof.
func (p *parser) next() byte {
	if p.pos >= len(p.data) {
		p.eof, p.nl = true, false
		return '\n'
	}
	c := p.data[p.pos]
	p.pos++
	if c == '\r' && p.pos < len(p.data) && p.data[p.pos] == '\n' {
		c = '\n'
		p.pos++
	}
	p.nl = c == '\n'
	if p.nl {
		p.line++
		p.lineStart = p.pos
	}
	return c
}

// bad is the error for the line being read: git counts a line that ended
// where it failed as the line before.
func (p *parser) bad() error {
	if p.nl {
		return &ParseError{Line: p.line}
	}
	return &ParseError{Line: p.line + 1}
}

// isSpace is git's isspace: space, tab, "\n" and "\r".
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isKeyChar(c byte) bool {
	return isAlpha(c) || c >= '0' && c <= '9' || c == '-'
}
func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Parse reads a git configuration file as git does (config.c,
// git_parse_source): a UTF-8 byte order mark at the start is skipped;
// headers are [section], [section "sub"] (with \" and \\ escapes) and the
// legacy [section.sub], which is lower-cased; several headers and a key
// may share a line; a key without "=" is true; values may be quoted,
// hold the escapes \n \t \b \" \\, end at an unquoted # or ;, and
// continue on the next line after a final backslash; whitespace outside
// quotes is trimmed at both ends and each inner whitespace character is
// one space (git 2.39); lines may end in "\r\n", and the last may lack
// its newline. Section and key names are lower-cased. A line git refuses
// ends the parse: Parse returns the entries before it and a *ParseError
// (git then refuses the whole file).
func Parse(data []byte) ([]Entry, error) {
	return parse(data, false)
}

// ParseAll is Parse going on past the lines git refuses, as if each were
// deleted (the keys below a header git refuses are left out): what a
// file would set once its bad lines are fixed. It serves the check for
// planted keys, where a key hidden behind a bad line is still planted.
func ParseAll(data []byte) []Entry {
	es, _ := parse(data, true)
	return es
}

func parse(data []byte, all bool) ([]Entry, error) {
	p := &parser{data: data}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		p.pos, p.lineStart = 3, 0
	}
	var out []Entry
	var sec []byte // the current section[.sub], as git builds it
	comment := false
	headerOnLine := -1 // the line where the last header ended
	badHeader := false // all: below a header git refuses
	var first error
	// fail records a bad line: the end of the parse, or with all the
	// rest of the line skipped.
	fail := func() bool {
		if first == nil {
			first = p.bad()
		}
		if !all {
			return true
		}
		if !p.nl {
			for c := p.next(); c != '\n'; c = p.next() {
			}
		}
		comment = false
		return p.eof
	}
	for {
		c := p.next()
		if c == '\n' {
			if p.eof {
				return out, first
			}
			comment = false
			continue
		}
		if comment || isSpace(c) {
			continue
		}
		if c == '#' || c == ';' {
			comment = true
			continue
		}
		if c == '[' {
			name, ok := p.header()
			if !ok || len(name) == 0 {
				badHeader = true
				if fail() {
					return out, first
				}
				continue
			}
			sec, headerOnLine, badHeader = name, p.line, false
			continue
		}
		if !isAlpha(c) {
			if fail() {
				return out, first
			}
			continue
		}
		e := Entry{Line: p.line}
		if headerOnLine == p.line {
			e.Col = p.pos - 1 - p.lineStart
		}
		name := []byte{lower(c)}
		for {
			c = p.next()
			if p.eof || !isKeyChar(c) {
				break
			}
			name = append(name, lower(c))
		}
		for c == ' ' || c == '\t' {
			c = p.next()
		}
		switch {
		case c == '\n':
			e.Bare = true
		case c != '=':
			if fail() {
				return out, first
			}
			continue
		default:
			v, ok := p.value()
			if !ok {
				if fail() {
					return out, first
				}
				continue
			}
			e.Value = v
		}
		// The "\n" that ended the key moved the line on, unless it
		// was the end of the data.
		e.EndLine = p.line - 1
		if p.eof {
			e.EndLine = p.line
		}
		e.Name = string(name)
		s := string(sec)
		if i := strings.IndexByte(s, '.'); i >= 0 {
			e.Section, e.Sub, e.HasSub = s[:i], s[i+1:], true
		} else {
			e.Section = s
		}
		e = asCString(e)
		if !badHeader {
			out = append(out, e)
		}
		comment = false
		if p.eof {
			return out, first
		}
	}
}

// header reads a section header after its "[" (git's get_base_var and
// get_extended_base_var): the section, with ".sub" appended for a
// subsection.
func (p *parser) header() (name []byte, ok bool) {
	for {
		c := p.next()
		if p.eof {
			return nil, false
		}
		if c == ']' {
			return name, true
		}
		if isSpace(c) {
			return p.subsection(name, c)
		}
		if !isKeyChar(c) && c != '.' {
			return nil, false
		}
		name = append(name, lower(c))
	}
}

// subsection reads the rest of [section "sub"] after the space c.
func (p *parser) subsection(name []byte, c byte) ([]byte, bool) {
	for {
		if c == '\n' {
			return nil, false
		}
		if c = p.next(); !isSpace(c) {
			break
		}
	}
	if c != '"' {
		return nil, false
	}
	name = append(name, '.')
	for {
		c := p.next()
		if c == '\n' {
			return nil, false
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c = p.next(); c == '\n' {
				return nil, false
			}
		}
		name = append(name, c)
	}
	return name, p.next() == ']'
}

// asCString is e as git's callbacks see it: git builds the key and the
// value with their NUL bytes and hands them on as C strings, so a NUL in
// a subsection ends the whole key there (`[remote "x.uploadpack\x00"]
// url = CMD` is read as remote.x.uploadpack = CMD), and one in a value
// ends the value. The key is then split again as git splits one: the
// section up to its first dot, the name after its last.
func asCString(e Entry) Entry {
	if i := strings.IndexByte(e.Value, 0); i >= 0 {
		e.Value = e.Value[:i]
	}
	if strings.IndexByte(e.Sub, 0) < 0 {
		return e
	}
	key := e.Section + "." + e.Sub + "." + e.Name
	key = key[:strings.IndexByte(key, 0)]
	first, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	switch {
	case first < 0:
		e.Section, e.Sub, e.HasSub, e.Name = "", "", false, strings.ToLower(key)
	case first == last:
		e.Section, e.Sub, e.HasSub, e.Name = key[:first], "", false, strings.ToLower(key[last+1:])
	default:
		e.Section, e.Sub, e.HasSub, e.Name = key[:first], key[first+1:last], true, strings.ToLower(key[last+1:])
	}
	return e
}

// value reads a value after its "=" (git's parse_value, 2.39).
func (p *parser) value() (string, bool) {
	var b []byte
	quote, comment := false, false
	space := 0
	for {
		c := p.next()
		if c == '\n' {
			if quote {
				return "", false
			}
			return string(b), true
		}
		if comment {
			continue
		}
		if isSpace(c) && !quote {
			if len(b) > 0 {
				space++
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		for ; space > 0; space-- {
			b = append(b, ' ')
		}
		if c == '\\' {
			switch c = p.next(); c {
			case '\n':
				if p.eof {
					return string(b), true
				}
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", false
			}
			b = append(b, c)
			continue
		}
		if c == '"' {
			quote = !quote
			continue
		}
		b = append(b, c)
	}
}

// DisarmPrefix starts every line that CommentOut turned into a comment.
const DisarmPrefix = "# cordon-disarmed: "

// CommentOut returns data with the lines of entries turned into comments
// (DisarmPrefix + the original line, continuation lines too), everything
// else byte for byte. A key that follows a section header on the same
// line is moved to a line of its own first, so the header stays.
func CommentOut(data []byte, entries []Entry) []byte {
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
	out.Grow(len(data) + len(mark)*len(DisarmPrefix))
	for i, ln := range bytes.SplitAfter(data, []byte("\n")) {
		if len(ln) == 0 {
			continue
		}
		col, ok := mark[i]
		if !ok {
			out.Write(ln)
			continue
		}
		if col > 0 && col < len(ln) {
			eol := "\n"
			if bytes.HasSuffix(ln[:col], []byte("\r")) {
				eol = "\r\n"
			} else if bytes.HasSuffix(ln, []byte("\r\n")) {
				eol = "\r\n"
			}
			out.Write(ln[:col])
			out.WriteString(eol)
			ln = ln[col:]
		}
		out.WriteString(DisarmPrefix)
		out.Write(ln)
	}
	return out.Bytes()
}
