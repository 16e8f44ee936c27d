package sbpl

import (
	"fmt"
	"strings"
)

// node is a parsed SBPL expression: a list, a symbol, a string or a regex
// literal.
type node struct {
	kind  nodeKind
	text  string // symbol name, or a string's value
	items []node // a list's elements
	line  int
}

type nodeKind int

const (
	nList nodeKind = iota
	nSymbol
	nString
	nRegex
	nNumber
)

// Check reports whether profile is a well-formed SBPL profile of the
// subset this package writes: balanced parentheses; strings closed, with
// only \" and \\ as escapes and no control character; regex literals
// #"..." closed, on one line; ";" comments; (version 1) first; then only
// (allow ...) and (deny ...) rules, each naming operations of Operations,
// then optional (with MODIFIER ...) forms (Modifiers), then filters of
// Filters whose arguments are strings, regexes, (param "NAME"), nested
// filters or Keywords.
func Check(profile string) error {
	forms, err := parse(profile)
	if err != nil {
		return err
	}
	if len(forms) == 0 {
		return fmt.Errorf("sbpl: empty profile")
	}
	for i, f := range forms {
		if f.kind != nList || len(f.items) == 0 || f.items[0].kind != nSymbol {
			return fmt.Errorf("sbpl: line %d: a top-level form must be a list starting with a symbol", f.line)
		}
		head := f.items[0].text
		if i == 0 {
			if head != "version" || len(f.items) != 2 || f.items[1].kind != nNumber || f.items[1].text != "1" {
				return fmt.Errorf("sbpl: line %d: the profile must start with (version 1)", f.line)
			}
			continue
		}
		switch head {
		case "allow", "deny":
			if err := checkRule(f); err != nil {
				return err
			}
		default:
			return fmt.Errorf("sbpl: line %d: unknown top-level form %q", f.line, head)
		}
	}
	return nil
}

func checkRule(f node) error {
	i := 1
	for ; i < len(f.items) && f.items[i].kind == nSymbol; i++ {
		if !Operations[Op(f.items[i].text)] {
			return fmt.Errorf("sbpl: line %d: unknown operation %q", f.line, f.items[i].text)
		}
	}
	if i == 1 {
		return fmt.Errorf("sbpl: line %d: %s without an operation", f.line, f.items[0].text)
	}
	for ; i < len(f.items); i++ {
		it := f.items[i]
		if it.kind != nList || len(it.items) == 0 || it.items[0].kind != nSymbol {
			return fmt.Errorf("sbpl: line %d: a rule's filters must be lists", it.line)
		}
		if it.items[0].text == "with" {
			if err := checkWith(it); err != nil {
				return err
			}
			continue
		}
		if err := checkFilter(it); err != nil {
			return err
		}
	}
	return nil
}

func checkWith(w node) error {
	if len(w.items) < 2 || w.items[1].kind != nSymbol || !Modifiers[w.items[1].text] {
		return fmt.Errorf("sbpl: line %d: (with ...) needs a known modifier", w.line)
	}
	if w.items[1].text == "message" {
		if len(w.items) != 3 || w.items[2].kind != nString {
			return fmt.Errorf("sbpl: line %d: (with message STRING)", w.line)
		}
	} else if len(w.items) != 2 {
		return fmt.Errorf("sbpl: line %d: (with %s) takes no argument", w.line, w.items[1].text)
	}
	return nil
}

func checkFilter(f node) error {
	name := f.items[0].text
	if !Filters[name] {
		return fmt.Errorf("sbpl: line %d: unknown filter %q", f.line, name)
	}
	args := f.items[1:]
	if len(args) == 0 {
		return fmt.Errorf("sbpl: line %d: (%s) without an argument", f.line, name)
	}
	switch name {
	case "param":
		if len(args) != 1 || args[0].kind != nString || !validName(args[0].text) {
			return fmt.Errorf("sbpl: line %d: (param \"NAME\") needs one valid name", f.line)
		}
		return nil
	case "regex":
		for _, a := range args {
			if a.kind != nRegex && a.kind != nString {
				return fmt.Errorf("sbpl: line %d: regex takes regex literals", f.line)
			}
		}
		return nil
	}
	for _, a := range args {
		switch a.kind {
		case nString, nRegex, nNumber:
		case nSymbol:
			if !Keywords[a.text] {
				return fmt.Errorf("sbpl: line %d: unknown keyword %q in (%s ...)", a.line, a.text, name)
			}
		case nList:
			if len(a.items) == 0 || a.items[0].kind != nSymbol {
				return fmt.Errorf("sbpl: line %d: empty or headless list in (%s ...)", a.line, name)
			}
			if err := checkFilter(a); err != nil {
				return err
			}
		}
	}
	return nil
}

// parse reads the forms of src.
func parse(src string) ([]node, error) {
	var stack [][]node
	var lines []int
	var top []node
	line := 1
	push := func(n node) {
		if len(stack) == 0 {
			top = append(top, n)
			return
		}
		stack[len(stack)-1] = append(stack[len(stack)-1], n)
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == ';':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '(':
			stack = append(stack, nil)
			lines = append(lines, line)
			i++
		case c == ')':
			if len(stack) == 0 {
				return nil, fmt.Errorf("sbpl: line %d: unbalanced ')'", line)
			}
			n := node{kind: nList, items: stack[len(stack)-1], line: lines[len(lines)-1]}
			stack, lines = stack[:len(stack)-1], lines[:len(lines)-1]
			push(n)
			i++
		case c == '"':
			s, n, err := readString(src[i:], line)
			if err != nil {
				return nil, err
			}
			push(node{kind: nString, text: s, line: line})
			i += n
		case c == '#' && i+1 < len(src) && src[i+1] == '"':
			end := strings.IndexByte(src[i+2:], '"')
			if end < 0 {
				return nil, fmt.Errorf("sbpl: line %d: regex literal not closed", line)
			}
			re := src[i+2 : i+2+end]
			if hasControl(re) {
				return nil, fmt.Errorf("sbpl: line %d: control character in a regex literal", line)
			}
			push(node{kind: nRegex, text: re, line: line})
			i += end + 3
		case c < 0x20 || c == 0x7f:
			return nil, fmt.Errorf("sbpl: line %d: control character 0x%02x", line, c)
		default:
			j := i
			for j < len(src) && !strings.ContainsRune(" \t\r\n();\"", rune(src[j])) {
				j++
			}
			tok := src[i:j]
			if !validAtom(tok) {
				return nil, fmt.Errorf("sbpl: line %d: bad token %q", line, tok)
			}
			k := nSymbol
			if tok[0] >= '0' && tok[0] <= '9' {
				k = nNumber
			}
			push(node{kind: k, text: tok, line: line})
			i = j
		}
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("sbpl: line %d: unbalanced '(' (%d not closed)", lines[len(lines)-1], len(stack))
	}
	return top, nil
}

// validAtom reports whether tok is a symbol (lower-case letters, digits,
// '-', '*') or a number.
func validAtom(tok string) bool {
	if tok == "" {
		return false
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '*' {
			return false
		}
	}
	return true
}

// readString reads the string literal at the start of s (which starts with
// '"'), returning its value and its length in s.
func readString(s string, line int) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), i + 1, nil
		case c == '\\':
			if i+1 >= len(s) || (s[i+1] != '"' && s[i+1] != '\\') {
				return "", 0, fmt.Errorf("sbpl: line %d: unknown escape in a string", line)
			}
			i++
			b.WriteByte(s[i])
		case c < 0x20 || c == 0x7f:
			return "", 0, fmt.Errorf("sbpl: line %d: control character in a string", line)
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("sbpl: line %d: string not closed", line)
}
