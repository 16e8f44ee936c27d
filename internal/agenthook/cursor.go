package agenthook

import (
	"encoding/json"
	"fmt"
)

// serveCursor answers Cursor's beforeShellExecution and beforeReadFile
// hooks. Cursor's shell hook can allow, deny or ask, not rewrite: a
// command that is not already exactly the confined one (IsWrapped) is
// refused, and the refusal hands the agent the confined command to run
// instead. A file read is decided as the other agents' are.
func serveCursor(data []byte, env Env) (answer, error) {
	m, err := decodeObject(data, "the hook input")
	if err != nil {
		return answer{}, err
	}
	event, err := str(m, "hook_event_name")
	if err != nil {
		return answer{}, err
	}
	cwd, err := str(m, "cwd")
	if err != nil {
		return answer{}, err
	}
	var roots []string
	if raw, ok := m["workspace_roots"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &roots); err != nil {
			return answer{}, fmt.Errorf("workspace_roots is not a list of strings")
		}
	}
	project := ""
	if len(roots) > 0 {
		project = roots[0]
	}
	if cwd == "" {
		cwd = project
	}
	ws, err := workspace(cwd, project)
	if err != nil {
		return answer{}, err
	}
	allow := answer{map[string]any{"permission": "allow"}}
	deny := func(r string) answer {
		return answer{map[string]any{"permission": "deny", "user_message": r, "agent_message": r}}
	}
	switch event {
	case "beforeShellExecution":
		cmd, err := str(m, "command")
		if err != nil {
			return answer{}, err
		}
		if cmd == "" {
			return answer{}, errNoShell
		}
		if IsWrapped(cmd, env.Cordon, ws) {
			return allow, nil
		}
		return deny("cordon: Cursor's hook cannot rewrite a command, so it runs only confined: run exactly this command instead: " + Wrap(env.Cordon, ws, cmd)), nil
	case "beforeReadFile":
		c := &call{env: env, cwd: cwd, ws: ws, tool: tool{kind: kindRead, fields: []string{"file_path"}}, input: m}
		den, err := c.decide()
		if err != nil {
			return answer{}, err
		}
		if den != nil {
			return deny(den.reason), nil
		}
		return allow, nil
	}
	return answer{}, fmt.Errorf("hook_event_name is %q: this hook serves beforeShellExecution and beforeReadFile", event)
}
