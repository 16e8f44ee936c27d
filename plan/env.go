package plan

import (
	"os"
	"sort"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
	"golang.org/x/sys/unix"
)

// buildEnv applies the environment allowlist: the tool caches (cacheEnv),
// then host values of the names in Env.Pass (a trailing "*" matches a
// prefix, as in LC_*), then Env.Set.
func buildEnv(p *policy.Policy, opts Options) []string {
	getenv := optsGetenv(opts)
	vals := cacheEnv(p, opts, getenv)
	if vals == nil {
		vals = map[string]string{}
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
	return env
}

// buildSpec turns resource limits into the rlimits the helper sets. Until
// cgroup v2 support exists they are per-process limits, except
// RLIMIT_NPROC, which counts all processes of the user.
func buildSpec(p *policy.Policy) Spec {
	s := Spec{Seccomp: "standard"}
	if p.Mode == policy.ModeStrict {
		s.Seccomp = "strict"
	}
	r := p.Resources
	add := func(name string, res int, v uint64) {
		s.Rlimits = append(s.Rlimits, Rlimit{Name: name, Resource: res, Value: v})
	}
	if r.MaxProcesses > 0 {
		add("RLIMIT_NPROC", unix.RLIMIT_NPROC, uint64(r.MaxProcesses))
	}
	if r.MaxMemoryMB > 0 {
		add("RLIMIT_DATA", unix.RLIMIT_DATA, uint64(r.MaxMemoryMB)<<20)
	}
	if r.MaxCPUSeconds > 0 {
		add("RLIMIT_CPU", unix.RLIMIT_CPU, uint64(r.MaxCPUSeconds))
	}
	if r.MaxFileSizeMB > 0 {
		add("RLIMIT_FSIZE", unix.RLIMIT_FSIZE, uint64(r.MaxFileSizeMB)<<20)
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
