// Package agenthook serves the hooks that put cordon in front of a coding
// agent's own tools (cordon hook AGENT): it reads the one JSON object the
// agent writes on a hook's stdin and writes the agent's answer. A shell
// command is rewritten to run under cordon run (or, for an agent whose
// hook cannot rewrite, refused with the confined command to run instead);
// a file tool's path is resolved as the tool would resolve it and decided
// by the policy cordon run would enforce in that workspace
// (policy.Decider.DecideHost).
//
// It owns the agents' hook protocols (Agents) and nothing else: it never
// runs the command, never writes a file, and never builds a shell string
// from the agent's input but with Quote. Input it cannot parse is refused
// with the agent's blocking exit status (2) and one line on stderr: every
// agent documented here runs the tool when a hook fails any other way.
package agenthook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/suggest"
	"github.com/cordon-sandbox/cordon/policy"
)

// ExitBlock is the exit status with which every agent here blocks the
// tool call and shows the hook's stderr to the model.
const ExitBlock = 2

// maxInput bounds the hook's input (a Write tool's content included).
const maxInput = 64 << 20

// Env is what a hook needs besides its input.
type Env struct {
	// Cordon is the absolute path of the cordon binary the rewritten
	// command runs.
	Cordon string
	// Home is the user's home directory.
	Home string
	// Getenv looks up the hook's environment (the agent's project
	// directory variables); nil means none are set.
	Getenv func(string) string
	// Decider loads the policy of workspace ws as cordon run would with
	// the current directory cwd, and compiles its decision function.
	Decider func(ws, cwd string) (*policy.Decider, error)
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// Serve answers one hook call of agent: its input on in, its answer on
// out, a refusal of input it cannot parse on errw. It returns the exit
// status.
func Serve(agent string, in io.Reader, out, errw io.Writer, env Env) int {
	a, ok := agents[agent]
	if !ok {
		fmt.Fprintf(errw, "cordon: hook: %s\n", suggest.Unknown("agent", agent, Names()))
		return ExitBlock
	}
	data, err := io.ReadAll(io.LimitReader(in, maxInput+1))
	if err == nil && len(data) > maxInput {
		err = fmt.Errorf("input larger than %d bytes", maxInput)
	}
	var ans answer
	if err == nil {
		ans, err = a.serve(data, env)
	}
	if err != nil {
		fmt.Fprintf(errw, "cordon: hook %s: refused: %s\n", agent, oneLine(err.Error()))
		return ExitBlock
	}
	if ans.body != nil {
		b, err := json.Marshal(ans.body)
		if err != nil {
			fmt.Fprintf(errw, "cordon: hook %s: refused: %v\n", agent, err)
			return ExitBlock
		}
		out.Write(append(b, '\n'))
	}
	return 0
}

// answer is a hook's reply: body is written as JSON, nil writes nothing
// (no decision: the agent's own permission flow goes on).
type answer struct{ body any }

// kind is what a tool does, as the hook decides it.
type kind int

const (
	kindShell  kind = iota + 1 // runs a shell command: rewritten
	kindRead                   // reads a path
	kindWrite                  // writes a path
	kindList                   // lists names below a directory (a glob)
	kindSearch                 // reads the contents of every file below a path
	kindPatch                  // applies a patch naming the files it writes
)

// tool is how one agent's tool is decided.
type tool struct {
	kind kind
	// fields are the tool_input keys that may hold the path, first
	// found wins; for kindList and kindSearch an absent one is cwd.
	fields []string
}

// decodeObject decodes data, one JSON object, keeping its members raw.
func decodeObject(data []byte, what string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object: %v", what, err)
	}
	if m == nil {
		return nil, fmt.Errorf("%s is not a JSON object", what)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s holds more than one JSON value", what)
	}
	return m, nil
}

// str returns member k of m as a string: "" when absent or null, an error
// when it is not a string.
func str(m map[string]json.RawMessage, k string) (string, error) {
	raw, ok := m[k]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s is not a string", k)
	}
	return s, nil
}

// workspace is the workspace of a hook call: the agent's project
// directory when the call's directory cwd lies in it, else cwd.
func workspace(cwd, project string) (string, error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return "", fmt.Errorf("cwd %q is not an absolute path", cwd)
	}
	cwd = filepath.Clean(cwd)
	if project != "" && filepath.IsAbs(project) && policy.Within(cwd, filepath.Clean(project)) {
		return filepath.Clean(project), nil
	}
	return cwd, nil
}

// call is one tool call to decide.
type call struct {
	env     Env
	cwd, ws string
	tool    tool
	input   map[string]json.RawMessage
	decider *policy.Decider
}

// denial is a refused access, worded for the model and the user.
type denial struct{ reason string }

// decide returns the denial of the call's file access, or nil when the
// policy allows every path it may reach.
func (c *call) decide() (*denial, error) {
	p := ""
	for _, f := range c.tool.fields {
		s, err := str(c.input, f)
		if err != nil {
			return nil, fmt.Errorf("tool_input.%w", err)
		}
		if s != "" {
			p = s
			break
		}
	}
	if p == "" {
		if c.tool.kind != kindList && c.tool.kind != kindSearch {
			return nil, fmt.Errorf("tool_input has no path (%s)", strings.Join(c.tool.fields, ", "))
		}
		p = c.cwd
	}
	d, err := c.env.Decider(c.ws, c.cwd)
	if err != nil {
		return &denial{fmt.Sprintf("cordon: the policy of workspace %s does not load: %s", c.ws, oneLine(err.Error()))}, nil
	}
	c.decider = d
	op := policy.OpRead
	if c.tool.kind == kindWrite {
		op = policy.OpWrite
	}
	if den, err := c.decidePath(op, p); den != nil || err != nil {
		return den, err
	}
	switch c.tool.kind {
	case kindList:
		// A pattern may climb out of its directory, be absolute, start at
		// ~, or name a link out of it before its first wildcard: its
		// fixed leading part is decided too.
		pat, err := str(c.input, "pattern")
		if err != nil {
			return nil, fmt.Errorf("tool_input.%w", err)
		}
		if prefix := fixedPrefix(pat); prefix != "" {
			if prefix == "~" || strings.HasPrefix(prefix, "~/") {
				return c.decidePath(policy.OpRead, prefix)
			}
			base := p
			if !filepath.IsAbs(base) {
				base = c.cwd + "/" + base
			}
			return c.decidePath(policy.OpRead, joinRaw(base, prefix))
		}
	case kindSearch:
		return c.decideTree(p)
	}
	return nil, nil
}

// decidePath decides op on every path p may reach from the call's
// directory (candidates).
func (c *call) decidePath(op policy.Op, p string) (*denial, error) {
	cs, err := candidates(c.cwd, p, c.env.Home)
	if err != nil {
		return &denial{fmt.Sprintf("cordon: %s %s refused: %s", opWord(op), p, oneLine(err.Error()))}, nil
	}
	for _, cand := range cs {
		if dec := c.decider.DecideHost(op, cand); dec.Denied {
			return &denial{reason(opWord(op), subject(p, cand, c.env.Home), dec, c.env.Home)}, nil
		}
	}
	return nil, nil
}

// reason words a denial of doing verb to subject ("reading /w/.env"):
// the rule that decided and what would allow it, the home directory as ~.
func reason(verb, subject string, dec policy.Decision, home string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cordon: %s %s refused by the sandbox policy (%s)", verb, subject, dec.Rule)
	switch {
	case dec.Secret:
		b.WriteString("; it is a secret cordon never lets the agent reach, and no setting should change that")
	case dec.Fix != "":
		key, dir, _ := strings.Cut(strings.TrimPrefix(dec.Fix, "--"), " ")
		setting := map[string]string{"allow-read": "filesystem.read", "allow-write": "filesystem.write", "allow-unix-socket": "unix_sockets"}[key]
		fmt.Fprintf(&b, "; to allow it, the user can add %s to %s in ~/.config/cordon/config.yaml (%s for cordon run)", dir, setting, dec.Fix)
	case strings.HasPrefix(dec.Rule, "protected:"), strings.HasPrefix(dec.Rule, "git directory:"), strings.HasPrefix(dec.Rule, "filesystem.deny_write:"):
		b.WriteString("; it is kept read-only because code placed there runs later on the user's machine, and no setting should change that: leave it to the user")
	default:
		b.WriteString("; no setting allows it: work inside the workspace")
	}
	if home != "" {
		return strings.ReplaceAll(b.String(), home+"/", "~/")
	}
	return b.String()
}

// subject is the path a tool was given, and the one it reaches when that
// differs (a ~ given for the home is not a difference).
func subject(given, path, home string) string {
	if path == given || (home != "" && strings.HasPrefix(given, "~/") && path == home+given[1:]) {
		return given
	}
	return given + " (" + path + ")"
}

func opWord(op policy.Op) string {
	if op == policy.OpWrite {
		return "writing"
	}
	return "reading"
}

// oneLine is the first line of s.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// fixedPrefix is the leading part of a glob pattern before its first
// component holding a wildcard ("" when the first one does): a
// relative one may still name a link out of its directory.
func fixedPrefix(pat string) string {
	if pat == "" {
		return ""
	}
	var keep []string
	for _, c := range strings.Split(pat, "/") {
		if strings.ContainsAny(c, "*?[{") {
			break
		}
		keep = append(keep, c)
	}
	prefix := strings.Join(keep, "/")
	if prefix == "" && strings.HasPrefix(pat, "/") {
		prefix = "/"
	}
	return prefix
}

// joinRaw joins base and p as the kernel would read them, without
// cleaning (".." stays after the link it follows); an absolute p stands
// alone.
func joinRaw(base, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return base + "/" + p
}

var errNoShell = errors.New("tool_input has no command")
