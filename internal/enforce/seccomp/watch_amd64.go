//go:build linux && amd64

package seccomp

import "golang.org/x/sys/unix"

// archWatched are amd64's older path-only calls.
func archWatched() []Call {
	open := plain(unix.SYS_OPEN, "open", CallOpen, 0)
	open.Flags = 1
	rename := plain(unix.SYS_RENAME, "rename", CallWrite, 0)
	rename.Path2 = 1
	renameat := at(unix.SYS_RENAMEAT, "renameat", CallWrite, 0)
	renameat.Dirfd2, renameat.Path2 = 2, 3
	return []Call{
		open, rename, renameat,
		plain(unix.SYS_CREAT, "creat", CallWrite, 0),
		plain(unix.SYS_MKDIR, "mkdir", CallWrite, 0),
		plain(unix.SYS_MKNOD, "mknod", CallWrite, 0),
		plain(unix.SYS_RMDIR, "rmdir", CallWrite, 0),
		plain(unix.SYS_UNLINK, "unlink", CallWrite, 0),
		plain(unix.SYS_LINK, "link", CallWrite, 1),
		plain(unix.SYS_SYMLINK, "symlink", CallWrite, 1),
		plain(unix.SYS_CHMOD, "chmod", CallWrite, 0),
		plain(unix.SYS_CHOWN, "chown", CallWrite, 0),
		plain(unix.SYS_LCHOWN, "lchown", CallWrite, 0),
	}
}

// archMeta are amd64's older metadata calls.
func archMeta() []Call {
	return []Call{
		plain(unix.SYS_UTIME, "utime", CallMeta, 0),
		plain(unix.SYS_UTIMES, "utimes", CallMeta, 0),
		at(unix.SYS_FUTIMESAT, "futimesat", CallMeta, 0),
	}
}

// archPermission are amd64's older permission calls (chmod).
func archPermission() []uint32 { return []uint32{unix.SYS_CHMOD} }
