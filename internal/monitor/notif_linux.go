//go:build linux

package monitor

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompData is struct seccomp_data.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

// notif is struct seccomp_notif.
type notif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

// notifResp is struct seccomp_notif_resp.
type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// recv waits for the next notification on the listener fd.
func recv(fd int, n *notif) error {
	*n = notif{}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_RECV), uintptr(unsafe.Pointer(n)))
	if e != 0 {
		return e
	}
	return nil
}

// idValid reports whether notification id is still pending: its process
// has not died (and its pid been reused) since it was received.
func idValid(fd int, id uint64) bool {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_ID_VALID), uintptr(unsafe.Pointer(&id)))
	return e == 0
}

// proceed lets the call id go on to the kernel's own checks.
func proceed(fd int, id uint64) error {
	r := notifResp{ID: id, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_SEND), uintptr(unsafe.Pointer(&r)))
	if e != 0 {
		return e
	}
	return nil
}

// setSyncWakeUp asks the kernel to wake the supervisor synchronously when
// a notification arrives (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP).
func setSyncWakeUp(fd int) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS), uintptr(unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP))
	if e != 0 {
		return e
	}
	return nil
}

// respond answers the call id with the return value val, or with the
// error errno when it is not 0.
func respond(fd int, id uint64, val int64, errno unix.Errno) error {
	r := notifResp{ID: id, Val: val, Error: -int32(errno)}
	if errno != 0 {
		r.Val = 0
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_SEND), uintptr(unsafe.Pointer(&r)))
	if e != 0 {
		return e
	}
	return nil
}

// notifAddfd is struct seccomp_notif_addfd.
type notifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

// sendFd installs a copy of src in the caller of id, close-on-exec when
// cloexec, and answers the call with its number, in one step
// (SECCOMP_ADDFD_FLAG_SEND).
//
// The ioctl runs with every signal held off its thread. The kernel marks
// the call answered as soon as the request is queued, and the caller
// installs the descriptor when it wakes; a signal that interrupts the
// ioctl's wait before then withdraws the descriptor but not the answer,
// and the caller's call returns 0 with no error: an open that yields the
// standard input. Go's runtime sends its preemption signal (SIGURG) often
// on a busy machine, where a build now and then read an empty file
// (TestSuperviseSignalled sends it on purpose). A signal held off is
// delivered once the ioctl returns, or to another thread.
func sendFd(fd int, id uint64, src int, cloexec bool) error {
	a := notifAddfd{ID: id, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(src)}
	if cloexec {
		a.NewfdFlags = unix.O_CLOEXEC
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all, saved unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^all.Val[i]
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &all, &saved); err != nil {
		return fmt.Errorf("holding signals off: %w", err)
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_ADDFD), uintptr(unsafe.Pointer(&a)))
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &saved, nil) // cannot fail: a valid how and set
	if e != 0 {
		return e
	}
	return nil
}
