// Package monitor is the host side of cordon's violation monitor: it reads
// the seccomp user notifications of a sandboxed process tree (the listener
// that seccomp.InstallWatch made inside the sandbox, passed out by the
// helper), works out what each watched call does (which file it opens for
// reading or writing, executes, creates, removes or renames, which socket
// address it connects to), and answers every one with
// SECCOMP_USER_NOTIF_FLAG_CONTINUE.
//
// It only observes. Enforcement stays with the kernel layers (the mount
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
// (Event.Resolved). A mkdir of a directory that is there is no event.
//
// It must not decide anything: classifying an Event against the policy is
// the caller's (policy.Decider), and so is what to record.
//
// The notification structures and ioctls are written out here because
// golang.org/x/sys/unix has their numbers but not their types.
package monitor
