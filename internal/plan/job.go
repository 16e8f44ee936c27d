package plan

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
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
		Env:      jobEnv(p, opts),
		Dir:      opts.Cwd,
		Timeout:  p.Timeout,
		Limits:   limits.Limits{MaxProcesses: r.MaxProcesses, MaxMemoryMB: r.MaxMemoryMB, MaxCPUSeconds: r.MaxCPUSeconds},
		Degraded: []string{JobWarning},
	}
	if pl.Dir == "" {
		pl.Dir = p.Workspace
	}
	if r.MaxFileSizeMB > 0 {
		pl.Degraded = append(pl.Degraded, fmt.Sprintf("max file size (%d MiB): Windows has no per-process file size limit; not enforced", r.MaxFileSizeMB))
	}
	return pl, nil
}

// WindowsEnv are the variables of the Windows host that every Job run
// gets beside the policy's allowlist: what Windows itself and its
// programs need to start and find their files (the system and program
// directories, the user's profile and application data, TEMP, PATHEXT,
// the processor). None holds a credential.
var WindowsEnv = []string{
	"ALLUSERSPROFILE", "APPDATA", "COMPUTERNAME", "ComSpec", "CommonProgramFiles",
	"CommonProgramFiles(x86)", "CommonProgramW6432", "DriverData", "HOMEDRIVE", "HOMEPATH",
	"LOCALAPPDATA", "NUMBER_OF_PROCESSORS", "OS", "PATHEXT", "PROCESSOR_ARCHITECTURE",
	"PROCESSOR_IDENTIFIER", "PROCESSOR_LEVEL", "PROCESSOR_REVISION", "PUBLIC", "ProgramData",
	"ProgramFiles", "ProgramFiles(x86)", "ProgramW6432", "PSModulePath", "SystemDrive",
	"SystemRoot", "TEMP", "TMP", "USERDOMAIN", "USERNAME", "USERPROFILE", "windir",
}

// jobEnv is the environment of a Job run: the host's WindowsEnv, then the
// policy's allowlist as on the other backends (Env.Pass, a trailing "*"
// matching a prefix, then Env.Set). Unlike theirs, the host's tool
// settings and caches are not rewritten: the command runs in the host's
// own home, where its tools find their settings themselves. Names are
// compared without case, as Windows does; the host's spelling is kept.
func jobEnv(p *policy.Policy, opts Options) []string {
	getenv := optsGetenv(opts)
	vals := map[string]string{} // by upper-case name: NAME=value as given
	add := func(name string) {
		if v, ok := getenv(name); ok {
			vals[strings.ToUpper(name)] = name + "=" + v
		}
	}
	for _, name := range WindowsEnv {
		add(name)
	}
	for _, name := range p.Env.Pass {
		prefix, ok := strings.CutSuffix(name, "*")
		if !ok {
			add(name)
			continue
		}
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			if k != "" && strings.HasPrefix(strings.ToUpper(k), strings.ToUpper(prefix)) {
				add(k)
			}
		}
	}
	for k, v := range p.Env.Set {
		vals[strings.ToUpper(k)] = k + "=" + v
	}
	env := make([]string, 0, len(vals))
	for _, kv := range vals {
		env = append(env, kv)
	}
	sort.Strings(env)
	return env
}
