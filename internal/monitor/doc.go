// Package monitor is the host side of cordon's violation monitor: it reads
// the seccomp user notifications of a sandboxed process tree (the listener
// that seccomp.InstallWatch made inside the sandbox, passed out by the
// helper), works out what each watched call does (which file it opens for
// reading or writing, executes, creates, removes or renames, which socket
// address it connects to), and answers every one with
// SECCOMP_USER_NOTIF_FLAG_CONTINUE.
//
// As a monitor it only observes. Enforcement stays with the kernel layers (the mount
// namespace, Landlock, the enforcing seccomp filter): CONTINUE hands the
// call to them unchanged, so the monitor never lets through anything they
// refuse. A path is read from the process's memory before the answer, and
// another thread may change it after the read (seccomp_unotify(2)): that
// can at worst mislabel an Event, never open anything. If the supervisor
// stops, the watched calls fail with ENOSYS: the command stays confined.
//
// Paths are resolved as the process sees them: a relative path against its
// working directory or its dirfd, read from /proc/PID/cwd and
// /proc/PID/fd/N; "." and ".." are cleaned lexically. In the trees the
// caller names (Options.FollowIn: those the command may write, where it
// can have made a link) a path is also followed through its symbolic
// links in the process's root (/proc/PID/root) before the call goes on
// (Event.Resolved). That happens once the call went on, so the name the
// kernel gives the file reached is kept only if it still leads there from
// the process's root: a sandbox whose last process ended meanwhile has
// its mounts detached, and a file there is then named from its own
// mount's top ("/" for the sandbox's /tmp). A mkdir of a directory that
// is there is no event.
//
// One exception, Options.Redirects: a file served from a private copy (a
// repository's config, which bubblewrap binds the copy over). A rename of
// the lock file beside it onto it (git's config.lock onto config), which
// would fail onto a mount point, the monitor performs: it walks both names
// by descriptor from the caller's /proc entries, reads the lock (a regular
// file with one link in the same directory), writes it into the copy and
// removes it. Every other rename goes on with CONTINUE. Under bubblewrap
// with no violation monitor asked for, the helper sends only the rename
// calls (seccomp.InstallRenames).
//
// With Options.Ask (cordon run --ask, the bubblewrap backend) it holds
// each watched open of a file the Asker may ask about, and on a yes opens
// (or creates) the file on the host and hands it in, as the supervisor
// does (see ask_linux.go).
//
// Whatever the filter, it counts the calls that may have added a name to
// a directory or changed a file's permissions (Stats.TreeChanges,
// seccomp.ChangesTree: decided from the call's number and registers,
// never from memory another thread can change), so that a run with none
// needs no walk of its writable trees after it; a caller running several
// commands under one listener reads the count between them
// (Monitor.TreeChanges). Under the count's own filter (seccomp.InstallTree)
// a call that is not a rename onto a copy is answered at once, with
// nothing read.
//
// It must not decide anything: classifying an Event against the policy is
// the caller's (policy.Decider), and so is what to record.
//
// On the Landlock-only backend it is also the supervisor (Options.Supervise,
// the listener of seccomp.InstallSupervise), and then it does not answer
// CONTINUE after reading a path: the kernel would read the path again from
// the caller's memory, which another thread may have changed. It walks each
// path itself, by descriptor (openat2 from /proc/PID/cwd, /proc/PID/fd/N or
// the root, no magic link but the caller's own /proc entries, with
// /proc/self and /dev/fd named by the caller's ids), asks Options.Supervise
// about the real path it reached (Policy: the decision stays the
// caller's), and performs the call itself on what it walked to: an open is
// reopened through its O_PATH descriptor and handed in
// (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND), a create,
// remove, rename or link is made in the directory it walked to, a metadata
// change on the file (by descriptor: on a pidfd_getfd copy). A refusal is
// EACCES. Only exec and the socket calls, whose path or address only names
// what the kernel's layers then check, go on with CONTINUE. Its serving
// thread acts with the caller's rights: its effective capabilities are
// cleared and its umask is 0 in a file-system context of its own (the
// caller's umask is applied by hand).
//
// The notification structures and ioctls are written out here because
// golang.org/x/sys/unix has their numbers but not their types.
package monitor
