// Package probe finds out what the current host can enforce: Landlock,
// seccomp, user namespaces, bubblewrap, cgroup v2 delegation and
// no_new_privs. Every check is real (it asks the kernel or runs the tool);
// nothing is inferred from version numbers alone. The result drives
// `cordon status` and the `--backend auto` choice.
//
// It owns the findings and their remedies' wording. It must not read the
// policy or change the host beyond what a check needs (a cgroup it makes
// to see whether it can is removed again).
package probe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/backend"
)

// Feature statuses used by Report.Features and WriteText.
const (
	StatusOK       = "ok"
	StatusMissing  = "missing"
	StatusDegraded = "degraded"
)

// bwrapSearchPaths are the fixed absolute locations FindBwrap searches, in
// order, when no path is configured.
var bwrapSearchPaths = []string{"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"}

// BwrapInstallHint tells the user how to install bubblewrap.
const BwrapInstallHint = "install it with `sudo apt-get install bubblewrap` (Debian/Ubuntu) or `sudo dnf install bubblewrap` (Fedora), or set sandbox.bwrap_path"

// ErrBwrapNotFound is wrapped by the errors FindBwrap returns.
var ErrBwrapNotFound = errors.New("bubblewrap (bwrap) not found")

// Options configures Detect.
type Options struct {
	// BwrapPath is the configured bwrap binary (sandbox.bwrap_path). It must
	// be absolute. Empty means search the fixed locations (see FindBwrap).
	BwrapPath string
}

// Report is what Detect found. It is plain data and marshals to JSON with
// snake_case keys (`cordon status --json`).
type Report struct {
	OS     string `json:"os"`     // runtime.GOOS
	Arch   string `json:"arch"`   // runtime.GOARCH
	Kernel string `json:"kernel"` // uname release, e.g. "6.8.0-45-generic"
	// Root reports whether the probe ran with effective uid 0. Several
	// results (user namespaces, cgroup writability) differ for root.
	Root bool `json:"root"`

	Landlock LandlockInfo `json:"landlock"`
	Seccomp  SeccompInfo  `json:"seccomp"`
	UserNS   UserNSInfo   `json:"userns"`
	Bwrap    BwrapInfo    `json:"bwrap"`
	Cgroup   CgroupInfo   `json:"cgroup"`
	// Seatbelt is only set on macOS.
	Seatbelt *SeatbeltInfo `json:"seatbelt,omitempty"`

	// NoNewPrivsInherited reports whether no_new_privs is already set on
	// this process (inherited, e.g. from a container started with
	// no-new-privileges). It is informational: the in-sandbox helper sets
	// it for every confined command either way.
	NoNewPrivsInherited bool `json:"no_new_privs_inherited"`

	// Limits says how cordon run enforces process and memory limits here.
	Limits LimitsInfo `json:"limits"`
	// Systemd reports that systemd is the init system (PID 1), and
	// SystemdUser that this user has a systemd user manager: remedies
	// suggest systemd-run only then.
	Systemd     bool `json:"systemd"`
	SystemdUser bool `json:"systemd_user"`

	// AutoBackend is what `--backend auto` picks: "bwrap" when a user
	// namespace can be created and bwrap works, else "landlock" when
	// Landlock ABI >= 1, else "none" (on macOS: "seatbelt" or "none").
	AutoBackend backend.Name `json:"auto_backend"`

	// Remedies has one entry per missing or degraded feature.
	Remedies []Remedy `json:"remedies"`
}

// LandlockInfo describes Landlock support.
type LandlockInfo struct {
	// ABI is the Landlock ABI version the kernel reports, 0 if none.
	ABI       int  `json:"abi"`
	Available bool `json:"available"`
	// Errno is the symbolic errno of the version query when it failed
	// ("ENOSYS": kernel too old; "EOPNOTSUPP": disabled at boot).
	Errno  string `json:"errno,omitempty"`
	Reason string `json:"reason,omitempty"` // why unavailable, or what an old ABI lacks
}

// SeccompInfo describes seccomp support and this process's seccomp state.
type SeccompInfo struct {
	// Available means seccomp filter mode (SECCOMP_MODE_FILTER) can be used.
	Available bool `json:"available"`
	// Mode is this process's current mode from /proc/self/status:
	// 0 none, 1 strict, 2 filter (a filter is already installed, typical
	// inside a container). -1 if unknown.
	Mode int `json:"mode"`
	// Filters is the number of filters already installed (Seccomp_filters),
	// -1 if the kernel does not say.
	Filters int    `json:"filters"`
	Reason  string `json:"reason,omitempty"`
}

// UserNSInfo describes whether this process can create a user namespace,
// established by actually creating one.
type UserNSInfo struct {
	Available bool `json:"available"`
	// Reason explains a failure: the errno and the host setting or
	// environment that most likely causes it.
	Reason string `json:"reason,omitempty"`
	// Errno is the symbolic errno of the failed attempt (e.g. "EPERM"),
	// empty on success.
	Errno string `json:"errno,omitempty"`
	// MaxUserNamespaces is user.max_user_namespaces (0 = disabled), -1 if
	// unreadable.
	MaxUserNamespaces int `json:"max_user_namespaces"`
	// AppArmorRestrict is kernel.apparmor_restrict_unprivileged_userns
	// (Ubuntu 23.10+), nil where the knob does not exist.
	AppArmorRestrict *bool `json:"apparmor_restrict,omitempty"`
	// UnprivilegedClone is kernel.unprivileged_userns_clone (Debian <= 11
	// and some hardened kernels), nil where the knob does not exist.
	UnprivilegedClone *bool `json:"unprivileged_clone,omitempty"`
}

// BwrapInfo describes the bubblewrap binary.
type BwrapInfo struct {
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"` // e.g. "0.8.0"
	Found   bool   `json:"found"`
	// Setuid reports a setuid-root bwrap (older distributions).
	Setuid bool `json:"setuid,omitempty"`
	// Works means `bwrap --unshare-user --ro-bind / / -- /bin/true` succeeded.
	Works  bool   `json:"works"`
	Reason string `json:"reason,omitempty"` // lookup error or bwrap's stderr
}

// CgroupInfo describes cgroup v2 and whether cordon may create child
// cgroups with resource controllers in it.
type CgroupInfo struct {
	// Version is 2 when a cgroup v2 (unified) hierarchy is mounted, 1 when
	// only cgroup v1 is, 0 when none is found.
	Version int `json:"version"`
	// Hybrid means cgroup v1 controller hierarchies are mounted as well;
	// controllers bound to v1 are then missing from the v2 tree.
	Hybrid bool `json:"hybrid,omitempty"`
	// Delegated means Path is writable by us and memory and pids are
	// available in it, so cordon can create a child cgroup with limits.
	Delegated bool `json:"delegated"`
	// V1Mounts maps the cgroup v1 controllers cordon can use instead
	// ("pids", "memory") to where their hierarchies are mounted.
	V1Mounts map[string]string `json:"v1_mounts,omitempty"`
	// Path is this process's cgroup directory in the v2 hierarchy.
	Path string `json:"path,omitempty"`
	// Controllers is the content of Path/cgroup.controllers.
	Controllers []string `json:"controllers,omitempty"`
	// SubtreeControl is the content of Path/cgroup.subtree_control.
	SubtreeControl []string `json:"subtree_control,omitempty"`
	Reason         string   `json:"reason,omitempty"`
}

// SeatbeltInfo describes macOS sandbox-exec.
type SeatbeltInfo struct {
	Path      string `json:"path,omitempty"`
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
}

// Remedy is one missing or degraded feature and how to fix it.
type Remedy struct {
	Feature string `json:"feature"`
	Problem string `json:"problem"`
	Fix     string `json:"fix"`
}

// FindBwrap returns the bwrap binary to use. A configured path must be
// absolute and name an executable regular file. With configured empty,
// /usr/bin/bwrap, /usr/local/bin/bwrap and /bin/bwrap are tried in order.
// $PATH is never consulted: whoever controls the caller's environment must
// not be able to substitute the sandbox. Errors wrap ErrBwrapNotFound and
// say how to install bubblewrap.
func FindBwrap(configured string) (string, error) {
	if configured != "" {
		if !filepath.IsAbs(configured) {
			return "", fmt.Errorf("sandbox.bwrap_path %q must be an absolute path: %w", configured, ErrBwrapNotFound)
		}
		p := filepath.Clean(configured)
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("%w at configured sandbox.bwrap_path: %w; %s", ErrBwrapNotFound, err, BwrapInstallHint)
		}
		return p, nil
	}
	for _, p := range bwrapSearchPaths {
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	dirs := make([]string, len(bwrapSearchPaths))
	for i, p := range bwrapSearchPaths {
		dirs[i] = filepath.Dir(p)
	}
	return "", fmt.Errorf("%w in %s: %s", ErrBwrapNotFound, strings.Join(dirs, ", "), BwrapInstallHint)
}

// checkExecutable reports whether p is a regular file with an execute bit.
func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", p)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", p)
	}
	return nil
}

// chooseBackend applies the --backend auto rule (backend.Choose) to a
// filled-in report.
func chooseBackend(r *Report) backend.Name {
	return backend.Choose(backend.Facts{
		OS:       r.OS,
		Bwrap:    r.UserNS.Available && r.Bwrap.Works,
		Landlock: r.Landlock.Available && r.Landlock.ABI >= 1,
		Seatbelt: r.Seatbelt != nil && r.Seatbelt.Available,
	})
}
