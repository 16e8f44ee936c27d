//go:build unix

package toolenv

import (
	"os"
	"syscall"
)

// inode is a file's inode number, or 0 where the system has none.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
