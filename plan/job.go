package plan

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/limits"
	"github.com/cordon-sandbox/cordon/policy"
)

// JobWarning is backend.JobWarning: the first degraded rule of every Job
// plan, which cordon run says as a warning.
const JobWarning = backend.JobWarning

// buildJob is the plan of the Windows Job Object backend: the command runs
// on the host, unconfined for files and network, in a Job Object that
// enforces the process, memory and CPU limits and kills the whole tree
// when the run ends. Strict mode refuses it: it cannot enforce the
// policy's file and network rules.
func buildJob(p *policy.Policy, command []string, opts Options) (*Plan, error) {
	if len(command) == 0 || command[0] == "" {
		return nil, errors.New("empty command name")
	}
	if p.Mode == policy.ModeStrict {
		return nil, errors.New("strict mode refuses the Windows Job Object backend: files and network are not confined on Windows; use --mode standard to run with process, memory and CPU limits only, or run cordon on Linux or macOS")
	}
	path, err := exec.LookPath(command[0])
	if err != nil {
		path = command[0]
	}
	r := p.Resources
	pl := &Plan{
		Backend:  backend.Job,
		Argv:     append([]string{path}, command[1:]...),
		Command:  command,
		Env:      os.Environ(),
		Dir:      opts.Cwd,
		Timeout:  p.Timeout,
		Limits:   limits.Limits{MaxProcesses: r.MaxProcesses, MaxMemoryMB: r.MaxMemoryMB, MaxCPUSeconds: r.MaxCPUSeconds},
		Degraded: []string{JobWarning},
	}
	if pl.Dir == "" {
		pl.Dir = p.Workspace
	}
	// Windows programs need much of the host's environment (SystemRoot,
	// TEMP, APPDATA, PATHEXT, ...), and no allowlist for it has been run
	// on Windows: the host's passes whole, and the run says so.
	pl.Degraded = append(pl.Degraded, "environment: the command gets the host's whole environment on Windows; the policy's allowlist (sandbox.env, --env) is not applied")
	if r.MaxFileSizeMB > 0 {
		pl.Degraded = append(pl.Degraded, fmt.Sprintf("max file size (%d MiB): Windows has no per-process file size limit; not enforced", r.MaxFileSizeMB))
	}
	return pl, nil
}
