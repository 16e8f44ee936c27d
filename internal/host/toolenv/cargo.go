package toolenv

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/config"
)

// cargoRegistries adds cargo's registries: the [registries.NAME] index
// and [source.NAME] registry URLs of the user's cargo config, the
// CARGO_REGISTRIES_NAME_INDEX variables, and the registries cargo has
// used on this host, each with the host its crates download from (cargo
// keeps each index's config.json under $CARGO_HOME/registry/index).
// Cargo cannot report its default registry without the network, so that
// index cache is how an unconfigured cargo's registry is found. The
// project's .cargo/config.toml is a repository's own file: what it names
// is listed as Unlisted.
func (c *collector) cargoRegistries() {
	home := filepath.Join(c.h.Home, ".cargo")
	if v, ok := c.h.Getenv("CARGO_HOME"); ok && filepath.IsAbs(v) {
		home = v
	}
	before := len(c.regs.out.Allow)
	if file, data := c.cargoConfig(home); data != nil {
		settings := parseCargoConfig(data)
		c.trusting(file, func() {
			for _, k := range slices.Sorted(maps.Keys(settings)) {
				if cargoURLKey(k) {
					c.allowURL(settings[k], "cargo: "+c.short(file)+": "+k)
				}
			}
		})
	}
	var names []string
	for _, kv := range c.h.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	names = append(names, slices.Collect(maps.Keys(c.h.Set))...)
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		if strings.HasPrefix(name, "CARGO_REGISTRIES_") && strings.HasSuffix(name, "_INDEX") {
			if val, where, ok := c.variable(name); ok {
				c.allowURL(val, "cargo: "+where)
			}
		}
	}
	c.trusting(filepath.Join(home, "registry", "index"), func() { c.cargoIndexCache(home) })
	if len(c.regs.out.Allow) == before && c.lookPath("cargo") != "" {
		c.unlisted("", "cargo's default registry", "cargo cannot report it without the network and has not used one on this host yet (nothing under "+c.short(filepath.Join(home, "registry", "index"))+"); fetch once on the host, or allow the registry with --allow-net")
	}
	c.projectCargo()
}

// cargoConfig returns the user's cargo config file and its content:
// $CARGO_HOME/config, which cargo prefers when both exist, else
// $CARGO_HOME/config.toml; nil data when there is none.
func (c *collector) cargoConfig(home string) (string, []byte) {
	for _, name := range []string{"config", "config.toml"} {
		p := filepath.Join(home, name)
		if _, err := os.Lstat(p); err == nil {
			return p, c.readFile(p)
		}
	}
	return "", nil
}

// cargoURLKey reports whether a cargo config key holds a registry URL:
// registries.NAME.index, source.NAME.registry.
func cargoURLKey(k string) bool {
	parts := strings.Split(k, ".")
	return len(parts) == 3 && (parts[0] == "registries" && parts[2] == "index" || parts[0] == "source" && parts[2] == "registry")
}

// indexDirRE is a directory of cargo's index cache: the index's host and
// a hash of its URL.
var indexDirRE = regexp.MustCompile(`^([a-z0-9.-]+)-[0-9a-f]{16}$`)

// maxIndexDirs bounds the index cache directories read.
const maxIndexDirs = 64

// cargoIndexCache adds the sparse registries cargo has used: the host in
// each index directory's name, and the download host its config.json
// names.
func (c *collector) cargoIndexCache(home string) {
	dir := filepath.Join(home, "registry", "index")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for i, e := range entries {
		m := indexDirRE.FindStringSubmatch(e.Name())
		if i >= maxIndexDirs || m == nil || !e.IsDir() {
			continue
		}
		cfgPath := filepath.Join(dir, e.Name(), "config.json")
		data, err := config.ReadFile(cfgPath, config.ReadOptions{NoFollow: true})
		if err != nil {
			continue // a git index, or none yet
		}
		var cfg struct {
			DL string `json:"dl"`
		}
		if json.Unmarshal(data, &cfg) != nil {
			continue
		}
		src := "cargo: a registry cargo has used (" + c.short(filepath.Join(dir, e.Name())) + ")"
		c.allow(hostPort(m[1], "443"), src)
		// dl may hold {crate}-style markers after the host.
		dl, _, _ := strings.Cut(cfg.DL, "{")
		c.allowURL(dl, src+": its download host")
	}
}

// projectCargo lists the registries of the workspace's
// .cargo/config.toml that are not allowed otherwise.
func (c *collector) projectCargo() {
	if c.h.Workspace == "" {
		return
	}
	for _, name := range []string{"config.toml", "config"} {
		data, err := config.ReadFile(filepath.Join(c.h.Workspace, ".cargo", name), config.ReadOptions{Beneath: c.h.Workspace})
		if err != nil {
			continue
		}
		settings := parseCargoConfig(data)
		for _, k := range slices.Sorted(maps.Keys(settings)) {
			if !cargoURLKey(k) {
				continue
			}
			if entry, ok, _ := urlEntry(settings[k]); ok && !c.regs.seen[entry] {
				c.unlisted(entry, "cargo: "+k+" in the project's .cargo/"+name, "a repository's own files may only tighten the policy; allow it with --allow-net "+entry)
			}
		}
	}
}

// parseCargoConfig reads the string settings of a cargo config file, as
// dotted keys ("source.mirror.registry"). It reads the part of TOML such
// files use for registries: [table] headers, bare and quoted keys, dotted
// keys, basic and literal strings, and inline tables of strings one
// level deep. Anything else (arrays, multi-line strings, numbers) is
// skipped.
func parseCargoConfig(data []byte) map[string]string {
	out := map[string]string{}
	table := ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(stripTOMLComment(strings.TrimRight(line, "\r")))
		switch {
		case line == "":
		case strings.HasPrefix(line, "[["):
			table = "\x00" // an array of tables: not read
		case strings.HasPrefix(line, "["):
			inner := strings.TrimSuffix(strings.TrimPrefix(line, "["), "]")
			if path, ok := tomlKeyPath(inner); ok {
				table = path
			} else {
				table = "\x00"
			}
		case table == "\x00":
		default:
			k, v, ok := splitTOMLAssign(line)
			if !ok {
				continue
			}
			key, ok := tomlKeyPath(k)
			if !ok {
				continue
			}
			if table != "" {
				key = table + "." + key
			}
			if s, ok := tomlString(v); ok {
				out[key] = s
				continue
			}
			if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
				for _, item := range splitOutsideQuotes(v[1:len(v)-1], ',') {
					ik, iv, ok := splitTOMLAssign(strings.TrimSpace(item))
					if !ok {
						continue
					}
					sub, ok1 := tomlKeyPath(ik)
					s, ok2 := tomlString(iv)
					if ok1 && ok2 {
						out[key+"."+sub] = s
					}
				}
			}
		}
	}
	return out
}

// stripTOMLComment drops a # comment that is outside quotes.
func stripTOMLComment(line string) string {
	var q byte
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case q == 0 && (ch == '"' || ch == '\''):
			q = ch
		case q == '"' && ch == '\\':
			i++
		case q != 0 && ch == q:
			q = 0
		case q == 0 && ch == '#':
			return line[:i]
		}
	}
	return line
}

// splitOutsideQuotes splits s at sep where sep is outside quotes.
func splitOutsideQuotes(s string, sep byte) []string {
	var parts []string
	var q byte
	start := 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case q == 0 && (ch == '"' || ch == '\''):
			q = ch
		case q == '"' && ch == '\\':
			i++
		case q != 0 && ch == q:
			q = 0
		case q == 0 && ch == sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// splitTOMLAssign splits "key = value" at the first = outside quotes.
func splitTOMLAssign(line string) (string, string, bool) {
	parts := splitOutsideQuotes(line, '=')
	if len(parts) < 2 {
		return "", "", false
	}
	return strings.TrimSpace(parts[0]), strings.TrimSpace(strings.Join(parts[1:], "=")), true
}

// tomlKeyPath reads a dotted key of bare and quoted parts.
func tomlKeyPath(s string) (string, bool) {
	var parts []string
	for _, p := range splitOutsideQuotes(s, '.') {
		p = strings.TrimSpace(p)
		if v, ok := tomlString(p); ok {
			parts = append(parts, v)
			continue
		}
		if p == "" || strings.ContainsFunc(p, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
		}) {
			return "", false
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "."), len(parts) > 0
}

// tomlString reads a one-line basic ("...", with \" \\ escapes) or
// literal ('...') string.
func tomlString(s string) (string, bool) {
	if len(s) < 2 {
		return "", false
	}
	switch {
	case s[0] == '\'' && s[len(s)-1] == '\'' && !strings.HasPrefix(s, "'''"):
		v := s[1 : len(s)-1]
		return v, !strings.Contains(v, "'")
	case s[0] == '"' && s[len(s)-1] == '"' && !strings.HasPrefix(s, `"""`):
		var b strings.Builder
		v := s[1 : len(s)-1]
		for i := 0; i < len(v); i++ {
			switch {
			case v[i] == '\\' && i+1 < len(v) && (v[i+1] == '"' || v[i+1] == '\\'):
				i++
				b.WriteByte(v[i])
			case v[i] == '\\', v[i] == '"':
				return "", false
			default:
				b.WriteByte(v[i])
			}
		}
		return b.String(), true
	}
	return "", false
}
