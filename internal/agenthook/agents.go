package agenthook

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

// protocol is one agent's hook: how it reads a call and words an answer.
type protocol struct {
	// event is the hook_event_name of the calls it serves ("" for an
	// agent whose events are told apart by their own name, Cursor).
	event string
	// project names the environment variables that hold the agent's
	// project directory, first set wins.
	project []string
	// tools are the agent's tools the hook decides, by tool_name.
	tools map[string]tool
	// rewrite says the agent applies a rewritten command; without it a
	// command not yet confined is refused with the one to run instead.
	rewrite bool
	// allow, deny and rewriteTo word the answers; allow is nil for no
	// decision.
	allow     func() any
	deny      func(reason string) any
	rewriteTo func(input map[string]json.RawMessage, command any) (any, error)
	// serveFn, when set, replaces the common serve (Cursor).
	serveFn func(data []byte, env Env) (answer, error)
}

// The agents' tools, by the names their hooks see.
var (
	claudeTools = map[string]tool{
		"Bash":         {kind: kindShell, fields: []string{"command"}},
		"Read":         {kind: kindRead, fields: []string{"file_path"}},
		"Edit":         {kind: kindWrite, fields: []string{"file_path"}},
		"MultiEdit":    {kind: kindWrite, fields: []string{"file_path"}},
		"Write":        {kind: kindWrite, fields: []string{"file_path"}},
		"NotebookEdit": {kind: kindWrite, fields: []string{"notebook_path"}},
		"Glob":         {kind: kindList, fields: []string{"path"}},
		"Grep":         {kind: kindSearch, fields: []string{"path"}},
	}
	codexTools = map[string]tool{
		"Bash":        {kind: kindShell, fields: []string{"command"}},
		"apply_patch": {kind: kindPatch, fields: []string{"command"}},
	}
	geminiTools = map[string]tool{
		"run_shell_command":   {kind: kindShell, fields: []string{"command"}},
		"read_file":           {kind: kindRead, fields: []string{"file_path", "absolute_path"}},
		"write_file":          {kind: kindWrite, fields: []string{"file_path"}},
		"replace":             {kind: kindWrite, fields: []string{"file_path"}},
		"list_directory":      {kind: kindList, fields: []string{"dir_path", "path"}},
		"glob":                {kind: kindList, fields: []string{"dir_path", "path"}},
		"search_file_content": {kind: kindSearch, fields: []string{"dir_path", "path"}},
		"grep_search":         {kind: kindSearch, fields: []string{"dir_path", "path"}},
	}
)

// claudeAnswer is Claude Code's (and Codex's) PreToolUse answer.
func claudeAnswer(decision, reason string, updated any) any {
	o := map[string]any{"hookEventName": "PreToolUse", "permissionDecision": decision}
	if reason != "" {
		o["permissionDecisionReason"] = reason
	}
	if updated != nil {
		o["updatedInput"] = updated
	}
	return map[string]any{"hookSpecificOutput": o}
}

// withCommand is tool_input with its command replaced, every other member
// kept: Claude Code and Codex take updatedInput as the whole new input.
func withCommand(input map[string]json.RawMessage, command any) (any, error) {
	out := make(map[string]json.RawMessage, len(input))
	for k, v := range input {
		out[k] = v
	}
	b, err := json.Marshal(command)
	if err != nil {
		return nil, err
	}
	out["command"] = b
	return out, nil
}

// agents are the agents cordon hook serves, by name.
var agents = map[string]*protocol{
	"claude-code": {
		event:   "PreToolUse",
		project: []string{"CLAUDE_PROJECT_DIR"},
		tools:   claudeTools,
		rewrite: true,
		deny:    func(r string) any { return claudeAnswer("deny", r, nil) },
		rewriteTo: func(in map[string]json.RawMessage, cmd any) (any, error) {
			u, err := withCommand(in, cmd)
			return claudeAnswer("allow", "cordon: the command runs confined (cordon run)", u), err
		},
	},
	"codex": {
		event:   "PreToolUse",
		tools:   codexTools,
		rewrite: true,
		deny:    func(r string) any { return claudeAnswer("deny", r, nil) },
		rewriteTo: func(in map[string]json.RawMessage, cmd any) (any, error) {
			// Only what Codex's parser accepts with allow: a member
			// it does not take fails the hook, and a failed hook runs
			// the original command.
			u, err := withCommand(in, cmd)
			return claudeAnswer("allow", "", u), err
		},
	},
	"gemini": {
		event:   "BeforeTool",
		project: []string{"GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"},
		tools:   geminiTools,
		rewrite: true,
		allow:   func() any { return map[string]any{} },
		deny:    func(r string) any { return map[string]any{"decision": "deny", "reason": r} },
		rewriteTo: func(_ map[string]json.RawMessage, cmd any) (any, error) {
			// Gemini CLI merges hookSpecificOutput.tool_input over
			// the model's arguments.
			return map[string]any{"decision": "allow", "hookSpecificOutput": map[string]any{"tool_input": map[string]any{"command": cmd}}}, nil
		},
	},
	"cursor": {serveFn: serveCursor},
}

// Names lists the agents, sorted.
func Names() []string {
	var n []string
	for k := range agents {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

// serve answers one call of an agent with hook_event_name, tool_name and
// tool_input (all but Cursor).
func (a *protocol) serve(data []byte, env Env) (answer, error) {
	if a.serveFn != nil {
		return a.serveFn(data, env)
	}
	m, err := decodeObject(data, "the hook input")
	if err != nil {
		return answer{}, err
	}
	event, err := str(m, "hook_event_name")
	if err != nil {
		return answer{}, err
	}
	if event != a.event {
		return answer{}, fmt.Errorf("hook_event_name is %q, not %s: this hook serves %s only", event, a.event, a.event)
	}
	cwd, err := str(m, "cwd")
	if err != nil {
		return answer{}, err
	}
	name, err := str(m, "tool_name")
	if err != nil {
		return answer{}, err
	}
	input, err := decodeObject(m["tool_input"], "tool_input")
	if err != nil {
		return answer{}, err
	}
	t, ok := a.tools[name]
	if !ok {
		// A tool the hook does not decide: the setup's matchers do
		// not send it here; no decision.
		return a.noDecision(), nil
	}
	project := ""
	for _, v := range a.project {
		if project = env.getenv(v); project != "" {
			break
		}
	}
	ws, err := workspace(cwd, project)
	if err != nil {
		return answer{}, err
	}
	c := &call{env: env, cwd: filepath.Clean(cwd), ws: ws, tool: t, input: input}
	switch t.kind {
	case kindShell:
		var argv []string
		if raw := input["command"]; len(raw) > 0 && raw[0] == '[' {
			// An argv (a shell tool given as a list, as Codex's
			// local shell is): cordon run's argv before it, no
			// shell involved.
			if err := json.Unmarshal(raw, &argv); err != nil || len(argv) == 0 {
				return answer{}, fmt.Errorf("tool_input.command is neither a string nor a list of strings")
			}
			prefix := WrapArgv(env.Cordon, ws, nil)
			if len(argv) > len(prefix) && slices.Equal(argv[:len(prefix)], prefix) {
				return a.noDecision(), nil
			}
			body, err := a.rewriteTo(input, WrapArgv(env.Cordon, ws, argv))
			return answer{body}, err
		}
		cmd, err := str(input, "command")
		if err != nil {
			return answer{}, fmt.Errorf("tool_input.%w", err)
		}
		if cmd == "" {
			return answer{}, errNoShell
		}
		if IsWrapped(cmd, env.Cordon, ws) {
			return a.noDecision(), nil
		}
		body, err := a.rewriteTo(input, Wrap(env.Cordon, ws, cmd))
		return answer{body}, err
	case kindPatch:
		return a.decidePatch(c)
	}
	den, err := c.decide()
	if err != nil {
		return answer{}, err
	}
	if den != nil {
		return answer{a.deny(den.reason)}, nil
	}
	return a.noDecision(), nil
}

func (a *protocol) noDecision() answer {
	if a.allow == nil {
		return answer{}
	}
	return answer{a.allow()}
}

// decidePatch decides every file a Codex apply_patch adds, updates,
// deletes or moves to, as writes.
func (a *protocol) decidePatch(c *call) (answer, error) {
	body, err := str(c.input, "command")
	if err != nil {
		return answer{}, fmt.Errorf("tool_input.%w", err)
	}
	paths := patchPaths(body)
	if len(paths) == 0 {
		return answer{}, fmt.Errorf("the patch names no file")
	}
	d, err := c.env.Decider(c.ws, c.cwd)
	if err != nil {
		return answer{a.deny(fmt.Sprintf("cordon: the policy of workspace %s does not load: %s", c.ws, oneLine(err.Error())))}, nil
	}
	c.decider = d
	for _, p := range paths {
		den, err := c.decidePath(policy.OpWrite, p)
		if err != nil {
			return answer{}, err
		}
		if den != nil {
			return answer{a.deny(den.reason)}, nil
		}
	}
	return a.noDecision(), nil
}

// patchPaths are the files an apply_patch body names.
func patchPaths(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, h := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if p, ok := strings.CutPrefix(line, h); ok && strings.TrimSpace(p) != "" {
				out = append(out, strings.TrimSpace(p))
			}
		}
	}
	return out
}
