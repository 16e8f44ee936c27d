//go:build !linux && !darwin

package probe

import (
	"os"
	"runtime"
)

// Detect probes the host. On this OS cordon has no file or network
// confinement; everything is reported as unavailable.
func Detect(opts Options) *Report {
	r := &Report{OS: runtime.GOOS, Arch: runtime.GOARCH, Root: os.Geteuid() == 0}
	r.Landlock.Reason = "Linux only"
	r.Seccomp.Mode, r.Seccomp.Filters, r.Seccomp.Reason = -1, -1, "Linux only"
	r.UserNS.MaxUserNamespaces, r.UserNS.Reason = -1, "Linux only"
	r.Cgroup.Reason = "Linux only"
	r.Bwrap.Reason = "Linux only"
	r.AutoBackend = chooseBackend(r)
	r.Remedies = remedies(r)
	return r
}

// userNSLikely: there are no user namespaces here.
func userNSLikely() bool { return false }
