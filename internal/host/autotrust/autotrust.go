// Package autotrust tells which of the host's tools would trust a new
// project file without asking the user first, because of the user's own
// settings: direnv's whitelist (`[whitelist] prefix` and `exact` in
// direnv.toml) loads a new .envrc at once, and Claude Code's
// enableAllProjectMcpServers or enabledMcpjsonServers (in any of its
// settings files, or a project's entry in ~/.claude.json) starts the
// servers a new .mcp.json names without a prompt. The names of
// policy.AskFirst get no placeholder because their tool asks first; where
// this package says it does not, the planner keeps the placeholder.
//
// It reads the host's files and decides nothing else. When a file it
// needs cannot be read or parsed, it answers "trusts" (fail closed: a
// placeholder costs an empty entry in the agent's listing, a wrong "asks
// first" would let a planted file run). direnv.toml is parsed with
// BurntSushi/toml; Claude's JSON files are only searched for the two keys
// with a true or non-empty value (~/.claude.json holds every project's
// history and grows to megabytes: parsing it on every run would cost
// more than the whole sandbox), which can only err toward "trusts".
package autotrust

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/cordon-sandbox/cordon/internal/config"
)

// maxClaudeJSON bounds the read of ~/.claude.json; a larger one counts as
// trusting.
const maxClaudeJSON = 64 << 20

// Host is what the trust of the host's tools depends on.
type Host struct {
	// Home is the user's home directory.
	Home string
	// Getenv looks up a host variable (XDG_CONFIG_HOME, DIRENV_CONFIG,
	// CLAUDE_CONFIG_DIR); nil means none is set.
	Getenv func(string) (string, bool)
}

func (h Host) getenv(k string) string {
	if h.Getenv == nil {
		return ""
	}
	v, _ := h.Getenv(k)
	return v
}

// Trusts returns, for each name of names (".envrc", ".mcp.json") whose
// tool would trust a new one at the top of root without asking, why (one
// phrase naming the setting and its file); a name not in the result is
// asked about first.
func Trusts(h Host, root string, names []string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		var why string
		switch n {
		case ".envrc":
			why = h.direnv(root)
		case ".mcp.json":
			why = h.claude(root)
		}
		if why != "" {
			out[n] = why
		}
	}
	return out
}

// direnv says why direnv would load a new root/.envrc without `direnv
// allow`, or "".
func (h Host) direnv(root string) string {
	dir := h.getenv("DIRENV_CONFIG")
	if dir == "" {
		xdg := h.getenv("XDG_CONFIG_HOME")
		if !filepath.IsAbs(xdg) {
			xdg = filepath.Join(h.Home, ".config")
		}
		dir = filepath.Join(xdg, "direnv")
	}
	for _, name := range []string{"direnv.toml", "config.toml"} {
		file := filepath.Join(dir, name)
		data, err := config.ReadFile(file, config.ReadOptions{})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "direnv's " + file + " could not be read, so its whitelist is not known"
		}
		var c struct {
			Whitelist struct {
				Prefix []string `toml:"prefix"`
				Exact  []string `toml:"exact"`
			} `toml:"whitelist"`
		}
		if _, err := toml.Decode(string(data), &c); err != nil {
			return "direnv's " + file + " could not be parsed, so its whitelist is not known"
		}
		for _, p := range c.Whitelist.Prefix {
			if p = h.expand(p); p != "" && within(root, p) {
				return "direnv loads it without `direnv allow`: [whitelist] prefix " + p + " in " + file
			}
		}
		for _, p := range c.Whitelist.Exact {
			p = h.expand(p)
			if p == root || p == filepath.Join(root, ".envrc") {
				return "direnv loads it without `direnv allow`: [whitelist] exact " + p + " in " + file
			}
		}
		return "" // direnv reads the first of the two that exists
	}
	return ""
}

// expand makes a whitelist entry absolute as direnv does ("~/" is the
// home); a relative one is dropped.
func (h Host) expand(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = filepath.Join(h.Home, p[1:])
	}
	if !filepath.IsAbs(p) {
		return ""
	}
	return filepath.Clean(p)
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// claude says why Claude Code would start a server that a new
// root/.mcp.json names without asking, or "".
func (h Host) claude(root string) string {
	dir := h.getenv("CLAUDE_CONFIG_DIR")
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(h.Home, ".claude")
	}
	files := []string{
		"/etc/claude-code/managed-settings.json",
		filepath.Join(dir, "settings.json"),
		filepath.Join(dir, "settings.local.json"),
		filepath.Join(root, ".claude", "settings.json"),
		filepath.Join(root, ".claude", "settings.local.json"),
	}
	for _, file := range files {
		data, err := config.ReadFile(file, config.ReadOptions{})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "Claude Code's " + file + " could not be read, so whether it approves every project server is not known"
		}
		if key := approvesAll(data); key != "" {
			return "Claude Code starts its servers without asking: " + key + " in " + file
		}
	}
	file := filepath.Join(h.Home, ".claude.json")
	if dir != filepath.Join(h.Home, ".claude") {
		file = filepath.Join(dir, ".claude.json")
	}
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		return "Claude Code's " + file + " could not be read, so whether it approves every project server is not known"
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxClaudeJSON+1))
	if err != nil || len(data) > maxClaudeJSON {
		return "Claude Code's " + file + " could not be read whole, so whether it approves every project server is not known"
	}
	if key := approvesAll(data); key != "" {
		return "Claude Code starts its servers without asking: " + key + " in " + file
	}
	return ""
}

// approvesAll finds, anywhere in a Claude Code JSON file,
// "enableAllProjectMcpServers": true or "enabledMcpjsonServers" with a
// non-empty array, and returns that key ("" when there is neither).
func approvesAll(data []byte) string {
	if keyValue(data, "enableAllProjectMcpServers", func(v []byte) bool { return bytes.HasPrefix(v, []byte("true")) }) {
		return "enableAllProjectMcpServers"
	}
	if keyValue(data, "enabledMcpjsonServers", func(v []byte) bool {
		v, ok := bytes.CutPrefix(v, []byte("["))
		return ok && len(bytes.TrimLeft(v, " \t\r\n")) > 0 && bytes.TrimLeft(v, " \t\r\n")[0] != ']'
	}) {
		return "enabledMcpjsonServers"
	}
	return ""
}

// keyValue reports whether some occurrence of "key" followed by a colon
// has a value (blanks skipped) that ok accepts.
func keyValue(data []byte, key string, ok func([]byte) bool) bool {
	needle := []byte(`"` + key + `"`)
	for i := 0; ; {
		j := bytes.Index(data[i:], needle)
		if j < 0 {
			return false
		}
		rest := bytes.TrimLeft(data[i+j+len(needle):], " \t\r\n")
		if v, found := bytes.CutPrefix(rest, []byte(":")); found && ok(bytes.TrimLeft(v, " \t\r\n")) {
			return true
		}
		i += j + len(needle)
	}
}
