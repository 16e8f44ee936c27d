package plan

import (
	"fmt"
	"github.com/cordon-sandbox/cordon/backend"
	"os"
	"os/exec"

	"github.com/cordon-sandbox/cordon/policy"
)

// buildNone is the plan for mode off: the command runs unconfined, with the
// full host environment, as it would without cordon. Only the timeout
// still applies.
func buildNone(p *policy.Policy, command []string, opts Options) (*Plan, error) {
	path, err := exec.LookPath(command[0])
	if err != nil {
		// Keep the name: the launcher reports 127 like a shell would.
		path = command[0]
	}
	pl := &Plan{
		Backend:  backend.None,
		Argv:     append([]string{path}, command[1:]...),
		Command:  command,
		Env:      os.Environ(),
		Dir:      opts.Cwd,
		Degraded: []string{"mode off: nothing is confined (files, network, processes and resource limits are the host's)"},
	}
	pl.Timeout = p.Timeout
	if pl.Dir == "" {
		pl.Dir = p.Workspace
	}
	if len(command[0]) == 0 {
		return nil, fmt.Errorf("empty command name")
	}
	return pl, nil
}
