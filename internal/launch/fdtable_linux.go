package launch

import (
	"sync"

	"golang.org/x/sys/unix"
)

// fdTableSize is how many descriptors growFDTable makes room for: more
// than a run holds at once (up to plan.MaxGitConfigs private copies of
// the repositories' configs, the placeholders' parent directories, the
// walk cache's, the pipes and sockets of the sandbox).
const fdTableSize = 256

// growFDTable makes room, once per process and in the background, for
// fdTableSize descriptors. Growing the descriptor table of a process
// whose threads share it (every Go program's) waits for an RCU grace
// period (expand_files), 6 to 19 ms on a 2-core VM; a run in 200 nested
// repositories crosses the first table's 64 entries while it holds the
// configs' copies open, and whatever crossed it waited (the copies: 9 to
// 19 ms, against 2 to 4 once grown). A descriptor duplicated at
// fdTableSize-1 and closed again grows the table here, off the run's
// path; a thread that needs no larger table never waits for it, one that
// does waits for this growth instead of making its own.
func growFDTable() {
	growOnce.Do(func() {
		go func() {
			fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return
			}
			if hi, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, fdTableSize-1); err == nil {
				unix.Close(hi)
			}
			unix.Close(fd)
			close(grown)
		}()
	})
}

var (
	growOnce sync.Once
	// grown is closed once growFDTable has grown the table (tests).
	grown = make(chan struct{})
)
