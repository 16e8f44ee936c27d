package probe

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cordon-sandbox/cordon/backend"
)

// Feature is one line of the human-readable status: a feature, whether it
// is usable ("ok", "missing" or "degraded") and a detail.
type Feature struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// Features summarises the report as one Feature per checked capability, in
// a fixed order, the automatic backend last. WriteText prints these, and
// `cordon status --json` lists them as "features".
func (r *Report) Features() []Feature {
	if r.OS != "linux" {
		return r.nonLinuxFeatures()
	}
	var fs []Feature

	switch l := r.Landlock; {
	case !l.Available:
		fs = append(fs, Feature{"landlock", StatusMissing, l.Reason})
	case l.Reason != "":
		fs = append(fs, Feature{"landlock", StatusDegraded, l.Reason})
	default:
		fs = append(fs, Feature{"landlock", StatusOK, fmt.Sprintf("ABI %d", l.ABI)})
	}

	switch s := r.Seccomp; {
	case !s.Available:
		fs = append(fs, Feature{"seccomp", StatusMissing, s.Reason})
	case s.Mode == 2:
		fs = append(fs, Feature{"seccomp", StatusOK, "filter mode available; " + s.Reason})
	default:
		fs = append(fs, Feature{"seccomp", StatusOK, "filter mode available"})
	}

	if u := r.UserNS; u.Available {
		fs = append(fs, Feature{"user namespaces", StatusOK, "created one"})
	} else {
		fs = append(fs, Feature{"user namespaces", StatusMissing, u.Reason})
	}

	switch b := r.Bwrap; {
	case !b.Found:
		fs = append(fs, Feature{"bubblewrap", StatusMissing, "not installed"})
	case !b.Works:
		fs = append(fs, Feature{"bubblewrap", StatusMissing, fmt.Sprintf("%s does not work: %s", b.Path, b.Reason)})
	default:
		d := b.Path
		if b.Version != "" {
			d += " " + b.Version
		}
		if b.Setuid {
			d += " (setuid)"
		}
		fs = append(fs, Feature{"bubblewrap", StatusOK, d})
	}

	fs = append(fs, r.cgroupsFeature())

	if r.NoNewPrivsInherited {
		fs = append(fs, Feature{"no_new_privs", StatusOK, "already set on this process; the helper sets it for each confined command too"})
	} else {
		fs = append(fs, Feature{"no_new_privs", StatusOK, "set by the helper for each confined command"})
	}
	return append(fs, Feature{"backend (auto)", string(r.AutoBackend), backendDetail(r.AutoBackend)})
}

// FeatureCgroups is the name of the Feature about resource-limit cgroups.
const FeatureCgroups = "cgroups"

// cgroupsFeature says which cgroup, if any, holds a run's processes and
// memory: the one Detect could create, as cordon run would.
func (r *Report) cgroupsFeature() Feature {
	switch r.Limits.Mechanism {
	case MechanismCgroup2:
		return Feature{FeatureCgroups, StatusOK, "cgroup v2 delegated at " + r.Cgroup.Path + ": each run gets a cgroup with pids and memory limits"}
	case MechanismCgroup1:
		return Feature{FeatureCgroups, StatusOK, "cgroup v1: the pids and memory hierarchies are writable: each run gets a cgroup with pids and memory limits"}
	}
	return Feature{FeatureCgroups, StatusDegraded, r.Limits.Reason + "; limits use rlimits"}
}

func (r *Report) nonLinuxFeatures() []Feature {
	var fs []Feature
	if r.Seatbelt != nil {
		if r.Seatbelt.Available {
			fs = append(fs, Feature{"seatbelt", StatusOK, r.Seatbelt.Path})
		} else {
			fs = append(fs, Feature{"seatbelt", StatusMissing, r.Seatbelt.Reason})
		}
	}
	fs = append(fs, Feature{"landlock/namespaces", StatusMissing, "Linux only"})
	return append(fs, Feature{"backend (auto)", string(r.AutoBackend), backendDetail(r.AutoBackend)})
}

// remedies builds one Remedy per missing or degraded feature.
func remedies(r *Report) []Remedy {
	if r.OS != "linux" {
		if r.OS == "darwin" && (r.Seatbelt == nil || !r.Seatbelt.Available) {
			return []Remedy{{"seatbelt", "/usr/bin/sandbox-exec not found", "use a macOS version that ships /usr/bin/sandbox-exec"}}
		}
		if r.OS != "darwin" {
			return []Remedy{{"sandbox", "no file or network confinement on " + r.OS, "run cordon on Linux or macOS for file and network confinement"}}
		}
		return nil
	}
	out := []Remedy{}
	add := func(feature, problem, fix string) { out = append(out, Remedy{feature, problem, fix}) }

	switch l := r.Landlock; {
	case !l.Available && l.Errno == "EOPNOTSUPP":
		add("landlock", "disabled at boot", "add landlock to the kernel's lsm= boot parameter (keep the others listed in /sys/kernel/security/lsm), e.g. in GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub and reboot")
	case !l.Available && l.Errno == "EPERM":
		add("landlock", "blocked by a seccomp filter", "allow the landlock_* system calls in the container's seccomp profile")
	case !l.Available:
		add("landlock", "kernel too old", "upgrade to Linux 5.13 or later (6.12+ for full coverage) with CONFIG_SECURITY_LANDLOCK=y")
	case l.Reason != "":
		add("landlock", l.Reason, "upgrade to Linux 6.12 or later for full Landlock coverage")
	}

	if !r.Seccomp.Available {
		add("seccomp", r.Seccomp.Reason, "use a kernel built with CONFIG_SECCOMP_FILTER=y (all major distribution kernels are)")
	}

	if u := r.UserNS; !u.Available {
		out = append(out, usernsRemedy(r))
	}

	switch b := r.Bwrap; {
	case !b.Found:
		add("bubblewrap", "not installed", "sudo apt-get install bubblewrap (Debian/Ubuntu) or sudo dnf install bubblewrap (Fedora), or set sandbox.bwrap_path")
	case !b.Works && !r.UserNS.Available:
		add("bubblewrap", "cannot create a sandbox: "+b.Reason, "fix user namespaces (see above); until then cordon uses --backend landlock")
	case !b.Works:
		add("bubblewrap", "cannot create a sandbox: "+b.Reason, "check the bwrap error; reinstall bubblewrap or set sandbox.bwrap_path to a working one")
	}

	if r.Limits.Mechanism == MechanismRlimits {
		out = append(out, cgroupsRemedy(r))
	}
	return out
}

// cgroupsRemedy says how to give cordon a cgroup for its limits on this
// host: systemd-run only where systemd runs (and, for --user, a user
// manager), else a cgroup an administrator creates for the user.
func cgroupsRemedy(r *Report) Remedy {
	c := r.Cgroup
	pureV2 := c.Version == 2 && !c.Hybrid
	v1 := c.V1Mounts["pids"] != "" && c.V1Mounts["memory"] != ""
	const userRun = "`systemd-run --user --scope -p Delegate=yes cordon ...`"
	var fix string
	switch {
	case pureV2 && r.Systemd && r.Root:
		fix = "run cordon in a delegated cgroup: `systemd-run --scope -p Delegate=yes cordon ...`"
	case pureV2 && r.SystemdUser:
		fix = "run cordon in a delegated cgroup: " + userRun
	case pureV2 && r.Systemd:
		fix = "start a systemd user manager (log in through systemd-logind, or `sudo loginctl enable-linger $USER`), then run cordon in a delegated cgroup: " + userRun
	case pureV2 && r.Root:
		fix = "enable the memory and pids controllers for cordon's cgroup: `echo +memory +pids > PARENT/cgroup.subtree_control` in the cgroup above the one cordon runs in, and run cordon in a child cgroup of it"
	case pureV2:
		fix = "have root create a cgroup for you under a parent with `+memory +pids` in its cgroup.subtree_control, `chown -R $USER` it, then move your shell into it (`echo $$ > DIR/cgroup.procs`) and run cordon from there"
	case v1 && !r.Root:
		p, m := c.V1Mounts["pids"]+"/$USER", c.V1Mounts["memory"]+"/$USER"
		fix = fmt.Sprintf("have root create a cgroup for you in the pids and memory hierarchies (`sudo mkdir %s %s && sudo chown -R $USER %s %s`), then move your shell into both (`echo $$ > %s/cgroup.procs; echo $$ > %s/cgroup.procs`) and run cordon from there", p, m, p, m, p, m)
		if r.Systemd {
			fix += "; or boot with systemd.unified_cgroup_hierarchy=1 (pure cgroup v2) and run cordon as " + userRun
		}
	case r.Systemd:
		fix = "boot with systemd.unified_cgroup_hierarchy=1 (pure cgroup v2), then run cordon in a delegated cgroup: `systemd-run --scope -p Delegate=yes cordon ...`"
	default:
		fix = "mount the cgroup v1 pids and memory hierarchies read-write (or use a kernel with cgroup v2 and enable memory and pids in cordon's parent cgroup)"
	}
	fix += "; until then memory and process limits are rlimits: RLIMIT_DATA per process and RLIMIT_NPROC per user"
	if r.Root {
		fix += ", which does not hold root"
	}
	return Remedy{FeatureCgroups, r.Limits.Reason, fix}
}

// usernsRemedy picks the fix for a failed user namespace.
func usernsRemedy(r *Report) Remedy {
	u := r.UserNS
	const fallback = "; or use --backend landlock"
	switch {
	case u.UnprivilegedClone != nil && !*u.UnprivilegedClone && !r.Root:
		return Remedy{"user namespaces", "kernel.unprivileged_userns_clone=0", "sudo sysctl -w kernel.unprivileged_userns_clone=1 (persist it in /etc/sysctl.d/)" + fallback}
	case u.MaxUserNamespaces == 0:
		return Remedy{"user namespaces", "user.max_user_namespaces=0", "sudo sysctl -w user.max_user_namespaces=15000 (persist it in /etc/sysctl.d/)" + fallback}
	case u.AppArmorRestrict != nil && *u.AppArmorRestrict && !r.Root:
		return Remedy{"user namespaces", "kernel.apparmor_restrict_unprivileged_userns=1", "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or install an AppArmor profile for bwrap" + fallback}
	case u.Errno == "ENOSPC":
		return Remedy{"user namespaces", "namespace limit reached (nested sandbox?)", "run cordon outside the enclosing sandbox or container" + fallback}
	case u.Errno == "EPERM" && r.Seccomp.Mode == 2:
		return Remedy{"user namespaces", "blocked by this process's seccomp filter (container?)", "run the container with a seccomp profile that allows clone/unshare with CLONE_NEWUSER (e.g. docker run --security-opt seccomp=unconfined)" + fallback}
	default:
		p := u.Errno
		if p == "" {
			p = u.Reason
		}
		return Remedy{"user namespaces", p, "enable unprivileged user namespaces for this user" + fallback}
	}
}

// WriteText writes the report for humans: a header, one aligned line per
// feature, the automatic backend, then the remedies.
func (r *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	header := fmt.Sprintf("cordon status: %s/%s", r.OS, r.Arch)
	if r.Kernel != "" {
		header += ", kernel " + r.Kernel
	}
	if r.Root {
		header += " (running as root)"
	}
	fmt.Fprintln(ew, header)

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	for _, f := range r.Features() {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Name, f.Status, oneLine(f.Detail))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	if r.AutoBackend == backend.Job {
		fmt.Fprintln(ew, "warning: "+backend.JobWarning)
	}
	if len(r.Remedies) > 0 {
		fmt.Fprintln(ew, "Remedies:")
		for _, rm := range r.Remedies {
			fmt.Fprintf(ew, "  %s: %s\n    fix: %s\n", rm.Feature, oneLine(rm.Problem), rm.Fix)
		}
	}
	if ew.err != nil {
		return fmt.Errorf("write status: %w", ew.err)
	}
	return nil
}

func backendDetail(b backend.Name) string {
	switch b {
	case backend.Bwrap:
		return "namespaces (bubblewrap): user, mount, pid, ipc, uts, cgroup, net"
	case backend.Landlock:
		return "Landlock + seccomp only (bubblewrap cannot build its namespaces here): some rules are degraded, see below"
	case backend.Seatbelt:
		return "macOS sandbox-exec"
	case backend.Job:
		return "Windows Job Object: process, memory and CPU limits and clean-up of the process tree"
	default:
		return "no OS confinement available"
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// errWriter remembers the first write error so the formatting code can
// ignore errors and check once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
