package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// growStdoutPipe makes the stdout pipe 1 MiB; it fails harmlessly on a
// non-pipe or above the user's limit.
func growStdoutPipe() {
	_, _ = unix.FcntlInt(os.Stdout.Fd(), unix.F_SETPIPE_SZ, 1<<20)
}
