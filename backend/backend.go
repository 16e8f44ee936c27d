// Package backend names cordon's enforcement backends, the one vocabulary
// of the policy's sandbox.backend, the plan, the probe's auto choice and
// the result, and holds the --backend auto rule. It imports nothing of
// cordon's, so every package may use it.
package backend

// Name is a backend's name as configured (sandbox.backend, --backend),
// planned (plan.Plan.Backend), probed (cordon status's auto_backend) and
// reported (result.Result.Backend). It marshals as the plain string.
type Name string

// The backends.
const (
	// Auto picks Bwrap where a user namespace can be created, else
	// Landlock (see Choose); only a policy says it.
	Auto Name = "auto"
	// Bwrap confines with bubblewrap namespaces and the in-sandbox helper.
	Bwrap Name = "bwrap"
	// Landlock confines with Landlock and seccomp only, for hosts where
	// no user namespace can be created.
	Landlock Name = "landlock"
	// Seatbelt is the macOS backend: a Seatbelt profile generated from
	// the policy, run with /usr/bin/sandbox-exec.
	Seatbelt Name = "seatbelt"
	// Job is the Windows backend: a Job Object limits the command's
	// processes, memory and CPU and kills its whole tree when the run
	// ends; files and network are not confined.
	Job Name = "job"
	// None runs the command unconfined (mode off).
	None Name = "none"
)

// JobWarning is what every run on the Job backend says on stderr, and
// cordon status on Windows: what the backend does not confine.
const JobWarning = "Windows: files and network are not confined; only process, memory and CPU limits and clean-up apply"

// Names are the values sandbox.backend accepts, in the order the
// documentation lists them.
func Names() []string {
	return []string{string(Auto), string(Bwrap), string(Landlock), string(Seatbelt), string(Job), string(None)}
}

// IsAuto reports whether n asks for the automatic choice: Auto, or unset.
func (n Name) IsAuto() bool { return n == "" || n == Auto }

// Facts are what the --backend auto rule depends on.
type Facts struct {
	// OS is runtime.GOOS.
	OS string
	// Bwrap: a user namespace can be created and bwrap works.
	Bwrap bool
	// Landlock: the kernel has Landlock (ABI 1 or later).
	Landlock bool
	// Seatbelt: sandbox-exec is there (macOS).
	Seatbelt bool
}

// Choose is the --backend auto rule: on Linux Bwrap when it works, else
// Landlock when the kernel has it, else None; on macOS Seatbelt or None;
// on Windows Job, which confines no file and no connection.
func Choose(f Facts) Name {
	switch {
	case f.OS == "windows":
		return Job
	case f.OS == "darwin":
		if f.Seatbelt {
			return Seatbelt
		}
		return None
	case f.Bwrap:
		return Bwrap
	case f.Landlock:
		return Landlock
	default:
		return None
	}
}
