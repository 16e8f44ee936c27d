//go:build linux && !amd64 && !arm64

package seccomp

const (
	archSupported  = false
	nativeArch     = 0
	hasX32         = false
	x32SyscallBit  = 0
	sysClone       = 0
	sysClone3      = 0
	sysUnshare     = 0
	sysIoctl       = 0
	sysPersonality = 0
)

var commonDenied, commonStrict, archDenied, archStrict []sysEntry

// archWatched: the monitor is not built for this architecture (see
// WatchFilter).
func archWatched() []Call { return nil }

// archMeta: the supervisor is not built for this architecture.
func archMeta() []Call { return nil }

// archPermission: nothing more here.
func archPermission() []uint32 { return nil }
