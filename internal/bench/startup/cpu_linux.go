package main

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// childrenCPU is the user and system time of every child this process
// has waited for, and of their waited-for descendants.
func childrenCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// becomeSubreaper makes this process a child subreaper: bwrap's process
// inside the sandbox (its pid 1, which reaps the command) is not reaped by
// the bwrap that started it, which exits first; without this, its CPU
// time and the command's would go to init, not to childrenCPU.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// reapOrphans waits for every child this process has left (the orphans
// of the command just waited for), so that childrenCPU counts them.
func reapOrphans() error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG|unix.WALL, nil)
		switch {
		case errors.Is(err, unix.ECHILD):
			return nil
		case errors.Is(err, syscall.EINTR) || pid > 0:
			continue
		case err != nil:
			return err
		case time.Now().After(deadline):
			return fmt.Errorf("a process the run left did not end in 10 s")
		}
		time.Sleep(100 * time.Microsecond)
	}
}
