// Package policy holds cordon's Policy: the plain, validated, fully expanded
// description of what a confined command may do. Every backend, the workspace
// file API and the MCP server read the same Policy; nothing else decides.
//
// A Policy is built from layers (see Load): a built-in profile, the user's
// config file, --config files, command-line flags, and finally files inside
// the workspace, which may only tighten it.
//
// It owns the policy's data, its loading and checks, the protected and
// denied rules, and the decision for one access (Decider). It must not
// enforce anything or start anything: backends read a Policy, never the
// reverse.
package policy

import (
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/gitconfig"
)

// Mode is how strictly a policy is enforced.
type Mode string

// The sandbox modes (--mode, sandbox.mode).
const (
	// ModeOff runs the command without any confinement.
	ModeOff Mode = "off"
	// ModePermissive lets through what the filesystem and network rules
	// would deny and records it (the violation monitor); what makes code
	// run later on the host stays guarded, as in every mode but off.
	ModePermissive Mode = "permissive"
	// ModeStandard enforces the policy.
	ModeStandard Mode = "standard"
	// ModeStrict enforces the policy, drops the profile's home-directory
	// reads, forces the network off unless hosts are explicitly allowed
	// (only those stay) or loopback mode is asked for, and refuses to run
	// when any rule cannot be enforced.
	ModeStrict Mode = "strict"
)

// The values of Policy.OnViolation. Every one enforces the policy; warn and
// log also turn the violation monitor on.
const (
	// OnViolationBlock denies, and says nothing more than the command's
	// own error.
	OnViolationBlock = "block"
	// OnViolationWarn denies, and prints each distinct denial with its
	// rule at the end of the run.
	OnViolationWarn = "warn"
	// OnViolationLog denies, and records each distinct denial in the
	// audit log only.
	OnViolationLog = "log"
	// OnViolationAsk denies as block does, except where a person is at
	// the terminal: a connection to a host no rule names is held while
	// cordon asks whether to allow it (cordon run --ask; see package
	// internal/ask). It is the weakest: a file the sandbox could write
	// may not set it.
	OnViolationAsk = "ask"
)

// NetMode is the network policy of a sandbox.
type NetMode string

// Network modes.
const (
	// NetDeny gives the sandbox no network at all (an empty network namespace).
	NetDeny NetMode = "deny"
	// NetOpen shares the host network.
	NetOpen NetMode = "open"
	// NetLoopback gives the sandbox a network namespace of its own with
	// only its own loopback, and the forwarded ports of the host's.
	NetLoopback NetMode = "loopback"
	// NetFiltered gives the sandbox a network namespace of its own whose
	// only way out is cordon's proxy, which allows the hosts in
	// Network.Allow but those in Network.Deny.
	NetFiltered NetMode = "filtered"
)

// Policy is the effective, validated policy. All paths are absolute and
// cleaned; ${VAR} and ~ have been expanded.
type Policy struct {
	// Mode is the enforcement mode.
	Mode Mode `yaml:"mode" json:"mode"`
	// Profile is the name of the built-in profile the policy started from.
	Profile string `yaml:"profile" json:"profile"`
	// Workspace is the project directory (absolute, symlinks resolved).
	Workspace string `yaml:"workspace" json:"workspace"`
	// HomeWorkspace says that the workspace is the home directory, an
	// ancestor of it, or /, which Load refuses unless asked not to
	// (--allow-home-workspace).
	HomeWorkspace bool `yaml:"home_workspace,omitempty" json:"home_workspace,omitempty"`
	// Read lists paths the command may read (an allowlist). Write paths are
	// readable too and need not be repeated here.
	Read []string `yaml:"read" json:"read"`
	// Write lists paths the command may write.
	Write []string `yaml:"write" json:"write"`
	// SandboxCache is the workspace's ${SANDBOX_CACHE} (see the function
	// of that name). When it is in Write, the plan points the tools'
	// caches (Go, npm, pip) there.
	SandboxCache string `yaml:"-" json:"-"`
	// Deny lists paths or globs that are neither readable nor writable, even
	// inside Read or Write. Relative globs such as "**/.env" match inside
	// the workspace, every writable root and every read path but the
	// system directories and tool caches (see DenyGlobReadRoots and
	// DenyGlobSkipped); absolute entries match themselves.
	Deny []string `yaml:"deny" json:"deny"`
	// DenyWrite lists paths that stay read-only even inside Write.
	DenyWrite []string `yaml:"deny_write" json:"deny_write"`
	// Guarded are the deny_write paths that no backend may leave writable,
	// because they decide later runs or run code later (cordon's own
	// config, HomeProtected): a backend that cannot keep one read-only
	// inside a writable root refuses to run.
	Guarded []string `yaml:"-" json:"-"`
	// Repo is what the policy adds (to Read and Write) for the git
	// repository the workspace belongs to, when git inside needs paths
	// outside the workspace (a sub-directory of a repository, a linked
	// worktree, a submodule checkout), or why it adds nothing; nil when
	// nothing is needed.
	Repo *Repo `yaml:"repository,omitempty" json:"repository,omitempty"`
	// GitReads are the paths added to Read because git looks there for
	// the workspace's repository and no read path showed them: the hooks
	// directory core.hooksPath names and the config files include.path
	// names, in the home (~/.githooks, ~/.gitconfig.local) or elsewhere,
	// so that git inside runs the hooks and reads the settings it does
	// outside (see grantGitLooks).
	GitReads []string `yaml:"git_reads,omitempty" json:"git_reads,omitempty"`
	// GitCommonDir is the common git directory of the workspace's
	// repository, if it belongs to one: runs in workspaces of one
	// repository share a lock on the placeholders they mount there.
	GitCommonDir string `yaml:"-" json:"-"`
	// GitEnv is what, beside a repository's own files, decides where git
	// looks for hooks and which config files it reads (the home directory,
	// $XDG_CONFIG_HOME, GIT_CONFIG_SYSTEM, GIT_CONFIG_GLOBAL,
	// GIT_CONFIG_NOSYSTEM), as Load found it on the host: every backend
	// and the file API protect, with GitLooks, the hooks directories and
	// included config files git will use.
	GitEnv gitconfig.Env `yaml:"-" json:"-"`
	// Protected lists paths, relative to each writable root, that stay
	// read-only whether or not they exist (.git/hooks, .bashrc, ...).
	Protected []string `yaml:"protected" json:"protected"`
	// Network is the network policy.
	Network Network `yaml:"network" json:"network"`
	// UnixSockets lists unix socket paths the command may connect to.
	UnixSockets []string `yaml:"unix_sockets" json:"unix_sockets"`
	// Resources are the resource limits; zero means no limit.
	Resources Resources `yaml:"resources" json:"resources"`
	// Env is the environment allowlist: names passed from the host, and
	// names set to a fixed value.
	Env Env `yaml:"env" json:"env"`
	// Timeout kills the whole command tree when it elapses; zero means none.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// Backend names the enforcement backend: auto, bwrap, landlock,
	// seatbelt or none.
	Backend backend.Name `yaml:"backend" json:"backend"`
	// BwrapPath is the absolute path of the bubblewrap binary.
	BwrapPath string `yaml:"bwrap_path" json:"bwrap_path"`
	// OnViolation is block, warn, log or ask (see the OnViolation constants).
	OnViolation string `yaml:"on_violation" json:"on_violation"`
	// Audit configures the audit log.
	Audit Audit `yaml:"audit" json:"audit"`
	// Credentials are the secrets the command can use through the
	// host-side proxy without seeing them (see Credential); their hosts
	// are allowed and the network is filtered.
	Credentials []Credential `yaml:"credentials,omitempty" json:"credentials,omitempty"`
	// Warnings explain flags that do not do what they seem to (a relative
	// or missing --allow-write, an --allow-read of a denied path), one
	// line each; the CLI prints them as "cordon: warning: ...".
	Warnings []string `yaml:"-" json:"-"`
}

// Network is the network part of a Policy. Its entries are valid
// netrule entries (netrule.Compile accepts Allow and Deny together).
type Network struct {
	// Mode is deny, open, loopback or filtered. An open network with deny
	// entries is filtered, with Allow ["*"].
	Mode NetMode `yaml:"mode" json:"mode"`
	// Allow lists HOST[:PORT] patterns, IP literals and CIDRs (filtered
	// mode only; empty otherwise).
	Allow []string `yaml:"allow" json:"allow"`
	// Deny lists entries that are always refused; deny beats allow.
	Deny []string `yaml:"deny" json:"deny"`
	// ForwardPorts lists host loopback TCP ports reachable inside at the
	// same number (loopback and filtered modes).
	ForwardPorts []int `yaml:"forward_ports" json:"forward_ports"`
	// Sources says where each entry of Allow and Deny comes from: a flag,
	// a file and line, a profile, or, for the ci profile, the host tool
	// setting that names the host. cordon policy prints them as comments.
	Sources []NetSource `yaml:"-" json:"sources,omitempty"`
	// NotAllowed lists hosts the host's tools would use that the ci
	// profile leaves out, and why (a repository's own .npmrc, a git
	// remote no host-side file confirms, an entry a deny entry covers).
	NotAllowed []NetSource `yaml:"not_allowed,omitempty" json:"not_allowed,omitempty"`
	// Denied says, when the network is denied, which setting denied it
	// and how a host could be allowed, for the line cordon prints after
	// a run about each name the command looked up; nil otherwise.
	Denied *NetDenied `yaml:"-" json:"-"`
	// AllowForwards are the ports of the allow entries you wrote yourself
	// (not a profile's, not the ci profile's tool registries) that name
	// one port, from MinForwardPort, of a loopback address or localhost
	// (127.0.0.1:5432, [::1]:8080, localhost:3000): filtered mode forwards
	// them as --forward-port does, so that every client reaches them,
	// whatever NO_PROXY says. Not in ForwardPorts: a run does not refuse
	// one nothing listens on yet.
	AllowForwards []int `yaml:"-" json:"-"`
	// PrivateNames are the host names of the ci profile's allow entries
	// that your own tool configuration names as a registry (not git
	// remotes): the proxy lets each of them, and only them, resolve to a
	// private address (RFC 1918, fc00::/7), a company mirror on 10.x.
	// Loopback, link-local and metadata addresses stay refused.
	PrivateNames []string `yaml:"-" json:"-"`
}

// NetDenied is what denied a network, for the advice cordon gives about
// a host the command wanted.
type NetDenied struct {
	// By names the setting, e.g. "--net deny", "the minimal profile's
	// network: deny" or strict mode.
	By string
	// Flag is the setting on the command line that denied it ("--net
	// deny"), which an --allow-net replaces, or "" when an --allow-net
	// added to the command line is enough.
	Flag string
	// Locked says that a file the sandbox could write denied it (a
	// workspace's .cordon.yaml), which no flag loosens.
	Locked bool
}

// Advice says how to allow host on a network that d denied: the
// --allow-net entry to add ("" when none would do) and the rest of the
// advice.
func (d *NetDenied) Advice(host string) (allow, hint string) {
	switch {
	case d == nil:
		return "", ""
	case d.Locked:
		return "", "a file in the workspace denies the network (" + d.By + "), and such a file may only tighten: change it there, outside the sandbox"
	case d.Flag != "":
		return host, "in place of " + d.Flag
	}
	return host, ""
}

// Resources are resource limits. Zero means unlimited.
type Resources struct {
	// MaxProcesses limits the number of processes.
	MaxProcesses int `yaml:"max_processes" json:"max_processes"`
	// MaxMemoryMB limits memory, in MiB.
	MaxMemoryMB int `yaml:"max_memory_mb" json:"max_memory_mb"`
	// MaxCPUSeconds limits CPU time, in seconds.
	MaxCPUSeconds int `yaml:"max_cpu_seconds" json:"max_cpu_seconds"`
	// MaxFileSizeMB limits the size of any file written, in MiB.
	MaxFileSizeMB int `yaml:"max_file_size_mb" json:"max_file_size_mb"`
}

// Env is the environment allowlist.
type Env struct {
	// Pass lists variable names (or prefixes ending in "*", e.g. "LC_*")
	// whose host values are passed through.
	Pass []string `yaml:"pass" json:"pass"`
	// Set maps names to fixed values; it wins over Pass.
	Set map[string]string `yaml:"set" json:"set"`
}

// Audit configures the audit log.
type Audit struct {
	// Enabled turns the audit log on.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// LogFile is the absolute path of the JSON-lines audit log.
	LogFile string `yaml:"log_file" json:"log_file"`
	// LogAllowed records allowed operations too.
	LogAllowed bool `yaml:"log_allowed" json:"log_allowed"`
	// LogDenied records denied operations.
	LogDenied bool `yaml:"log_denied" json:"log_denied"`
	// MaxSizeMB is the size at which the log is rotated to LogFile+".1"
	// (the older generation is then removed); 0 never rotates.
	MaxSizeMB int `yaml:"max_size_mb" json:"max_size_mb"`
}

// MaxSize is MaxSizeMB in bytes, for audit.Open.
func (a Audit) MaxSize() int64 { return int64(a.MaxSizeMB) << 20 }
