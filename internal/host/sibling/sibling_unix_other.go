//go:build unix && !linux

package sibling

import "golang.org/x/sys/unix"

// dirOpenFlags open the program's directory to look names up in it; there
// is no O_PATH outside Linux, so it is opened for reading.
const dirOpenFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
