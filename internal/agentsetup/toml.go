package agentsetup

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

func jsonNumber(n int) json.Number { return json.Number(fmt.Sprint(n)) }

// The marker lines of the block setup appends to Codex's config.toml.
const (
	tomlBegin = "# cordon setup codex: begin (cordon setup codex --undo removes this block)"
	tomlEnd   = "# cordon setup codex: end"
)

// tomlCordonTable finds a [mcp_servers.cordon] table, or a dotted key
// defining it, that the block did not write.
var tomlCordonTable = regexp.MustCompile(`(?m)^\s*(\[\s*mcp_servers\s*\.\s*"?cordon"?\s*\]|mcp_servers\s*\.\s*"?cordon"?\s*[.=])`)

// tomlMCPEdit registers cordon's MCP server in Codex's config.toml
// ([mcp_servers.cordon]) as one block between marker comments, appended
// at the end: TOML allows a table there after any content, so the rest of
// the file (its comments, its order) is never re-encoded. Undo removes
// the block. args are the server's arguments (mcp, and for a project its
// absolute workspace: Codex does not start servers in the project).
func tomlMCPEdit(path, cordon string, args []string) edit {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = tomlString(a)
	}
	block := tomlBegin + "\n[mcp_servers.cordon]\ncommand = " + tomlString(cordon) + "\nargs = [" + strings.Join(quoted, ", ") + "]\n" + tomlEnd + "\n"
	apply := func(old []byte) ([]byte, bool, error) {
		s, err := tomlText(old)
		if err != nil {
			return nil, false, err
		}
		before, cur, after, found, err := cutBlock(s)
		if err != nil {
			return nil, false, err
		}
		if found {
			if cur == block {
				return old, false, nil
			}
			return []byte(before + block + after), true, nil
		}
		if tomlCordonTable.MatchString(s) {
			return nil, false, fmt.Errorf("it already defines mcp_servers.cordon, which setup did not write; rename or remove it")
		}
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		if s != "" {
			s += "\n"
		}
		return []byte(s + block), true, nil
	}
	undo := func(old []byte) ([]byte, bool, error) {
		s, err := tomlText(old)
		if err != nil {
			return nil, false, err
		}
		before, _, after, found, err := cutBlock(s)
		if err != nil || !found {
			return old, false, err
		}
		// The blank line setup put before the block goes with it.
		if after == "" {
			before = strings.TrimSuffix(before, "\n\n") + "\n"
			if strings.TrimSpace(before) == "" {
				before = ""
			}
		}
		out := before + after
		if out == "" {
			return nil, true, nil
		}
		return []byte(out), true, nil
	}
	return edit{path: path, what: "the MCP server (cordon mcp)", apply: apply, undo: undo}
}

// tomlText is a config.toml's text, refused when it is not UTF-8 (TOML
// requires it).
func tomlText(b []byte) (string, error) {
	if !utf8.Valid(b) {
		return "", fmt.Errorf("not valid TOML (not UTF-8)")
	}
	return string(b), nil
}

// cutBlock splits s around setup's block, if any.
func cutBlock(s string) (before, block, after string, found bool, err error) {
	i := strings.Index(s, tomlBegin+"\n")
	if i < 0 {
		if strings.Contains(s, tomlEnd) {
			return "", "", "", false, fmt.Errorf("cordon's block has an end marker without its begin marker")
		}
		return s, "", "", false, nil
	}
	if i > 0 && s[i-1] != '\n' {
		return "", "", "", false, fmt.Errorf("cordon's begin marker is not at the start of a line")
	}
	j := strings.Index(s[i:], "\n"+tomlEnd)
	if j < 0 {
		return "", "", "", false, fmt.Errorf("cordon's block has a begin marker without its end marker")
	}
	end := i + j + 1 + len(tomlEnd)
	if end < len(s) && s[end] == '\n' {
		end++
	}
	return s[:i], s[i:end], s[end:], true, nil
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
