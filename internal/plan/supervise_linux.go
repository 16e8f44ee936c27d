//go:build linux

package plan

import (
	"time"

	"golang.org/x/sys/unix"
)

// birthTime is when the file at path was made (statx's btime), false
// where the file system does not record it.
func birthTime(path string) (time.Time, bool) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return time.Time{}, false
	}
	return time.Unix(st.Btime.Sec, int64(st.Btime.Nsec)), true
}

// fileClockNow is the time as file timestamps take it (the coarse real-time
// clock, up to a tick behind the precise one): a directory made after it
// has a birth time at or after it.
func fileClockNow() time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts); err != nil {
		return time.Now()
	}
	return time.Unix(ts.Sec, ts.Nsec)
}
