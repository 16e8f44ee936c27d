package sbpl

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// regexMeta are the characters escaped with '\' in a regex GlobRegex
// writes: the metacharacters of POSIX extended regular expressions, which
// are also those of Go's regexp (the tests' stand-in for Seatbelt's
// engine), so "\X" means the literal X in both.
const regexMeta = `.[]()*+?{}|^$\`

// GlobRegex returns a regex, for Regex, that matches an absolute path
// when the glob pattern (doublestar syntax, slash-separated, as in a
// policy's deny or protected entries) matches its end below some
// directory: "**/.env" gives `/\.env$`. With below, the regex also
// matches everything below a match: `/\.env(/|$)`.
//
// The regex is built only from pattern; every character of the pattern
// that is not a wildcard is escaped. It matches a superset of the glob
// (see the package doc): a pattern that does not start with "**/" matches
// at any depth, "?" becomes one or more non-'/' characters and a bracket
// class one or more characters, so that a multi-byte character matches
// whether the engine counts bytes or characters. A '"' or control
// character of the pattern, which a regex literal cannot hold, becomes
// "[^/]" (any one character but '/').
func GlobRegex(pattern string, below bool) (string, error) {
	if pattern == "" || !utf8.ValidString(pattern) {
		return "", fmt.Errorf("sbpl: glob %q is empty or not UTF-8", pattern)
	}
	p := pattern
	for strings.HasPrefix(p, "**/") {
		p = p[3:]
	}
	p = strings.TrimRight(p, "/")
	if p == "" || p == "**" {
		return "/.*", nil
	}
	body, rest, err := globBody(p, 0)
	if err != nil {
		return "", fmt.Errorf("sbpl: glob %q: %w", pattern, err)
	}
	if rest != len(p) {
		return "", fmt.Errorf("sbpl: glob %q: unmatched '}'", pattern)
	}
	end := "$"
	if below {
		end = "(/|$)"
	}
	return "/" + body + end, nil
}

// globBody translates p from i up to the end, or, inside braces (depth >
// 0), up to an unescaped ',' or '}' at this depth; it returns the regex and
// where it stopped.
func globBody(p string, depth int) (string, int, error) {
	var b strings.Builder
	i := 0
	for i < len(p) {
		c := p[i]
		switch {
		case depth > 0 && (c == ',' || c == '}'):
			return b.String(), i, nil
		case c == '}':
			return "", 0, fmt.Errorf("unmatched '}'")
		case c == '\\':
			if i+1 >= len(p) {
				return "", 0, fmt.Errorf("trailing '\\'")
			}
			r, n := utf8.DecodeRuneInString(p[i+1:])
			writeLiteral(&b, string(r))
			i += 1 + n
		case c == '*' && strings.HasPrefix(p[i:], "**"):
			startSeg := i == 0 || p[i-1] == '/'
			endSeg := i+2 == len(p) || p[i+2] == '/' || depth > 0 && (p[i+2] == ',' || p[i+2] == '}')
			switch {
			case startSeg && i+2 < len(p) && p[i+2] == '/':
				b.WriteString("(.*/)?") // zero or more directories
				i += 3
			case startSeg && endSeg:
				b.WriteString(".*") // a trailing "/**": everything below
				i += 2
			default:
				b.WriteString("[^/]*")
				i += 2
			}
		case c == '*':
			b.WriteString("[^/]*")
			i++
		case c == '?':
			b.WriteString("[^/]+")
			i++
		case c == '[':
			j := classEnd(p, i)
			if j < 0 {
				return "", 0, fmt.Errorf("unclosed '['")
			}
			b.WriteString(".+")
			i = j + 1
		case c == '{':
			var alts []string
			j := i + 1
			for {
				alt, n, err := globBody(p[j:], depth+1)
				if err != nil {
					return "", 0, err
				}
				alts = append(alts, alt)
				j += n
				if j >= len(p) {
					return "", 0, fmt.Errorf("unclosed '{'")
				}
				j++
				if p[j-1] == '}' {
					break
				}
			}
			b.WriteString("(" + strings.Join(alts, "|") + ")")
			i = j
		case c == '/' && strings.HasPrefix(p[i:], "/**") && (i+3 == len(p) || depth > 0 && (p[i+3] == ',' || p[i+3] == '}')):
			// "a/**" matches a itself too.
			b.WriteString("(/.*)?")
			i += 3
		default:
			r, n := utf8.DecodeRuneInString(p[i:])
			writeLiteral(&b, string(r))
			i += n
		}
	}
	return b.String(), i, nil
}

// classEnd returns the index of the ']' closing the class that opens at
// p[i], or -1.
func classEnd(p string, i int) int {
	j := i + 1
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++
	}
	for ; j < len(p); j++ {
		switch p[j] {
		case '\\':
			j++
		case ']':
			return j
		}
	}
	return -1
}

// writeLiteral writes s, one character of the pattern, as a regex that
// matches exactly it.
func writeLiteral(b *strings.Builder, s string) {
	switch {
	case len(s) == 1 && (s[0] < 0x20 || s[0] == 0x7f || s[0] == '"'):
		b.WriteString("[^/]")
	case len(s) == 1 && strings.ContainsRune(regexMeta, rune(s[0])):
		b.WriteByte('\\')
		b.WriteString(s)
	default:
		b.WriteString(s)
	}
}
