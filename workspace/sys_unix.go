//go:build unix

package workspace

import (
	"os"
	"syscall"
)

// oNonblock keeps an open of a FIFO from blocking.
const oNonblock = syscall.O_NONBLOCK

// nlink returns the hard-link count of fi, or 1 when unknown.
func nlink(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
