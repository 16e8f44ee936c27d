//go:build linux

package seccomp

import (
	"slices"
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
// which the monitor's program leaves alone but for the permission changes
// every notify filter sends; the rest it allows.
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
		want := uint32(allow)
		if slices.Contains(permissionCalls(), nr) {
			want = notify // counted as a tree change (ChangesTree)
		}
		if got := run(t, watch, nativeArch, nr); got != want {
			t.Errorf("call %d under the monitor's program: %#x, want %#x", nr, got, want)
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
	opens, err := notifyFilter(Opened(), false)
	if err != nil {
		t.Skip(err)
	}
	both, err := notifyFilter(append(Opened(), Renamed()...), false)
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

// TestAskTreeFilterProgram: the one filter of cordon run --ask whose tree
// changes are counted too (InstallCalls(AskTreeCalls())) sends every open,
// with or without O_CREAT (a person may be asked about any), and every
// call the count's filter sends (TreeFilter's), so that a run under --ask
// is counted as completely as without it; ChangesTree still counts an
// open only with O_CREAT.
func TestAskTreeFilterProgram(t *testing.T) {
	prog, err := notifyFilter(AskTreeCalls(), false)
	if err != nil {
		t.Skip(err)
	}
	const notify, allow = unix.SECCOMP_RET_USER_NOTIF, retAllow
	for _, tc := range []struct {
		name    string
		nr      uint32
		args    []uint64
		want    uint32
		creates bool
	}{
		{"openat for reading (asked about, not counted)", unix.SYS_OPENAT, []uint64{3, 0x1000, unix.O_RDONLY}, notify, false},
		{"openat O_WRONLY|O_TRUNC", unix.SYS_OPENAT, []uint64{3, 0x1000, unix.O_WRONLY | unix.O_TRUNC}, notify, false},
		{"openat O_CREAT", unix.SYS_OPENAT, []uint64{3, 0x1000, unix.O_WRONLY | unix.O_CREAT}, notify, true},
		{"openat2", unix.SYS_OPENAT2, []uint64{3, 0x1000, 0x2000, 24}, notify, true},
		{"mkdirat", unix.SYS_MKDIRAT, nil, notify, true},
		{"symlinkat", unix.SYS_SYMLINKAT, nil, notify, true},
		{"linkat", unix.SYS_LINKAT, nil, notify, true},
		{"renameat2", unix.SYS_RENAMEAT2, nil, notify, true},
		{"bind", unix.SYS_BIND, nil, notify, true},
		{"fchmodat", unix.SYS_FCHMODAT, nil, notify, true},
		{"btrfs subvolume create", unix.SYS_IOCTL, []uint64{3, btrfsIocSubvolCreate}, notify, true},
		{"ioctl TIOCGWINSZ", unix.SYS_IOCTL, []uint64{3, unix.TIOCGWINSZ}, allow, false},
		{"unlinkat", unix.SYS_UNLINKAT, nil, allow, false},
		{"execve", unix.SYS_EXECVE, nil, allow, false},
		{"read", unix.SYS_READ, nil, allow, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, prog, nativeArch, tc.nr, tc.args...); got != tc.want {
				t.Errorf("got %#x, want %#x", got, tc.want)
			}
			var args [6]uint64
			copy(args[:], tc.args)
			if got := ChangesTree(tc.nr, args); got != tc.creates {
				t.Errorf("ChangesTree: %v, want %v", got, tc.creates)
			}
		})
	}
	// Every call of the ask's and of the count's filter, whatever its
	// flags (an open without O_CREAT too), goes to the listener.
	for _, c := range append(append(Opened(), Creating()...), Renamed()...) {
		if got := run(t, prog, nativeArch, c.Nr, 0, 0, 0, 0, 0, 0); got != notify {
			t.Errorf("%s: %#x, want the listener", c.Name, got)
		}
	}
}

// TestTreeFilterProgram: the program of the count of tree changes sends
// the renames, the permission changes and every call that can add a name
// to a directory
// (an open only with O_CREAT, in either word of its flags' register the
// low one), and the btrfs ioctls that make subvolumes and snapshots, to
// the listener, and ChangesTree counts exactly those; reading, writing an
// open file, chown and other ioctls go on unseen. Every notify filter
// sends the btrfs ioctls and the permission changes.
func TestTreeFilterProgram(t *testing.T) {
	prog, err := TreeFilter()
	if err != nil {
		t.Skip(err)
	}
	const notify, allow = unix.SECCOMP_RET_USER_NOTIF, retAllow
	tests := []struct {
		name    string
		nr      uint32
		args    []uint64
		want    uint32
		creates bool
	}{
		{"openat O_CREAT", unix.SYS_OPENAT, []uint64{3, 0x1000, unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC}, notify, true},
		{"openat O_CREAT|O_EXCL through a dirfd", unix.SYS_OPENAT, []uint64{5, 0x1000, unix.O_RDWR | unix.O_CREAT | unix.O_EXCL}, notify, true},
		{"openat for reading", unix.SYS_OPENAT, []uint64{3, 0x1000, unix.O_RDONLY}, allow, false},
		{"openat O_WRONLY|O_TRUNC", unix.SYS_OPENAT, []uint64{3, 0x1000, unix.O_WRONLY | unix.O_TRUNC}, allow, false},
		{"openat O_TMPFILE (no name until linkat)", unix.SYS_OPENAT, []uint64{3, 0x1000, unix.O_TMPFILE | unix.O_RDWR}, allow, false},
		{"openat2 (flags behind a pointer)", unix.SYS_OPENAT2, []uint64{3, 0x1000, 0x2000, 24}, notify, true},
		{"mkdirat", unix.SYS_MKDIRAT, nil, notify, true},
		{"mknodat", unix.SYS_MKNODAT, nil, notify, true},
		{"linkat", unix.SYS_LINKAT, nil, notify, true},
		{"symlinkat", unix.SYS_SYMLINKAT, nil, notify, true},
		{"renameat2", unix.SYS_RENAMEAT2, nil, notify, true},
		{"bind", unix.SYS_BIND, nil, notify, true},
		{"btrfs subvolume create", unix.SYS_IOCTL, []uint64{3, btrfsIocSubvolCreate}, notify, true},
		{"btrfs snapshot v2", unix.SYS_IOCTL, []uint64{3, btrfsIocSnapCreateV2}, notify, true},
		{"ioctl TIOCGWINSZ", unix.SYS_IOCTL, []uint64{3, unix.TIOCGWINSZ}, allow, false},
		{"unlinkat", unix.SYS_UNLINKAT, nil, allow, false},
		{"fchmodat", unix.SYS_FCHMODAT, nil, notify, true},
		{"fchmod", unix.SYS_FCHMOD, nil, notify, true},
		{"fsetxattr (an ACL)", unix.SYS_FSETXATTR, nil, notify, true},
		{"fchownat", unix.SYS_FCHOWNAT, nil, allow, false},
		{"execve", unix.SYS_EXECVE, nil, allow, false},
		{"connect", unix.SYS_CONNECT, nil, allow, false},
		{"write", unix.SYS_WRITE, nil, allow, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, prog, nativeArch, tc.nr, tc.args...); got != tc.want {
				t.Errorf("got %#x, want %#x", got, tc.want)
			}
			var args [6]uint64
			copy(args[:], tc.args)
			if got := ChangesTree(tc.nr, args); got != tc.creates {
				t.Errorf("ChangesTree: %v, want %v", got, tc.creates)
			}
		})
	}
	if got := run(t, prog, nativeArch+1, unix.SYS_MKDIRAT); got != allow {
		t.Errorf("a foreign architecture (the enforcing filter denies it): %#x", got)
	}
	for _, c := range append(Creating(), Renamed()...) {
		args := make([]uint64, 6)
		if c.Flags != NoArg {
			args[c.Flags] = unix.O_CREAT
		}
		if got := run(t, prog, nativeArch, c.Nr, args...); got != notify {
			t.Errorf("%s: %#x, want the listener", c.Name, got)
		}
	}
	for name, f := range map[string]func() ([]unix.SockFilter, error){"watch": WatchFilter, "supervise": SuperviseFilter, "renames": RenameFilter} {
		p, err := f()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range btrfsCreates {
			if got := run(t, p, nativeArch, unix.SYS_IOCTL, 3, uint64(r)); got != notify {
				t.Errorf("%s: ioctl %#x: %#x, want the listener", name, r, got)
			}
		}
		for _, nr := range permissionCalls() {
			if got := run(t, p, nativeArch, nr); got != notify {
				t.Errorf("%s: call %d: %#x, want the listener", name, nr, got)
			}
		}
	}
}
