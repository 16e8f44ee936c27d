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

// TestOpenedFilterProgram: the program of cordon run --ask without the
// violation monitor (InstallCalls(Opened()), with the renames when git
// configs are served from copies) sends the open calls, and the renames
// only with them; every other watched call goes on unseen.
func TestOpenedFilterProgram(t *testing.T) {
	opens, err := notifyFilter(Opened())
	if err != nil {
		t.Skip(err)
	}
	both, err := notifyFilter(append(Opened(), Renamed()...))
	if err != nil {
		t.Fatal(err)
	}
	const notify, allow = unix.SECCOMP_RET_USER_NOTIF, retAllow
	for _, tc := range []struct {
		name        string
		nr          uint32
		opens, both uint32
	}{
		{"openat", unix.SYS_OPENAT, notify, notify},
		{"openat2", unix.SYS_OPENAT2, notify, notify},
		{"renameat2", unix.SYS_RENAMEAT2, allow, notify},
		{"execve", unix.SYS_EXECVE, allow, allow},
		{"mkdirat", unix.SYS_MKDIRAT, allow, allow},
		{"unlinkat", unix.SYS_UNLINKAT, allow, allow},
		{"connect", unix.SYS_CONNECT, allow, allow},
		{"read", unix.SYS_READ, allow, allow},
	} {
		if got := run(t, opens, nativeArch, tc.nr); got != tc.opens {
			t.Errorf("%s, opens: %#x, want %#x", tc.name, got, tc.opens)
		}
		if got := run(t, both, nativeArch, tc.nr); got != tc.both {
			t.Errorf("%s, opens and renames: %#x, want %#x", tc.name, got, tc.both)
		}
	}
	var names []string
	for _, c := range Opened() {
		names = append(names, c.Name)
	}
	if len(names) < 2 || names[0] != "openat" || names[1] != "openat2" {
		t.Errorf("Opened() = %v", names)
	}
}
