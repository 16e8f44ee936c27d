//go:build linux

package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestWatchFilterProgram runs the monitor's program on the calls it must
// send to the listener and on those it must leave alone.
func TestWatchFilterProgram(t *testing.T) {
	prog, err := WatchFilter()
	if err != nil {
		t.Skip(err)
	}
	const notify, allow = unix.SECCOMP_RET_USER_NOTIF, retAllow
	tests := []struct {
		name string
		arch uint32
		nr   uint32
		args []uint64
		want uint32
	}{
		{"openat", nativeArch, unix.SYS_OPENAT, nil, notify},
		{"openat2", nativeArch, unix.SYS_OPENAT2, nil, notify},
		{"execve", nativeArch, unix.SYS_EXECVE, nil, notify},
		{"renameat2", nativeArch, unix.SYS_RENAMEAT2, nil, notify},
		{"connect", nativeArch, unix.SYS_CONNECT, nil, notify},
		{"bind", nativeArch, unix.SYS_BIND, nil, notify},
		{"sendto with an address", nativeArch, unix.SYS_SENDTO, []uint64{3, 0x1000, 10, 0, 0x2000, 16}, notify},
		{"sendto with an address above 4 GiB", nativeArch, unix.SYS_SENDTO, []uint64{3, 0x1000, 10, 0, 0x7f00_0000_0000, 16}, notify},
		{"sendto on a connected socket", nativeArch, unix.SYS_SENDTO, []uint64{3, 0x1000, 10, 0, 0, 0}, allow},
		{"read", nativeArch, unix.SYS_READ, nil, allow},
		{"fstat", nativeArch, unix.SYS_FSTAT, nil, allow},
		{"a foreign architecture (the enforcing filter denies it)", nativeArch + 1, unix.SYS_OPENAT, nil, allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, prog, tc.arch, tc.nr, tc.args...); got != tc.want {
				t.Errorf("got %#x, want %#x", got, tc.want)
			}
		})
	}
	for _, c := range Watched() {
		if c.Nr == unix.SYS_SENDTO {
			continue
		}
		if got := run(t, prog, nativeArch, c.Nr); got != notify {
			t.Errorf("%s: %#x, want the listener", c.Name, got)
		}
	}
}

// TestSuperviseFilterProgram: the supervisor's program sends every watched
// call and the metadata calls (by path and by descriptor) to the listener,
// which the monitor's program leaves alone; the rest it allows.
func TestSuperviseFilterProgram(t *testing.T) {
	sup, err := SuperviseFilter()
	if err != nil {
		t.Skip(err)
	}
	watch, err := WatchFilter()
	if err != nil {
		t.Skip(err)
	}
	const notify, allow = unix.SECCOMP_RET_USER_NOTIF, retAllow
	for _, c := range Supervised() {
		if c.Nr == unix.SYS_SENDTO {
			continue
		}
		if got := run(t, sup, nativeArch, c.Nr); got != notify {
			t.Errorf("%s: %#x, want the listener", c.Name, got)
		}
	}
	for _, nr := range []uint32{unix.SYS_FCHMOD, unix.SYS_FCHOWN, unix.SYS_UTIMENSAT, unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR, unix.SYS_REMOVEXATTR, unix.SYS_FREMOVEXATTR} {
		if got := run(t, sup, nativeArch, nr); got != notify {
			t.Errorf("call %d: %#x, want the listener", nr, got)
		}
		if got := run(t, watch, nativeArch, nr); got != allow {
			t.Errorf("call %d under the monitor's program: %#x, want allowed", nr, got)
		}
	}
	for _, nr := range []uint32{unix.SYS_READ, unix.SYS_FSTAT, unix.SYS_GETXATTR} {
		if got := run(t, sup, nativeArch, nr); got != allow {
			t.Errorf("call %d: %#x, want allowed", nr, got)
		}
	}
}
