//go:build unix

package plan

import (
	"os"

	"golang.org/x/sys/unix"
)

// unwritable reports that neither this user nor a sandbox running as it can
// create entries in dir: the user is not root, may not write to dir and
// does not own it (an owner could chmod it first).
func unwritable(dir string) bool {
	if os.Geteuid() == 0 || unix.Access(dir, unix.W_OK) == nil {
		return false
	}
	var st unix.Stat_t
	return unix.Stat(dir, &st) == nil && int(st.Uid) != os.Geteuid()
}

// unreadable reports that a sandbox running as this user can do nothing
// with the file path, so a mask would hide nothing more: it is a regular
// file (a FIFO or socket is written to or connected to in a read-only
// mount too), this user is not root, does not own it (an owner could
// chmod it) and may neither read, write nor execute it on the host (a
// denied program that may only be executed would run inside).
func unreadable(path string) bool {
	if os.Geteuid() == 0 {
		return false
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return false
	}
	return inaccessible(uint32(st.Mode), int(st.Uid), os.Geteuid(), func(how uint32) bool {
		return unix.Faccessat(unix.AT_FDCWD, path, how, unix.AT_EACCESS) == nil
	})
}

// inaccessible is unreadable's decision for a file of mode and owner uid,
// as the user euid, who may access it as can says (unix.R_OK, W_OK, X_OK).
func inaccessible(mode uint32, uid, euid int, can func(how uint32) bool) bool {
	if euid == 0 || uid == euid || mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	return !can(unix.R_OK) && !can(unix.W_OK) && !can(unix.X_OK)
}

// readable reports that this user may read path on the host.
func readable(path string) bool { return unix.Access(path, unix.R_OK) == nil }

// reachable says whether this user may read path, or, when it is a
// directory, open what lies in it (mode 0311: searchable, not listable),
// or may make it so (its owner can chmod it).
func reachable(path string) bool {
	if readable(path) {
		return true
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return false
	}
	return int(st.Uid) == os.Geteuid() || st.Mode&unix.S_IFMT == unix.S_IFDIR && unix.Access(path, unix.X_OK) == nil
}

// writable says whether this user may write to the directory dir on the
// host: nil, or why not.
func writable(dir string) error { return unix.Access(dir, unix.W_OK) }
