//go:build unix

package sandboxcache

import (
	"io/fs"
	"syscall"
)

// allocated is the space fi takes on disk, from its blocks.
func allocated(fi fs.FileInfo) (int64, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512, true
	}
	return 0, false
}
