package helper

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Securebits that keep uid 0 from regaining capabilities on exec.
const (
	secbitNoroot            = 1 << 0
	secbitNorootLocked      = 1 << 1
	secbitNoSetuidFixup     = 1 << 2
	secbitNoSetuidFixupLock = 1 << 3
	secbitKeepCapsLocked    = 1 << 5
	secbitNoCapAmbientRaise = 1 << 6
	secbitNoCapAmbientLock  = 1 << 7
)

// dropCapabilities gives up every capability for good: the securebits stop
// uid 0 from regaining them at exec, the bounding and ambient sets are
// emptied, and the thread's own sets cleared. Under bubblewrap there is
// nothing left to drop; on the Landlock-only backend a command started by
// root would otherwise keep root's full capabilities (CAP_SYS_PTRACE would
// let it read other processes' memory and environments, for one).
//
// Capabilities belong to threads: the caller must stay on this OS thread
// (runtime.LockOSThread) until it execs.
func dropCapabilities() error {
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	if data[0].Permitted == 0 && data[1].Permitted == 0 && data[0].Inheritable == 0 && data[1].Inheritable == 0 {
		return nil // nothing to give up (e.g. under bubblewrap)
	}
	bits := secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLock |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientLock
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
		return fmt.Errorf("setting securebits: %w", err)
	}
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clearing capabilities: %w", err)
	}
	return nil
}
