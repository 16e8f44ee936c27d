package probe

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// sandboxExec is the only sandbox-exec cordon will use.
const sandboxExec = "/usr/bin/sandbox-exec"

// Detect probes the host. On macOS only Seatbelt (sandbox-exec) applies;
// the Linux features are reported as unavailable.
func Detect(opts Options) *Report {
	r := &Report{OS: runtime.GOOS, Arch: runtime.GOARCH, Root: os.Geteuid() == 0}
	r.Kernel, _ = unix.Sysctl("kern.osrelease")
	r.Landlock.Reason = "Linux only"
	r.Seccomp.Mode, r.Seccomp.Filters, r.Seccomp.Reason = -1, -1, "Linux only"
	r.UserNS.MaxUserNamespaces, r.UserNS.Reason = -1, "Linux only"
	r.Cgroup.Reason = "Linux only"
	r.Bwrap.Reason = "Linux only"
	sb := &SeatbeltInfo{}
	if err := checkExecutable(sandboxExec); err != nil {
		sb.Reason = err.Error()
	} else {
		sb.Path, sb.Available = sandboxExec, true
	}
	r.Seatbelt = sb
	r.AutoBackend = chooseBackend(r)
	r.Remedies = remedies(r)
	return r
}

// userNSLikely: there are no user namespaces here.
func userNSLikely() bool { return false }
