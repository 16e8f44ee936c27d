package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// credentials parses sandbox.credentials: a list of mappings. An entry's
// env may be one name or a list of names.
func (p *parser) credentials(key string, v *yaml.Node) []Credential {
	if isNull(deref(v)) {
		return nil
	}
	out := []Credential{}
	p.list(key, v, `[{name: github}]`, func(i int, e *yaml.Node) {
		ek := EntryKey(key, i)
		if e.Kind != yaml.MappingNode {
			p.fail(e.Line, key, "entry %d of %s must be a mapping with keys %s, not %s", i+1, key, strings.Join(credKeys, ", "), describe(e))
			return
		}
		c := Credential{Line: e.Line}
		p.mapping(e, key, credKeys, func(name, full string, k, v *yaml.Node) {
			p.l.Lines[ek+"."+name] = k.Line
			switch name {
			case "name":
				c.Name = p.str(full, v)
			case "hosts":
				c.Hosts = p.strings(full, v)
			case "env":
				if n := deref(v); n.Kind == yaml.ScalarNode && !isNull(n) {
					if s := p.str(full, v); s != nil {
						c.Env = []string{*s}
					}
				} else {
					c.Env = p.strings(full, v)
				}
			case "command":
				c.Command = p.strings(full, v)
			case "file":
				c.File = p.str(full, v)
			case "npmrc":
				c.Npmrc = p.boolean(full, v)
			case "netrc":
				c.Netrc = p.boolean(full, v)
			case "headers":
				c.Headers = p.strings(full, v)
			case "methods":
				c.Methods = p.strings(full, v)
			case "paths":
				c.Paths = p.strings(full, v)
			case "git_username":
				c.GitUsername = p.str(full, v)
			}
		})
		out = append(out, c)
	})
	if p.err != nil {
		return nil
	}
	return out
}
