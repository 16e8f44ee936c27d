package sibling

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// dirOpenFlags open the program's directory only to look names up in it.
const dirOpenFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC

// ExecPath is the path through which the kernel executes the checked file
// itself: /proc/self/fd/N.
func (b *Binary) ExecPath() string {
	return fmt.Sprintf("/proc/self/fd/%d", b.File.Fd())
}
