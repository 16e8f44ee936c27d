package planted

import (
	"io/fs"
	"syscall"
	"time"
)

// inodeCtime returns fi's inode number and change time, or zeros when
// stat did not give them.
func inodeCtime(fi fs.FileInfo) (uint64, time.Time) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino, time.Unix(st.Ctimespec.Unix())
	}
	return 0, time.Time{}
}
