//go:build linux

package seccomp

import "golang.org/x/sys/unix"

// Supervised returns the system calls the Landlock-only backend's
// supervisor sees on the running architecture: the watched ones (Watched)
// and those that change a file's metadata, which Landlock does not
// restrict (chmod, chown, utimes and the extended attribute calls, by path
// and by descriptor).
func Supervised() []Call {
	return append(Watched(), metaCalls()...)
}

// metaCalls are the metadata calls (CallMeta, CallMetaFd) of the running
// architecture. chmod, fchmodat, chown and fchownat are Watched already.
func metaCalls() []Call {
	fd := func(nr uint32, name string) Call {
		c := plain(nr, name, CallMetaFd, NoArg)
		c.Dirfd = 0
		return c
	}
	return append([]Call{
		at(unix.SYS_UTIMENSAT, "utimensat", CallMeta, 0),
		plain(unix.SYS_SETXATTR, "setxattr", CallMeta, 0),
		plain(unix.SYS_LSETXATTR, "lsetxattr", CallMeta, 0),
		plain(unix.SYS_REMOVEXATTR, "removexattr", CallMeta, 0),
		plain(unix.SYS_LREMOVEXATTR, "lremovexattr", CallMeta, 0),
		fd(unix.SYS_FCHMOD, "fchmod"),
		fd(unix.SYS_FCHOWN, "fchown"),
		fd(unix.SYS_FSETXATTR, "fsetxattr"),
		fd(unix.SYS_FREMOVEXATTR, "fremovexattr"),
	}, archMeta()...)
}
