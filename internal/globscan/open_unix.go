//go:build unix && !linux

package globscan

import (
	"os"
	"syscall"
)

// openDir opens a directory for listing without following a symlink: if a
// directory is swapped for a symlink between being listed and being opened,
// the open fails (ELOOP or ENOTDIR) instead of walking the link's target.
func openDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
}
