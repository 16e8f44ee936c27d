//go:build unix

package plan

import "golang.org/x/sys/unix"

// The rlimits the Linux helper sets (helperspec.Rlimit.Resource).
const (
	rlimitNPROC = unix.RLIMIT_NPROC
	rlimitDATA  = unix.RLIMIT_DATA
	rlimitCPU   = unix.RLIMIT_CPU
	rlimitFSIZE = unix.RLIMIT_FSIZE
)
