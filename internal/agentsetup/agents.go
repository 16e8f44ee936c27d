package agentsetup

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/agenthook"
)

// The matchers of the hooks setup writes, by agent: one hook for the
// shell, one for the file tools (agenthook decides the same names).
const (
	claudeShell = "Bash"
	claudeFiles = "Read|Edit|MultiEdit|Write|NotebookEdit|Glob|Grep"
	codexShell  = "Bash"
	codexPatch  = "apply_patch"
	geminiShell = "run_shell_command"
	geminiFiles = "read_file|write_file|replace|list_directory|glob|search_file_content|grep_search"
)

// agents are the edits of each agent's setup, by name.
var agents = map[string]func(Options) []edit{
	"claude-code": func(o Options) []edit {
		cmd := hookCommand(o.Cordon, "claude-code")
		settings := filepath.Join(o.Home, ".claude", "settings.json")
		mcp := filepath.Join(o.Home, ".claude.json")
		if o.Project {
			settings = filepath.Join(o.Workspace, ".claude", "settings.json")
			mcp = filepath.Join(o.Workspace, ".mcp.json")
		}
		hooks := hooksEdit(settings, "the PreToolUse hooks (Bash, file tools)", "PreToolUse", cmd, "claude-code", nil, claudeShell, claudeFiles)
		hooks.warn = otherShellHooks("PreToolUse", "Bash", "claude-code")
		return []edit{hooks, mcpEdit(mcp, "mcpServers", o.Cordon)}
	},
	"codex": func(o Options) []edit {
		cmd := hookCommand(o.Cordon, "codex")
		dir := filepath.Join(o.Home, ".codex")
		mcpArgs := []string{"mcp"}
		if h := getenv(o, "CODEX_HOME"); h != "" && filepath.IsAbs(h) && !o.Project {
			dir = h
		}
		if o.Project {
			dir = filepath.Join(o.Workspace, ".codex")
			mcpArgs = append(mcpArgs, "--workspace", o.Workspace)
		}
		return []edit{
			hooksEdit(filepath.Join(dir, "hooks.json"), "the PreToolUse hooks (Bash, apply_patch)", "PreToolUse", cmd, "codex", nil, codexShell, codexPatch),
			tomlMCPEdit(filepath.Join(dir, "config.toml"), o.Cordon, mcpArgs),
		}
	},
	"gemini": func(o Options) []edit {
		cmd := hookCommand(o.Cordon, "gemini")
		settings := filepath.Join(o.Home, ".gemini", "settings.json")
		if o.Project {
			settings = filepath.Join(o.Workspace, ".gemini", "settings.json")
		}
		hooks := hooksEdit(settings, "the BeforeTool hooks (shell, file tools)", "BeforeTool", cmd, "gemini", map[string]any{"name": "cordon"}, geminiShell, geminiFiles)
		mcp := mcpEdit(settings, "mcpServers", o.Cordon)
		return []edit{chain(hooks, mcp, "the BeforeTool hooks and the MCP server")}
	},
	"cursor": func(o Options) []edit {
		cmd := hookCommand(o.Cordon, "cursor")
		dir := filepath.Join(o.Home, ".cursor")
		if o.Project {
			dir = filepath.Join(o.Workspace, ".cursor")
		}
		return []edit{
			cursorHooksEdit(filepath.Join(dir, "hooks.json"), cmd),
			mcpEdit(filepath.Join(dir, "mcp.json"), "mcpServers", o.Cordon),
		}
	},
}

// Names lists the agents setup knows, sorted.
func Names() []string {
	var n []string
	for k := range agents {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

func getenv(o Options, k string) string {
	if o.Getenv == nil {
		return ""
	}
	return o.Getenv(k)
}

// hookCommand is the command line an agent runs for its hook: cordon's
// absolute path, quoted for the shell the agent runs it with.
func hookCommand(cordon, agent string) string {
	return agenthook.Quote(cordon) + " hook " + agent
}

// isOurs reports whether command is a hook command setup writes for
// agent: a cordon binary (any path) running hook AGENT.
func isOurs(command, agent string) bool {
	prog, ok := strings.CutSuffix(command, " hook "+agent)
	if !ok {
		return false
	}
	if len(prog) >= 2 && prog[0] == '\'' && prog[len(prog)-1] == '\'' {
		prog = strings.ReplaceAll(prog[1:len(prog)-1], `'\''`, "'")
	} else if strings.ContainsAny(prog, " \t'\"\\$`") {
		return false
	}
	return filepath.Base(prog) == "cordon"
}

// hooksEdit puts one hook group per matcher under hooks.EVENT of the JSON
// file path, each running command (with extra members), in the layout
// Claude Code, Codex and Gemini CLI share:
//
//	{"hooks": {"EVENT": [{"matcher": M, "hooks": [{"type": "command", "command": C}]}]}}
func hooksEdit(path, what, event, command, agent string, extra map[string]any, matchers ...string) edit {
	entry := func() *object {
		h := newObject()
		h.set("type", "command")
		h.set("command", command)
		for _, k := range sortedKeys(extra) {
			h.set(k, extra[k])
		}
		return h
	}
	apply := func(root *object) (bool, error) {
		groups, err := hookGroups(root, event, true)
		if err != nil {
			return false, err
		}
		changed := false
		for _, m := range matchers {
			found := false
			for _, g := range *groups {
				gm, _ := g.get("matcher")
				if gm != m {
					continue
				}
				hs, _ := g.get("hooks")
				list, _ := hs.([]any)
				for _, h := range list {
					ho, ok := h.(*object)
					if !ok {
						continue
					}
					c, _ := ho.get("command")
					if cs, ok := c.(string); ok && isOurs(cs, agent) {
						found = true
						if cs != command {
							ho.set("command", command)
							changed = true
						}
					}
				}
			}
			if !found {
				g := newObject()
				g.set("matcher", m)
				g.set("hooks", []any{entry()})
				*groups = append(*groups, g)
				changed = true
			}
		}
		if changed {
			setHookGroups(root, event, *groups)
		}
		return changed, nil
	}
	undo := func(root *object) (bool, error) {
		groups, err := hookGroups(root, event, false)
		if err != nil || groups == nil {
			return false, err
		}
		changed := false
		var keep []any
		for _, g := range *groups {
			hs, _ := g.get("hooks")
			list, ok := hs.([]any)
			if !ok {
				keep = append(keep, g)
				continue
			}
			var rest []any
			for _, h := range list {
				if ho, ok := h.(*object); ok {
					if c, _ := ho.get("command"); c != nil {
						if cs, ok := c.(string); ok && isOurs(cs, agent) {
							changed = true
							continue
						}
					}
				}
				rest = append(rest, h)
			}
			if len(rest) == 0 && len(list) > 0 {
				continue // the group held only cordon's hook
			}
			if len(rest) != len(list) {
				g.set("hooks", rest)
			}
			keep = append(keep, g)
		}
		if changed {
			setHookGroups(root, event, keep)
		}
		return changed, nil
	}
	return jsonEdit(path, what, apply, undo)
}

// hookGroups returns hooks.EVENT of root as objects (create makes the
// containers when absent); a container of another type is an error.
func hookGroups(root *object, event string, create bool) (*[]*object, error) {
	hv, ok := root.get("hooks")
	if !ok {
		if !create {
			return nil, nil
		}
		return &[]*object{}, nil
	}
	hooks, ok := hv.(*object)
	if !ok {
		return nil, fmt.Errorf("\"hooks\" is not an object")
	}
	ev, ok := hooks.get(event)
	if !ok {
		if !create {
			return nil, nil
		}
		return &[]*object{}, nil
	}
	list, ok := ev.([]any)
	if !ok {
		return nil, fmt.Errorf("\"hooks.%s\" is not a list", event)
	}
	out := []*object{}
	for _, g := range list {
		o, ok := g.(*object)
		if !ok {
			return nil, fmt.Errorf("\"hooks.%s\" holds an entry that is not an object", event)
		}
		out = append(out, o)
	}
	return &out, nil
}

// setHookGroups stores groups as hooks.EVENT, removing the list and the
// hooks object when they are left empty.
func setHookGroups[T any](root *object, event string, groups []T) {
	hv, ok := root.get("hooks")
	hooks, _ := hv.(*object)
	if !ok || hooks == nil {
		hooks = newObject()
		root.set("hooks", hooks)
	}
	if len(groups) == 0 {
		hooks.del(event)
		if len(hooks.keys) == 0 {
			root.del("hooks")
		}
		return
	}
	list := make([]any, len(groups))
	for i, g := range groups {
		list[i] = g
	}
	hooks.set(event, list)
}

// mcpEntry is cordon's MCP server entry.
func mcpEntry(cordon string) *object {
	e := newObject()
	e.set("command", cordon)
	e.set("args", []any{"mcp"})
	return e
}

// isOurMCP reports whether v is an MCP server entry setup writes: a
// cordon binary running mcp.
func isOurMCP(v any) bool {
	o, ok := v.(*object)
	if !ok {
		return false
	}
	c, _ := o.get("command")
	cs, _ := c.(string)
	a, _ := o.get("args")
	l, _ := a.([]any)
	return filepath.Base(cs) == "cordon" && len(l) > 0 && l[0] == "mcp"
}

// mcpEdit registers cordon's MCP server as KEY.cordon in the JSON file
// path (Claude Code's ~/.claude.json and .mcp.json, Gemini CLI's and
// Cursor's mcpServers). An entry named cordon that setup did not write is
// refused, never replaced.
func mcpEdit(path, key, cordon string) edit {
	apply := func(root *object) (bool, error) {
		sv, ok := root.get(key)
		servers, isObj := sv.(*object)
		if ok && !isObj {
			return false, fmt.Errorf("%q is not an object", key)
		}
		if !ok {
			servers = newObject()
		}
		want := mcpEntry(cordon)
		if cur, ok := servers.get("cordon"); ok {
			if equalJSON(cur, want) {
				return false, nil
			}
			if !isOurMCP(cur) {
				return false, fmt.Errorf("%s.cordon is already an MCP server setup did not write; rename or remove it", key)
			}
		}
		servers.set("cordon", want)
		root.set(key, servers)
		return true, nil
	}
	undo := func(root *object) (bool, error) {
		sv, ok := root.get(key)
		servers, isObj := sv.(*object)
		if !ok || !isObj {
			return false, nil
		}
		cur, ok := servers.get("cordon")
		if !ok || !isOurMCP(cur) {
			return false, nil
		}
		servers.del("cordon")
		if len(servers.keys) == 0 {
			root.del(key)
		}
		return true, nil
	}
	return jsonEdit(path, "the MCP server (cordon mcp)", apply, undo)
}

// cursorHooksEdit puts command under Cursor's beforeShellExecution and
// beforeReadFile hooks in hooks.json ({"version": 1, "hooks": {EVENT:
// [{"command": C}]}}).
func cursorHooksEdit(path, command string) edit {
	events := []string{"beforeShellExecution", "beforeReadFile"}
	apply := func(root *object) (bool, error) {
		changed := false
		if _, ok := root.get("version"); !ok {
			root.set("version", jsonNumber(1))
			changed = true
		}
		for _, ev := range events {
			list, err := cursorList(root, ev)
			if err != nil {
				return false, err
			}
			found := false
			for _, h := range list {
				if ho, ok := h.(*object); ok {
					c, _ := ho.get("command")
					if cs, ok := c.(string); ok && isOurs(cs, "cursor") {
						found = true
						if cs != command {
							ho.set("command", command)
							changed = true
						}
					}
				}
			}
			if !found {
				e := newObject()
				e.set("command", command)
				setHookGroups(root, ev, append(list, e))
				changed = true
			}
		}
		return changed, nil
	}
	undo := func(root *object) (bool, error) {
		changed := false
		for _, ev := range events {
			list, err := cursorList(root, ev)
			if err != nil {
				return false, err
			}
			var rest []any
			for _, h := range list {
				if ho, ok := h.(*object); ok {
					c, _ := ho.get("command")
					if cs, ok := c.(string); ok && isOurs(cs, "cursor") {
						changed = true
						continue
					}
				}
				rest = append(rest, h)
			}
			if len(rest) != len(list) {
				setHookGroups(root, ev, rest)
			}
		}
		// What setup alone would leave: the version it set.
		if v, _ := root.get("version"); changed && len(root.keys) == 1 && equalJSON(v, jsonNumber(1)) {
			root.del("version")
		}
		return changed, nil
	}
	return jsonEdit(path, "the hooks (beforeShellExecution, beforeReadFile)", apply, undo)
}

// cursorList is hooks.EVENT of a Cursor hooks.json.
func cursorList(root *object, event string) ([]any, error) {
	hv, ok := root.get("hooks")
	if !ok {
		return nil, nil
	}
	hooks, ok := hv.(*object)
	if !ok {
		return nil, fmt.Errorf("\"hooks\" is not an object")
	}
	ev, ok := hooks.get(event)
	if !ok {
		return nil, nil
	}
	list, ok := ev.([]any)
	if !ok {
		return nil, fmt.Errorf("\"hooks.%s\" is not a list", event)
	}
	return list, nil
}

// chain is two edits of the same file, applied in turn.
func chain(a, b edit, what string) edit {
	both := func(f, g func([]byte) ([]byte, bool, error)) func([]byte) ([]byte, bool, error) {
		return func(old []byte) ([]byte, bool, error) {
			mid, c1, err := f(old)
			if err != nil {
				return nil, false, err
			}
			if mid == nil && c1 {
				return nil, true, nil
			}
			out, c2, err := g(mid)
			if err != nil {
				return nil, false, err
			}
			return out, c1 || c2, nil
		}
	}
	return edit{path: a.path, what: what, apply: both(a.apply, b.apply), undo: both(a.undo, b.undo)}
}

func sortedKeys(m map[string]any) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	slices.Sort(k)
	return k
}

// otherShellHooks warns of hooks of the user's on the shell tool beside
// cordon's: Claude Code has dropped a rewrite (updatedInput) when several
// PreToolUse hooks matched one call, which would run the command
// unconfined.
func otherShellHooks(event, tool, agent string) func([]byte) []string {
	return func(content []byte) []string {
		root, err := parseJSON(content)
		if err != nil {
			return nil
		}
		groups, err := hookGroups(root, event, false)
		if err != nil || groups == nil {
			return nil
		}
		var others []string
		for _, g := range *groups {
			m, _ := g.get("matcher")
			ms, _ := m.(string)
			if !matcherMatches(ms, tool) {
				continue
			}
			hs, _ := g.get("hooks")
			list, _ := hs.([]any)
			for _, h := range list {
				ho, ok := h.(*object)
				if !ok {
					continue
				}
				c, _ := ho.get("command")
				cs, _ := c.(string)
				if !isOurs(cs, agent) {
					others = append(others, fmt.Sprintf("%q", cs))
				}
			}
		}
		if len(others) == 0 {
			return nil
		}
		return []string{fmt.Sprintf("has other %s hooks on %s (%s): keep cordon's the only one that rewrites %s, since the agent has dropped a rewrite when several hooks matched (see docs/agents.md)", event, tool, strings.Join(others, ", "), tool)}
	}
}

// matcherMatches reports whether a hook matcher (empty or "*" for every
// tool, else a regular expression of tool names) may match tool.
func matcherMatches(matcher, tool string) bool {
	if matcher == "" || matcher == "*" {
		return true
	}
	re, err := regexp.Compile("^(?:" + matcher + ")$")
	if err != nil {
		return true // a matcher setup cannot read may well match
	}
	return re.MatchString(tool)
}
