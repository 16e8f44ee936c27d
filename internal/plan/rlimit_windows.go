package plan

// The rlimits the Linux helper sets (helperspec.Rlimit.Resource). Windows
// has no rlimits and runs no helper: these numbers are never applied; a
// Windows run enforces its limits with a Job Object (package limits).
const (
	rlimitNPROC = -1
	rlimitDATA  = -2
	rlimitCPU   = -3
	rlimitFSIZE = -4
)
