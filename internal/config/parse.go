package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	names "github.com/cordon-sandbox/cordon/internal/suggest"
)

// ParseFile reads the config file at path with ReadFile and opts, and
// parses it. A missing file is reported with an error that satisfies
// errors.Is(err, fs.ErrNotExist). Errors reading the file are one line
// starting with path; errors in its content are *Error.
func ParseFile(path string, opts ReadOptions) (*Layer, error) {
	data, err := ReadFile(path, opts)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses the YAML config data read from file (used as the Layer's
// Source and in errors). An empty file, or one holding only comments or an
// empty "sandbox:", gives an empty Layer. Errors are *Error, and never
// contain a value from data: they name the key and line instead (the file
// may not be what it claims to be, e.g. a link to a private key).
func Parse(file string, data []byte) (*Layer, error) {
	l := &Layer{Source: file, Lines: map[string]int{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return l, nil
		}
		return nil, syntaxError(file, err, data)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: file, Line: extra.Line, Msg: "a second YAML document (after \"---\") is not allowed; put all settings under one \"sandbox:\" key"}
	} else if !errors.Is(err, io.EOF) {
		return nil, syntaxError(file, err, data)
	}
	p := &parser{file: file, l: l}
	p.document(&doc)
	if p.err != nil {
		return nil, p.err
	}
	return l, nil
}

// The patterns of error messages, compiled at their first use (an error):
// compiling them at start-up cost every cordon command about 0.3 ms.
var (
	yamlLineRE = lazyRE(`^yaml: line (\d+): (.*)$`)
	// quotedRE matches what yaml.v3 quotes from the input in its messages
	// (e.g. "unknown anchor 'x' referenced"); a quoted single character
	// is its own punctuation ("did not find expected ','").
	quotedRE = lazyRE("'[^' ]{2,}'|\"[^\" ]{2,}\"|`[^`]*`")
	// plainMsgRE is what a yaml.v3 message may keep: its own words.
	plainMsgRE = lazyRE(`^[a-zA-Z0-9 ,;:()'\[\]{}-]{1,100}$`)
	// plainKeyRE is an unknown key that is safe to repeat in a message.
	plainKeyRE = lazyRE(`^[A-Za-z0-9_.-]{1,40}$`)
)

// lazyRE returns the regular expression expr, compiled at the first call.
func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// syntaxError turns a yaml.v3 parse error into an *Error keeping its line
// but nothing yaml.v3 quoted from the input. A line indented with a tab,
// which YAML does not allow and yaml.v3 calls "found character that
// cannot start any token", is named as such.
func syntaxError(file string, err error, data []byte) *Error {
	msg, line := err.Error(), 0
	if m := yamlLineRE().FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.Join(strings.Fields(quotedRE().ReplaceAllString(msg, "")), " ")
	if !plainMsgRE().MatchString(msg) {
		msg = "the file is not valid YAML"
	}
	if tabIndented(data, line) {
		msg = "the line is indented with a tab; YAML indents with spaces"
	}
	return &Error{File: file, Line: line, Msg: "invalid YAML: " + msg}
}

// tabIndented reports whether line (from 1) of data starts with blanks
// that hold a tab.
func tabIndented(data []byte, line int) bool {
	if line < 1 {
		return false
	}
	lines := bytes.SplitN(data, []byte("\n"), line+1)
	if len(lines) < line {
		return false
	}
	l := lines[line-1]
	indent := l[:len(l)-len(bytes.TrimLeft(l, " \t"))]
	return bytes.IndexByte(indent, '\t') >= 0
}

type parser struct {
	file string
	l    *Layer
	err  *Error
}

func (p *parser) fail(line int, key, format string, args ...any) {
	if p.err == nil {
		p.err = &Error{File: p.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
	}
}

// deref follows YAML aliases.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe says what kind of value a node holds, for messages. It never
// repeats the value itself.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "an empty value"
		case "!!int":
			return "a whole number"
		case "!!float":
			return "a fractional number"
		case "!!bool":
			return "a true/false value"
		case "!!str":
			if n.Value == "" {
				return "an empty string"
			}
			return "a string"
		}
		return "a tagged value"
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "this value"
}

var (
	topKeys     = []string{"sandbox", "workspaces"}
	sandboxKeys = []string{"enabled", "mode", "profile", "filesystem", "network", "resources", "on_violation", "audit", "timeout", "backend", "bwrap_path", "unix_sockets", "env", "credentials"}
	fsKeys      = []string{"read", "write", "deny", "deny_write"}
	netKeys     = []string{"enabled", "mode", "allow", "deny", "forward_ports"}
	resKeys     = []string{"max_processes", "max_memory_mb", "max_cpu_seconds", "max_file_size_mb"}
	auditKeys   = []string{"enabled", "log_file", "log_allowed", "log_denied", "max_size_mb"}
	credKeys    = []string{"name", "hosts", "env", "command", "file", "npmrc", "netrc", "headers", "methods", "paths", "git_username"}
	// grantKeys, grantFsKeys and grantNetKeys are the keys of one
	// workspaces entry: what an answer "for this workspace" saves.
	grantKeys    = []string{"filesystem", "network"}
	grantFsKeys  = []string{"read", "write"}
	grantNetKeys = []string{"allow"}
)

func (p *parser) document(doc *yaml.Node) {
	root := doc
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return
		}
		root = doc.Content[0]
	}
	root = deref(root)
	if isNull(root) {
		return
	}
	if root.Kind != yaml.MappingNode {
		p.fail(root.Line, "", "the file must be a mapping with a top-level \"sandbox:\" key, not %s", describe(root))
		return
	}
	p.mapping(root, "", topKeys, func(name, full string, k, v *yaml.Node) {
		if name == "workspaces" {
			p.workspaces(v)
			return
		}
		p.sandbox(v)
	})
}

// workspaces parses the top-level "workspaces" mapping: for each
// workspace (its absolute path), the reads, writes and network hosts
// allowed there (what cordon run --ask saves for an answer "for this
// workspace"). Each entry is a Layer of its own, whose keys and lines are
// those of the sandbox keys it holds.
func (p *parser) workspaces(n *yaml.Node) {
	n = deref(n)
	if p.err != nil || isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.fail(n.Line, "workspaces", "workspaces must be a mapping from a workspace's absolute path to its filesystem and network entries, not %s", describe(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content) && p.err == nil; i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode || !strings.HasPrefix(k.Value, "/") {
			p.fail(k.Line, "workspaces", "each key under workspaces must be a workspace's absolute path")
			return
		}
		if first, dup := seen[k.Value]; dup {
			p.fail(k.Line, "workspaces", "the same workspace twice under workspaces (first on line %d); merge them", first)
			return
		}
		seen[k.Value] = k.Line
		sub := &Layer{Source: p.file, Lines: map[string]int{}}
		q := &parser{file: p.file, l: sub}
		q.mapping(v, "sandbox", grantKeys, func(name, full string, k, v *yaml.Node) {
			switch name {
			case "filesystem":
				q.mapping(v, full, grantFsKeys, func(name, full string, k, v *yaml.Node) {
					if name == "read" {
						sub.Filesystem.Read = q.strings(full, v)
					} else {
						sub.Filesystem.Write = q.strings(full, v)
					}
				})
			case "network":
				q.mapping(v, full, grantNetKeys, func(name, full string, k, v *yaml.Node) {
					sub.Network.Allow = q.strings(full, v)
				})
			}
		})
		if q.err != nil {
			p.err = q.err
			return
		}
		p.l.Workspaces = append(p.l.Workspaces, Workspace{Path: k.Value, Line: k.Line, Layer: sub})
	}
}

// mapping walks mapping node n whose dotted key is prefix ("" at top level),
// rejecting duplicate and unknown keys, and calls fn for each entry.
func (p *parser) mapping(n *yaml.Node, prefix string, allowed []string, fn func(name, full string, k, v *yaml.Node)) {
	n = deref(n)
	if p.err != nil || isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.fail(n.Line, prefix, "%s must be a mapping with keys %s, not %s", prefix, strings.Join(allowed, ", "), describe(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content) && p.err == nil; i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.fail(k.Line, prefix, "keys must be plain names, not %s", describe(k))
			return
		}
		name := k.Value
		full := joinKey(prefix, name)
		if first, dup := seen[name]; dup {
			p.fail(k.Line, full, "duplicate key %q (first set on line %d); remove one of them", full, first)
			return
		}
		seen[name] = k.Line
		if !contains(allowed, name) {
			shown := prefix
			if plainKeyRE().MatchString(name) {
				shown = full
			}
			p.fail(k.Line, shown, "%s", unknownKey(prefix, full, name, allowed))
			return
		}
		p.l.Lines[full] = k.Line
		fn(name, full, k, v)
	}
}

// joinKey returns the dotted key of name under prefix.
func joinKey(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// unknownKey is the message for key name, not one of allowed, under
// prefix. It repeats the name only when it is a short plain identifier:
// anything else in a key could be content that is not a key at all.
func unknownKey(prefix, full, name string, allowed []string) string {
	if !plainKeyRE().MatchString(name) {
		where := "at the top level; the top-level keys are \"sandbox\" and \"workspaces\""
		if prefix != "" {
			where = "under " + prefix + "; allowed keys there are: " + strings.Join(allowed, ", ")
		}
		return "an unknown key " + where
	}
	if prefix == "" {
		if s := suggest(name, allowed); s != "" {
			return fmt.Sprintf("unknown top-level key %q; did you mean %q?", name, s)
		}
		if contains(sandboxKeys, name) {
			return fmt.Sprintf("unknown top-level key %q; cordon settings go under a top-level \"sandbox:\" key", name)
		}
		return fmt.Sprintf("unknown top-level key %q; the top-level keys are \"sandbox\" and \"workspaces\"", name)
	}
	if s := suggest(name, allowed); s != "" {
		return fmt.Sprintf("unknown key %q; did you mean %q?", full, s)
	}
	return fmt.Sprintf("unknown key %q; allowed keys under %s are: %s", full, prefix, strings.Join(allowed, ", "))
}

func (p *parser) sandbox(n *yaml.Node) {
	l := p.l
	p.mapping(n, "sandbox", sandboxKeys, func(name, full string, k, v *yaml.Node) {
		switch name {
		case "enabled":
			l.Enabled = p.boolean(full, v)
		case "mode":
			l.Mode = p.enum(full, v, Modes)
		case "profile":
			l.Profile = p.enum(full, v, ProfileNames)
		case "filesystem":
			p.mapping(v, full, fsKeys, func(name, full string, k, v *yaml.Node) {
				switch name {
				case "read":
					l.Filesystem.Read = p.strings(full, v)
				case "write":
					l.Filesystem.Write = p.strings(full, v)
				case "deny":
					l.Filesystem.Deny = p.strings(full, v)
				case "deny_write":
					l.Filesystem.DenyWrite = p.strings(full, v)
				}
			})
		case "network":
			p.mapping(v, full, netKeys, func(name, full string, k, v *yaml.Node) {
				switch name {
				case "enabled":
					l.Network.Enabled = p.boolean(full, v)
				case "mode":
					l.Network.Mode = p.enum(full, v, NetworkModes)
				case "allow":
					l.Network.Allow = p.strings(full, v)
				case "deny":
					l.Network.Deny = p.strings(full, v)
				case "forward_ports":
					l.Network.ForwardPorts = p.ports(full, v)
				}
			})
		case "resources":
			p.mapping(v, full, resKeys, func(name, full string, k, v *yaml.Node) {
				switch name {
				case "max_processes":
					l.Resources.MaxProcesses = p.integer(full, v, "processes")
				case "max_memory_mb":
					l.Resources.MaxMemoryMB = p.integer(full, v, "megabytes")
				case "max_cpu_seconds":
					l.Resources.MaxCPUSeconds = p.integer(full, v, "seconds")
				case "max_file_size_mb":
					l.Resources.MaxFileSizeMB = p.integer(full, v, "megabytes")
				}
			})
		case "on_violation":
			l.OnViolation = p.enum(full, v, OnViolationValues)
		case "audit":
			p.mapping(v, full, auditKeys, func(name, full string, k, v *yaml.Node) {
				switch name {
				case "enabled":
					l.Audit.Enabled = p.boolean(full, v)
				case "log_file":
					l.Audit.LogFile = p.str(full, v)
				case "log_allowed":
					l.Audit.LogAllowed = p.boolean(full, v)
				case "log_denied":
					l.Audit.LogDenied = p.boolean(full, v)
				case "max_size_mb":
					l.Audit.MaxSizeMB = p.integer(full, v, "megabytes")
				}
			})
		case "timeout":
			l.Timeout = p.duration(full, v)
		case "backend":
			l.Backend = p.enum(full, v, Backends)
		case "bwrap_path":
			l.BwrapPath = p.str(full, v)
		case "unix_sockets":
			l.UnixSockets = p.strings(full, v)
		case "env":
			l.Env = p.strings(full, v)
		case "credentials":
			l.Credentials = p.credentials(full, v)
		}
	})
}

// scalar checks that v is a non-empty scalar and returns it.
func (p *parser) scalar(key string, v *yaml.Node, want string) *yaml.Node {
	v = deref(v)
	if v.Kind != yaml.ScalarNode {
		p.fail(v.Line, key, "%s must be %s, not %s", key, want, describe(v))
		return nil
	}
	if isNull(v) {
		p.fail(v.Line, key, "%s has no value; set it to %s or remove the key", key, want)
		return nil
	}
	return v
}

func (p *parser) str(key string, v *yaml.Node) *string {
	n := p.scalar(key, v, "a string")
	if n == nil {
		return nil
	}
	s := n.Value
	return &s
}

func (p *parser) enum(key string, v *yaml.Node, allowed []string) *string {
	want := "one of " + strings.Join(allowed, ", ")
	n := p.scalar(key, v, want)
	if n == nil {
		return nil
	}
	if !contains(allowed, n.Value) {
		msg := key + " must be " + want
		if n.ShortTag() != "!!str" {
			msg += ", not " + describe(n)
		}
		if s := suggest(n.Value, allowed); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		p.fail(n.Line, key, "%s", msg)
		return nil
	}
	s := n.Value
	return &s
}

func (p *parser) boolean(key string, v *yaml.Node) *bool {
	n := p.scalar(key, v, "true or false")
	if n == nil {
		return nil
	}
	var b bool
	if n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		p.fail(n.Line, key, "%s must be true or false, not %s", key, describe(n))
		return nil
	}
	return &b
}

func (p *parser) integer(key string, v *yaml.Node, unit string) *int {
	want := "a whole number of " + unit
	n := p.scalar(key, v, want)
	if n == nil {
		return nil
	}
	var i int
	if n.ShortTag() != "!!int" || n.Decode(&i) != nil {
		p.fail(n.Line, key, "%s must be %s, not %s", key, want, describe(n))
		return nil
	}
	return &i
}

func (p *parser) duration(key string, v *yaml.Node) *time.Duration {
	const want = `a duration with a unit, like "90s", "5m" or "1h30m"`
	n := p.scalar(key, v, want)
	if n == nil {
		return nil
	}
	d, err := time.ParseDuration(n.Value)
	if n.ShortTag() != "!!str" || err != nil {
		if n.ShortTag() == "!!str" {
			p.fail(n.Line, key, "%s is not a duration: write one with a unit, like \"90s\", \"5m\" or \"1h30m\"", key)
			return nil
		}
		p.fail(n.Line, key, "%s must be %s, not %s", key, want, describe(n))
		return nil
	}
	return &d
}

// list checks that v is a list (an empty value counts as no list) and calls
// fn for each entry with its index.
func (p *parser) list(key string, v *yaml.Node, example string, fn func(i int, e *yaml.Node)) {
	v = deref(v)
	if isNull(v) {
		return
	}
	if v.Kind != yaml.SequenceNode {
		p.fail(v.Line, key, "%s must be a list, like %s, not %s", key, example, describe(v))
		return
	}
	for i, e := range v.Content {
		if p.err != nil {
			return
		}
		e = deref(e)
		ek := EntryKey(key, i)
		p.l.Lines[ek] = e.Line
		fn(i, e)
	}
}

func (p *parser) strings(key string, v *yaml.Node) []string {
	if isNull(deref(v)) {
		return nil
	}
	out := []string{}
	p.list(key, v, `["a", "b"]`, func(i int, e *yaml.Node) {
		if isNull(e) && e.Value == "~" {
			p.fail(e.Line, key, "entry %d of %s is empty: YAML reads a bare ~ as nothing; write \"~\" in quotes", i+1, key)
			return
		}
		if e.Kind != yaml.ScalarNode || isNull(e) || e.Value == "" {
			p.fail(e.Line, key, "entry %d of %s must be a non-empty string, not %s", i+1, key, describe(e))
			return
		}
		out = append(out, e.Value)
	})
	if p.err != nil {
		return nil
	}
	return out
}

func (p *parser) ports(key string, v *yaml.Node) []int {
	if isNull(deref(v)) {
		return nil
	}
	out := []int{}
	p.list(key, v, "[8080, 50051]", func(i int, e *yaml.Node) {
		var port int
		if e.Kind != yaml.ScalarNode || e.ShortTag() != "!!int" || e.Decode(&port) != nil || port < 1 || port > 65535 {
			what := describe(e)
			if e.Kind == yaml.ScalarNode && e.ShortTag() == "!!int" {
				what = "a number out of that range"
			}
			p.fail(e.Line, key, "entry %d of %s must be a TCP port number from 1 to 65535, not %s", i+1, key, what)
			return
		}
		out = append(out, port)
	})
	if p.err != nil {
		return nil
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest returns the candidate closest to s, if it is close enough to be a
// likely typo, or "".
func suggest(s string, candidates []string) string {
	norm := func(x string) string {
		return strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(x))
	}
	best, bestD := "", 0
	for _, c := range candidates {
		if norm(c) == norm(s) {
			return c
		}
		d := names.Distance(strings.ToLower(s), c)
		limit := 1
		if len(c) >= 5 {
			limit = 2
		}
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}
