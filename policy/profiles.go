package policy

import (
	"fmt"
	"strings"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/config"
)

// Names of the built-in profiles. Every profile also carries SystemReads,
// DefaultDeny, DefaultEnvPass (plus TMPDIR=/tmp), the Protected list and the
// audit defaults; the differences are below.
const (
	// ProfileMinimal reads the system directories and the workspace and
	// writes nothing: the workspace is read-only and /tmp is private and
	// read-only. Network: deny. Limits: 64 processes, 1024 MB memory,
	// 60 s CPU, 64 MB per file.
	ProfileMinimal = "minimal"
	// ProfileDevelopment (the default) reads the system directories, the
	// workspace and the home directory's tool caches and configs listed in
	// DevelopmentHomeReads; writes the workspace and /tmp. Network: open.
	// Limits: 1024 processes, 8192 MB memory, no CPU limit, 4096 MB per
	// file.
	ProfileDevelopment = "development"
	// ProfileCI reads like development and writes the workspace and /tmp.
	// Network: filtered ("limited"), allowing the package registries and
	// code hosts the host's own tools are configured to use (see
	// toolenv.FindRegistries; Load adds them, each with its source) plus
	// what the user lists. Limits: 512 processes, 4096 MB memory, 3600 s
	// CPU, 1024 MB per file.
	ProfileCI = "ci"
	// ProfileUntrusted reads the system directories and the workspace and
	// writes only /tmp (the workspace is read-only). Network: deny. Limits:
	// 64 processes, 1024 MB memory, 300 s CPU, 64 MB per file. Its mode is
	// strict unless a layer sets sandbox.mode (or sandbox.enabled).
	ProfileUntrusted = "untrusted"
)

// DefaultProfile is the profile used when no layer sets one.
const DefaultProfile = ProfileDevelopment

// SystemReads are the system directories every profile may read.
// Directories that do not exist are skipped by the backends.
var SystemReads = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// DevelopmentHomeReads are the home-directory tool caches and configs the
// development and ci profiles may read. Strict mode drops them.
var DevelopmentHomeReads = []string{
	"${HOME}/.gitconfig",
	"${HOME}/.config/git",
	"${HOME}/.cache/go-build",
	"${HOME}/go/pkg/mod",
	"${HOME}/.npm",
	"${HOME}/.cache/pip",
	"${HOME}/.cargo/registry",
	"${HOME}/.cargo/bin",
	"${HOME}/.rustup",
	"${HOME}/.m2/repository",
	"${HOME}/.local/bin",
	"${HOME}/.config/cordon",
}

// DevelopmentHomeConfigs are the entries of DevelopmentHomeReads that are
// tool configs, not caches: small, and searched for relative deny globs
// like any read path (see DenyGlobSkipped).
var DevelopmentHomeConfigs = []string{
	"${HOME}/.gitconfig",
	"${HOME}/.config/git",
	"${HOME}/.config/cordon",
}

// DefaultDeny are the secrets every profile denies. Relative globs match
// inside every readable or writable root but the system directories and
// tool caches (see Policy.DenyGlobReadRoots).
var DefaultDeny = []string{
	"${HOME}/.ssh",
	"${HOME}/.gnupg",
	"${HOME}/.aws",
	"${HOME}/.azure",
	"${HOME}/.config/gcloud",
	"${HOME}/.kube",
	"${HOME}/.docker",
	"${HOME}/.netrc",
	"${HOME}/.npmrc",
	"${HOME}/.pypirc",
	"${HOME}/.git-credentials",
	"${HOME}/.config/git/credentials",
	"${HOME}/.config/gh",
	"/etc/shadow",
	"/etc/gshadow",
	"/etc/sudoers",
	"/etc/sudoers.d",
	"**/.env",
	"**/.env.*",
	"**/secrets.*",
}

// DefaultEnvPass are the host variables every profile passes through;
// "LC_*" passes every variable starting with "LC_". TMPDIR is always set
// to /tmp.
var DefaultEnvPass = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "LC_*",
	"TZ", "COLORTERM", "NO_COLOR", "EDITOR", "VISUAL", "PAGER",
}

// Profiles returns the names of the built-in profiles, in order.
func Profiles() []string {
	return []string{ProfileMinimal, ProfileDevelopment, ProfileCI, ProfileUntrusted}
}

// Profile returns the built-in profile name as a config.Layer (Source
// "profile NAME"), with ${PROJECT_DIR}, ${HOME} and ${TMPDIR} unexpanded.
// Every field it leaves nil takes Load's default. Each call returns a
// fresh Layer.
func Profile(name string) (*config.Layer, error) {
	type limits struct{ procs, mem, cpu, file int }
	var (
		homeReads []string
		write     []string
		netMode   = "deny"
		mode      = "standard"
		lim       limits
	)
	switch name {
	case ProfileMinimal:
		lim = limits{64, 1024, 60, 64}
	case ProfileDevelopment:
		homeReads = DevelopmentHomeReads
		write = []string{"${PROJECT_DIR}", "${TMPDIR}", "${SANDBOX_CACHE}"}
		netMode = "open"
		lim = limits{1024, 8192, 0, 4096}
	case ProfileCI:
		homeReads = DevelopmentHomeReads
		write = []string{"${PROJECT_DIR}", "${TMPDIR}", "${SANDBOX_CACHE}"}
		netMode = string(NetFiltered)
		lim = limits{512, 4096, 3600, 1024}
	case ProfileUntrusted:
		write = []string{"${TMPDIR}"}
		mode = "strict"
		lim = limits{64, 1024, 300, 64}
	default:
		return nil, fmt.Errorf("unknown profile %q; choose one of %s", name, strings.Join(Profiles(), ", "))
	}
	read := append(append(append([]string{}, SystemReads...), "${PROJECT_DIR}"), homeReads...)
	env := append(append([]string{}, DefaultEnvPass...), "TMPDIR=/tmp")
	return &config.Layer{
		Source:  "profile " + name,
		Mode:    config.Ptr(mode),
		Profile: config.Ptr(name),
		Filesystem: config.Filesystem{
			Read:      read,
			Write:     append([]string{}, write...),
			Deny:      append([]string{}, DefaultDeny...),
			DenyWrite: append([]string{}, HomeProtected...),
		},
		Network: config.Network{
			Mode:         config.Ptr(netMode),
			Allow:        []string{},
			Deny:         []string{},
			ForwardPorts: []int{},
		},
		Resources: config.Resources{
			MaxProcesses:  config.Ptr(lim.procs),
			MaxMemoryMB:   config.Ptr(lim.mem),
			MaxCPUSeconds: config.Ptr(lim.cpu),
			MaxFileSizeMB: config.Ptr(lim.file),
		},
		OnViolation: config.Ptr("block"),
		Audit: config.Audit{
			Enabled:    config.Ptr(true),
			LogAllowed: config.Ptr(false),
			LogDenied:  config.Ptr(true),
			MaxSizeMB:  config.Ptr(DefaultAuditMaxSizeMB),
		},
		Backend:     config.Ptr(string(backend.Auto)),
		UnixSockets: []string{},
		Env:         env,
		Lines:       map[string]int{},
	}, nil
}
