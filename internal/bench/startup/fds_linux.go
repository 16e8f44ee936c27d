package main

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInherited closes the descriptors above 2 that this process
// inherited without close-on-exec (a shell's, a terminal multiplexer's):
// a forked process's descriptor table is as large as its parent's highest
// open descriptor needs, so one left at 255 would start every timed cordon
// with a table of 256, which an agent host's child does not have (and
// growing one costs a run an RCU grace period: see growFDTable in
// internal/launch).
func closeInherited() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			unix.Close(fd)
		}
	}
}
