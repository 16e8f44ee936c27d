package plan

import (
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/enforce/seccomp"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/host/toolenv"
	"github.com/cordon-sandbox/cordon/policy"
)

// buildEnv applies the environment allowlist: the host's non-secret tool
// settings (toolenv), the tool caches (cacheEnv), then host values of the
// names in Env.Pass (a trailing "*" matches a prefix, as in LC_*), then
// Env.Set. It also returns the host settings that were not carried, one
// line each, leaving out those whose variable the policy passes or sets.
func buildEnv(p *policy.Policy, opts Options) ([]string, []string) {
	getenv := optsGetenv(opts)
	tools := toolenv.Collect(toolenv.Host{Home: opts.Home, Workspace: p.Workspace, Getenv: getenv, NetworkOpen: p.Network.Mode == policy.NetOpen})
	vals := tools.Env
	for k, v := range cacheEnv(p, opts, getenv, tools.Env["GOPROXY"]) {
		vals[k] = v
	}
	for _, name := range p.Env.Pass {
		if prefix, ok := strings.CutSuffix(name, "*"); ok {
			for _, kv := range os.Environ() {
				k, _, _ := strings.Cut(kv, "=")
				if strings.HasPrefix(k, prefix) {
					if v, ok := getenv(k); ok {
						vals[k] = v
					}
				}
			}
			continue
		}
		if v, ok := getenv(name); ok {
			vals[name] = v
		}
	}
	for k, v := range p.Env.Set {
		vals[k] = v
	}
	env := make([]string, 0, len(vals))
	for k, v := range vals {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	var credVars []string
	for _, c := range p.Credentials {
		credVars = append(credVars, CredentialVars(c)...)
	}
	var dropped []string
	for _, d := range tools.Dropped {
		if _, set := p.Env.Set[d.Var]; set || (d.Var != "" && passes(p.Env.Pass, d.Var)) || slices.Contains(credVars, d.Var) {
			continue
		}
		dropped = append(dropped, d.String())
	}
	return env, dropped
}

// passes reports whether the allowlist pass passes the variable name.
func passes(pass []string, name string) bool {
	for _, n := range pass {
		if prefix, ok := strings.CutSuffix(n, "*"); ok && strings.HasPrefix(name, prefix) || n == name {
			return true
		}
	}
	return false
}

// buildSpec turns resource limits into the rlimits the helper sets. Until
// cgroup v2 support exists they are per-process limits, except
// RLIMIT_NPROC, which counts all processes of the user.
func buildSpec(p *policy.Policy) helperspec.Spec {
	// Unless the network is open, no socket of a family that neither a
	// network namespace nor Landlock confines (AF_VSOCK reaches the
	// hypervisor's host, AF_SMC connects over TCP inside the kernel).
	mode, _ := netMode(p)
	s := helperspec.Spec{Seccomp: &seccomp.Options{Strict: p.Mode == policy.ModeStrict, DenyOtherFamilies: mode != policy.NetOpen}}
	r := p.Resources
	add := func(name string, res int, v uint64) {
		s.Rlimits = append(s.Rlimits, helperspec.Rlimit{Name: name, Resource: res, Value: v})
	}
	if r.MaxProcesses > 0 {
		add("RLIMIT_NPROC", rlimitNPROC, uint64(r.MaxProcesses))
	}
	if r.MaxMemoryMB > 0 {
		add("RLIMIT_DATA", rlimitDATA, uint64(r.MaxMemoryMB)<<20)
	}
	if r.MaxCPUSeconds > 0 {
		add("RLIMIT_CPU", rlimitCPU, uint64(r.MaxCPUSeconds))
	}
	if r.MaxFileSizeMB > 0 {
		add("RLIMIT_FSIZE", rlimitFSIZE, uint64(r.MaxFileSizeMB)<<20)
	}
	return s
}

// optsGetenv is opts.Getenv, or os.LookupEnv when it is nil.
func optsGetenv(opts Options) func(string) (string, bool) {
	if opts.Getenv != nil {
		return opts.Getenv
	}
	return os.LookupEnv
}

// buildEnvTmp is buildEnv for a backend whose temporary directory is tmp on
// the host (no private /tmp): TMPDIR names it.
func buildEnvTmp(p *policy.Policy, opts Options, tmp string) ([]string, []string) {
	env, dropped := buildEnv(p, opts)
	for i, e := range env {
		if strings.HasPrefix(e, "TMPDIR=") {
			env[i] = "TMPDIR=" + tmp
		}
	}
	return env, dropped
}
