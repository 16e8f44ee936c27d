//go:build unix

package planted

import "syscall"

// Open flags: never follow a symbolic link at the last component, never
// block on a FIFO, insist on a directory.
const (
	oNoFollow  = syscall.O_NOFOLLOW
	oNonblock  = syscall.O_NONBLOCK
	oDirectory = syscall.O_DIRECTORY
)
