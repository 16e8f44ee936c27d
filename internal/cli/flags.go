package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/suggest"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// policyFlags are the flags shared by every command that builds a policy.
type policyFlags struct {
	profile, sandboxProfile string
	mode, sandbox           string
	noSandbox               bool
	configs                 []string
	workspace               string
	allowHomeWorkspace      bool
	allowRead, allowWrite   []string
	deny, denyWrite         []string
	net                     string
	allowNet, denyNet       []string
	forwardPorts            []string
	unixSockets             []string
	maxMemory, maxProcs     string
	maxCPU, maxFileSize     string
	timeout                 string
	env                     []string
	credentials             []string
	backend                 string
	auditLog                string
	ask                     bool
	// auditLogUsed is set by commands that write the audit log.
	auditLogUsed bool
	// readOnly is set by commands that only read (policy, violations):
	// they run nothing in the workspace, so a home workspace is not
	// refused (the policy then says HomeWorkspace).
	readOnly bool
}

func (f *policyFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.profile, "profile", "", "profile: minimal, development, ci or untrusted (default development)")
	fs.StringVar(&f.sandboxProfile, "sandbox-profile", "", "alias of --profile")
	fs.StringVar(&f.mode, "mode", "", "mode: off, permissive (files and network not enforced, what the policy would deny recorded), standard or strict (default standard)")
	fs.StringVar(&f.sandbox, "sandbox", "", "alias of --mode")
	fs.BoolVar(&f.noSandbox, "no-sandbox", false, "same as --mode off: run unconfined")
	fs.StringArrayVar(&f.configs, "config", nil, "YAML policy file (repeatable, later wins)")
	fs.StringVar(&f.workspace, "workspace", "", "the project directory (default: the current directory)")
	fs.BoolVar(&f.allowHomeWorkspace, "allow-home-workspace", false, "accept a workspace that is your home directory, an ancestor of it, or / (refused otherwise: a command there could plant files that run later)")
	fs.StringArrayVar(&f.allowRead, "allow-read", nil, "also allow reading PATH (repeatable)")
	fs.StringArrayVar(&f.allowWrite, "allow-write", nil, "also allow writing PATH (repeatable)")
	fs.StringArrayVar(&f.deny, "deny", nil, "deny reading and writing PATH or glob (repeatable)")
	fs.StringArrayVar(&f.denyWrite, "deny-write", nil, "keep PATH read-only (repeatable)")
	fs.StringVar(&f.net, "net", "", "network: deny (none), open (the host's) or loopback (the sandbox's own loopback and --forward-port ports)")
	fs.StringArrayVar(&f.allowNet, "allow-net", nil, "allow HOST[:PORT], *.DOMAIN, IP or CIDR (repeatable; makes the network filtered: only these, through cordon's proxy)")
	fs.StringArrayVar(&f.denyNet, "deny-net", nil, "deny HOST[:PORT], *.DOMAIN, IP or CIDR (repeatable; deny beats allow; with an open network: every host but these)")
	fs.StringArrayVar(&f.forwardPorts, "forward-port", nil, "make the host's loopback TCP PORT (1024-65535) reachable inside at the same number (repeatable; loopback and filtered networks; with --net deny, nothing but these)")
	fs.StringArrayVar(&f.unixSockets, "allow-unix-socket", nil, "allow connecting to the unix socket PATH (repeatable)")
	fs.StringVar(&f.maxMemory, "max-memory", "", "memory limit in MB")
	fs.StringVar(&f.maxProcs, "max-procs", "", "process limit")
	fs.StringVar(&f.maxCPU, "max-cpu", "", "CPU time limit in seconds")
	fs.StringVar(&f.maxFileSize, "max-file-size", "", "largest file the command may write, in MB")
	fs.StringVar(&f.timeout, "timeout", "", "kill the whole command tree after DURATION (e.g. 30s, 5m; a bare number is seconds)")
	fs.StringArrayVar(&f.env, "env", nil, "pass NAME from the environment, or set NAME=VALUE (repeatable)")
	fs.StringArrayVar(&f.credentials, "credential", nil, "let the command use the credential NAME without seeing it: a preset (github, npm, pypi) or one of sandbox.credentials in your config (repeatable; the network then goes through cordon's proxy)")
	fs.StringVar(&f.backend, "backend", "", "backend: auto, bwrap, landlock (Linux), seatbelt (macOS), job (Windows: limits only) or none")
	fs.StringVar(&f.auditLog, "audit-log", "", "audit log FILE (JSON lines)")
	fs.BoolVar(&f.ask, "ask", false, "on a terminal, ask before refusing a host or a file no rule names: once, for this workspace (saved in your user config) or deny (on_violation: ask)")
}

// layer turns the flags that were set into a config.Layer.
func (f *policyFlags) layer(cmd *cobra.Command) (*config.Layer, error) {
	l := config.NewFlags()
	ch := cmd.Flags().Changed
	enum := func(flag, val string, allowed []string) (*string, error) {
		for _, a := range allowed {
			if val == a {
				return config.Ptr(val), nil
			}
		}
		hint := ""
		if s := suggest.Closest(val, allowed); s != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", s)
		}
		return nil, fmt.Errorf("%s %q: unknown value%s; use one of %s", flag, val, hint, strings.Join(allowed, ", "))
	}
	var err error
	profileFlag, profile := "--profile", f.profile
	if ch("sandbox-profile") {
		if ch("profile") && f.profile != f.sandboxProfile {
			return nil, fmt.Errorf("--profile %q and --sandbox-profile %q disagree; give one of them", f.profile, f.sandboxProfile)
		}
		profileFlag, profile = "--sandbox-profile", f.sandboxProfile
	}
	if ch("profile") || ch("sandbox-profile") {
		if l.Profile, err = enum(profileFlag, profile, config.ProfileNames); err != nil {
			return nil, err
		}
		l.SetWhere(config.KeyProfile, profileFlag)
	}
	modeFlag, mode, modeSet := "--mode", f.mode, ch("mode")
	if ch("sandbox") {
		if modeSet && f.mode != f.sandbox {
			return nil, fmt.Errorf("--mode %q and --sandbox %q disagree; give one of them", f.mode, f.sandbox)
		}
		modeFlag, mode, modeSet = "--sandbox", f.sandbox, true
	}
	if f.noSandbox {
		if modeSet && mode != "off" {
			return nil, fmt.Errorf("--no-sandbox and %s %s disagree; give one of them", modeFlag, mode)
		}
		modeFlag, mode, modeSet = "--no-sandbox", "off", true
	}
	if modeSet {
		if l.Mode, err = enum(modeFlag, mode, config.Modes); err != nil {
			return nil, err
		}
		l.SetWhere(config.KeyMode, modeFlag)
	}
	l.Filesystem.Read = f.allowRead
	l.Filesystem.Write = f.allowWrite
	l.Filesystem.Deny = f.deny
	l.Filesystem.DenyWrite = f.denyWrite
	if ch("net") {
		if l.Network.Mode, err = enum("--net", f.net, config.NetworkModes); err != nil {
			return nil, err
		}
	}
	l.Network.Allow = f.allowNet
	l.Network.Deny = f.denyNet
	for _, p := range f.forwardPorts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("--forward-port %q: give a TCP port number from 1 to 65535", p)
		}
		l.Network.ForwardPorts = append(l.Network.ForwardPorts, n)
	}
	l.UnixSockets = f.unixSockets
	ints := []struct {
		name, val string
		dst       **int
		unit      string
	}{
		{"max-memory", f.maxMemory, &l.Resources.MaxMemoryMB, "megabytes"},
		{"max-procs", f.maxProcs, &l.Resources.MaxProcesses, "processes"},
		{"max-cpu", f.maxCPU, &l.Resources.MaxCPUSeconds, "seconds"},
		{"max-file-size", f.maxFileSize, &l.Resources.MaxFileSizeMB, "megabytes"},
	}
	for _, in := range ints {
		if !ch(in.name) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(in.val))
		if err != nil {
			return nil, fmt.Errorf("--%s %q: give a whole number of %s", in.name, in.val, in.unit)
		}
		*in.dst = config.Ptr(n)
	}
	if ch("timeout") {
		d, err := parseTimeout(f.timeout)
		if err != nil {
			return nil, err
		}
		l.Timeout = &d
	}
	l.Env = f.env
	for _, c := range f.credentials {
		l.Credentials = append(l.Credentials, config.Credential{Name: config.Ptr(c)})
	}
	if ch("backend") {
		if l.Backend, err = enum("--backend", f.backend, config.Backends); err != nil {
			return nil, err
		}
	}
	if ch("ask") && f.ask {
		l.OnViolation = config.Ptr(policy.OnViolationAsk)
	}
	if ch("audit-log") {
		if !f.auditLogUsed {
			return nil, fmt.Errorf("--audit-log: cordon %s writes no audit records (cordon run and cordon mcp do); remove the flag", cmd.Name())
		}
		if f.auditLog == "" {
			return nil, fmt.Errorf("--audit-log: give a file path")
		}
		l.Audit.LogFile = config.Ptr(f.auditLog)
	}
	return l, nil
}

// parseTimeout accepts a Go duration ("90s", "5m") or a number of seconds.
func parseTimeout(s string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if n <= 0 || n > 1e9 {
			return 0, fmt.Errorf("--timeout %q: give a positive duration such as 30s or 5m", s)
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--timeout %q: give a positive duration such as 30s or 5m", s)
	}
	return d, nil
}

// host collects the facts about this machine that policies expand.
func host() (policy.Host, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return policy.Host{}, fmt.Errorf("finding your home directory: %w (set HOME)", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return policy.Host{}, fmt.Errorf("finding the current directory: %w", err)
	}
	return policy.Host{
		Home:          home,
		Cwd:           cwd,
		XDGConfigHome: os.Getenv("XDG_CONFIG_HOME"),
		XDGStateHome:  os.Getenv("XDG_STATE_HOME"),
		Getenv:        os.LookupEnv,
		Environ:       os.Environ,
	}, nil
}

// loadPolicy builds the effective policy from the flags.
func (f *policyFlags) loadPolicy(cmd *cobra.Command) (*policy.Policy, policy.Host, error) {
	h, err := host()
	if err != nil {
		return nil, h, err
	}
	l, err := f.layer(cmd)
	if err != nil {
		return nil, h, err
	}
	p, err := policy.Load(policy.Options{Host: h, Workspace: f.workspace, ConfigFiles: f.configs, Flags: l, AllowHomeWorkspace: f.allowHomeWorkspace || f.readOnly})
	if err != nil {
		return nil, h, err
	}
	for _, w := range p.Warnings {
		fmt.Fprintln(cmd.ErrOrStderr(), "cordon: warning: "+w)
	}
	return p, h, nil
}
