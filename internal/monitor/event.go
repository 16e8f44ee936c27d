package monitor

import (
	"net/netip"
	"os"
	"sync/atomic"

	"github.com/cordon-sandbox/cordon/policy"
)

// Op is what a watched call does: the policy's operations (the audit
// record's names), and OpBind.
type Op = policy.Op

// The operations of an Event.
const (
	// OpRead opens a file or directory for reading.
	OpRead = policy.OpRead
	// OpWrite opens a file for writing, or creates, truncates, removes,
	// renames, links or changes one.
	OpWrite = policy.OpWrite
	// OpExec executes a file.
	OpExec = policy.OpExec
	// OpConnect connects or sends to a socket address: Addr, or the unix
	// socket Path.
	OpConnect = policy.OpConnect
	// OpBind binds a socket to an address: Addr, or the unix socket Path.
	OpBind Op = "network-bind"
	// OpOther is a denial the system reported of an operation the policy
	// has no name for (macOS: a Mach lookup, a sysctl, a signal, an
	// inbound connection): Call names the operation and Name what it
	// concerned. Only the macOS log reader (package seatbeltlog) makes
	// them.
	OpOther Op = "other"
)

// Event is one watched call.
type Event struct {
	// Pid is the calling thread's id on the host.
	Pid int
	// Call is the system call's name (openat, renameat2, connect, ...);
	// on macOS the Seatbelt operation the kernel denied (file-read-data,
	// network-outbound, mach-lookup, ...).
	Call string
	// Op is what the call does.
	Op Op
	// Path is the file, or the unix socket, as the process sees it:
	// absolute and lexically clean; "" for an internet address.
	Path string
	// Addr is the internet address of a socket call.
	Addr netip.AddrPort
	// Name is what a call concerned when it is neither a path nor an
	// internet address the policy can decide: the Mach service, sysctl
	// or signal of an OpOther, or a socket address macOS logged without a
	// host ("*:443"); "" otherwise.
	Name string
	// Comm is the name of the calling program (its /proc/PID/comm), read
	// before the call went on; "" if it could not be read.
	Comm string
	// Resolved is Path with its symbolic links followed in the process's
	// root, as the kernel does, when Path lies in Options.FollowIn and
	// leads through one; "" otherwise.
	Resolved string
	// follow: the call follows a link in Path's last component.
	follow bool
}

// Options tune a Monitor.
type Options struct {
	// FollowIn are the trees in which paths are followed through their
	// symbolic links (Event.Resolved): those the command can write, the
	// only ones where it can have made a link. Following costs a lookup
	// per path component, before the call goes on.
	FollowIn []string
	// Supervise, when not nil, makes the monitor the supervisor of the
	// Landlock-only backend (the listener of seccomp.InstallSupervise):
	// it performs each supervised call itself, by descriptor, if Policy
	// allows what it reached, and refuses it (EACCES) otherwise; see
	// package doc.
	Supervise Policy
	// Redirects are files the supervisor serves from a private copy (a
	// repository's config on the Landlock-only backend): an open of one
	// for reading opens its copy, and a rename onto it of the lock file
	// beside it (config.lock onto config, as git writes its config) is
	// written into the copy and the lock removed; the file itself is
	// never changed. Only with Supervise.
	Redirects []Redirect
	// Ask, when not nil, is asked about an open of a file the policy may
	// refuse but a person may allow. When the monitor only watches (the
	// bubblewrap backend), before each watched open goes on: an open it
	// serves is opened by the monitor on the host, by the real path it
	// resolved there, and handed in; one it refuses fails with EACCES
	// (see ask_linux.go); the other calls go on unchanged. As the
	// supervisor (the Landlock-only backend), for an open that Supervise
	// refused: served as an allowed one when a person said yes.
	Ask Asker
}

// Redirect is a file the supervisor serves from a private copy
// (Options.Redirects).
type Redirect struct {
	// Dev and Ino identify the file on the host.
	Dev, Ino uint64
	// Copy is the copy, open for reading and writing; the caller closes
	// it after the monitor stopped.
	Copy *os.File
	// Committed, when not nil, counts the renames written into Copy.
	Committed *atomic.Int64
}

// Stats counts what a Monitor saw.
type Stats struct {
	// Calls is the number of notifications answered.
	Calls int64
	// Unresolved counts calls whose path or address could not be read
	// (the process died, or its memory or its /proc entries were out of
	// reach): they went on to the kernel unobserved.
	Unresolved int64
	// TreeChanges counts the calls that may have added a name to a
	// directory or changed a file's permissions (seccomp.ChangesTree,
	// decided from the call's registers alone): an open with O_CREAT,
	// mkdir, mknod, link, symlink, rename, bind, a btrfs subvolume or
	// snapshot, chmod, an extended attribute (an ACL) set. Zero, from a
	// listener installed before the command started (seccomp.InstallTree,
	// InstallWatch or InstallSupervise), means the command changed no
	// more than the contents of files that existed.
	TreeChanges int64
}
