//go:build unix && !linux

package gitrepo

import "golang.org/x/sys/unix"

// dirOpenFlags open a directory to look up entries; there is no O_PATH
// outside Linux, so it is opened for reading.
const dirOpenFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
