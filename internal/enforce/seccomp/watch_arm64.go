//go:build linux && arm64

package seccomp

import "golang.org/x/sys/unix"

// archWatched: arm64 has only the *at calls (and renameat, which libc
// no longer uses but a static binary may).
func archWatched() []Call {
	renameat := at(unix.SYS_RENAMEAT, "renameat", CallWrite, 0)
	renameat.Dirfd2, renameat.Path2 = 2, 3
	return []Call{renameat}
}

// archMeta: arm64 has no older metadata calls.
func archMeta() []Call { return nil }

// archPermission: arm64 has only the *at and descriptor forms.
func archPermission() []uint32 { return nil }
