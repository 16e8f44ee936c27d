package config

import "golang.org/x/sys/unix"

// dirOpenFlags open a directory only to resolve names below it.
const dirOpenFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC

// openat2Beneath opens rel below the directory dfd with openat2, which
// refuses any symbolic link (ELOOP) and any escape from dfd (EXDEV).
func openat2Beneath(dfd int, rel string) (int, error) {
	how := &unix.OpenHow{
		Flags:   openFlags,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	return openRetry(func() (int, error) { return unix.Openat2(dfd, rel, how) })
}
