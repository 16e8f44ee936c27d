//go:build unix && !linux

package config

import "golang.org/x/sys/unix"

// dirOpenFlags open a directory only to resolve names below it; there is
// no O_PATH outside Linux, so the directory is opened for reading.
const dirOpenFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC

// openat2Beneath has no openat2 outside Linux: it says ENOSYS, and
// openBeneath walks the components one at a time with O_NOFOLLOW and an
// fstat of each, which refuses every symbolic link below the root.
func openat2Beneath(int, string) (int, error) {
	return -1, unix.ENOSYS
}
