package gitrepo

import (
	"bytes"
	"strings"
)

// configValue returns the last value of section.key in a git config file
// (sections without a subsection; names compared as git does, without
// case). It reads what git writes for core.worktree: "key = value", the
// value bare or in double quotes, a comment after it. What it cannot read
// counts as unset: the caller then trusts nothing.
func configValue(data []byte, section, key string) (string, bool) {
	var val string
	found, in := false, false
	for _, line := range bytes.Split(data, []byte("\n")) {
		l := strings.TrimSpace(strings.TrimSuffix(string(line), "\r"))
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		if l[0] == '[' {
			end := strings.IndexByte(l, ']')
			if end < 0 {
				in = false
				continue
			}
			in = strings.EqualFold(strings.TrimSpace(l[1:end]), section)
			l = strings.TrimSpace(l[end+1:])
			if l == "" {
				continue
			}
		}
		if !in {
			continue
		}
		name, value, hasEq := strings.Cut(l, "=")
		if !strings.EqualFold(strings.TrimSpace(name), key) || !hasEq {
			continue
		}
		if v, ok := configString(strings.TrimSpace(value)); ok {
			val, found = v, true
		} else {
			val, found = "", false
		}
	}
	return val, found
}

// configString decodes a config value: bare up to a comment, or quoted
// with \" and \\ escapes.
func configString(v string) (string, bool) {
	var out strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v) && (v[i+1] == '"' || v[i+1] == '\\'):
			i++
			out.WriteByte(v[i])
		case c == '\\':
			return "", false // other escapes and continuations: not read
		case (c == '#' || c == ';') && !quoted:
			return strings.TrimSpace(out.String()), !quoted
		default:
			out.WriteByte(c)
		}
	}
	if quoted {
		return "", false
	}
	return strings.TrimSpace(out.String()), true
}
