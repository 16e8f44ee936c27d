//go:build linux

package seccomp

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// CallKind says what a watched system call does with its arguments.
type CallKind int

// The kinds of watched calls.
const (
	// CallOpen opens Path; the open flags (argument Flags) say whether it
	// reads or writes.
	CallOpen CallKind = iota
	// CallOpenHow is openat2: the flags are the first field of the
	// struct open_how that argument Flags points to.
	CallOpenHow
	// CallWrite creates, removes, renames, links or changes Path (and
	// Path2 when there is one).
	CallWrite
	// CallExec executes Path.
	CallExec
	// CallAddr connects, binds or sends to the socket address that
	// argument Addr points to, AddrLen bytes long.
	CallAddr
	// CallMeta changes the mode, owner, times or extended attributes of
	// Path (Supervised only).
	CallMeta
	// CallMetaFd changes those of the open file argument Dirfd names
	// (Supervised only).
	CallMetaFd
)

// NoArg marks an argument a Call does not have (a dirfd that is always
// AT_FDCWD, a second path).
const NoArg = -1

// Call says how to read one watched system call's arguments: the indices of
// its dirfd, path and flags arguments among the six.
type Call struct {
	Nr   uint32
	Name string
	Kind CallKind
	// Dirfd and Path are the directory descriptor (NoArg: AT_FDCWD) and
	// the path argument.
	Dirfd, Path int
	// Dirfd2 and Path2 are the second path's (rename's new name), or
	// NoArg.
	Dirfd2, Path2 int
	// Flags is the open flags' argument (CallOpen, CallOpenHow), or NoArg.
	Flags int
	// Addr and AddrLen are the socket address's arguments (CallAddr).
	Addr, AddrLen int
}

// at is a call with a dirfd at argument d and a path at d+1.
func at(nr uint32, name string, kind CallKind, d int) Call {
	return Call{Nr: nr, Name: name, Kind: kind, Dirfd: d, Path: d + 1, Dirfd2: NoArg, Path2: NoArg, Flags: NoArg, Addr: NoArg, AddrLen: NoArg}
}

// plain is a call whose path is argument p, relative to the working
// directory.
func plain(nr uint32, name string, kind CallKind, p int) Call {
	return Call{Nr: nr, Name: name, Kind: kind, Dirfd: NoArg, Path: p, Dirfd2: NoArg, Path2: NoArg, Flags: NoArg, Addr: NoArg, AddrLen: NoArg}
}

// commonWatched are the watched calls every architecture has (the *at
// family, exec and the socket calls); archWatched adds the older
// path-only calls where the architecture has them.
func commonWatched() []Call {
	openat := at(unix.SYS_OPENAT, "openat", CallOpen, 0)
	openat.Flags = 2
	openat2 := at(unix.SYS_OPENAT2, "openat2", CallOpenHow, 0)
	openat2.Flags = 2
	renameat := at(unix.SYS_RENAMEAT2, "renameat2", CallWrite, 0)
	renameat.Dirfd2, renameat.Path2 = 2, 3
	addr := func(nr uint32, name string, a int) Call {
		c := plain(nr, name, CallAddr, NoArg)
		c.Addr, c.AddrLen = a, a+1
		return c
	}
	return []Call{
		openat, openat2,
		at(unix.SYS_MKDIRAT, "mkdirat", CallWrite, 0),
		at(unix.SYS_MKNODAT, "mknodat", CallWrite, 0),
		at(unix.SYS_UNLINKAT, "unlinkat", CallWrite, 0),
		renameat,
		at(unix.SYS_LINKAT, "linkat", CallWrite, 2),
		at(unix.SYS_SYMLINKAT, "symlinkat", CallWrite, 1),
		at(unix.SYS_FCHMODAT, "fchmodat", CallWrite, 0),
		at(unix.SYS_FCHMODAT2, "fchmodat2", CallWrite, 0),
		at(unix.SYS_FCHOWNAT, "fchownat", CallWrite, 0),
		plain(unix.SYS_TRUNCATE, "truncate", CallWrite, 0),
		plain(unix.SYS_EXECVE, "execve", CallExec, 0),
		at(unix.SYS_EXECVEAT, "execveat", CallExec, 0),
		addr(unix.SYS_CONNECT, "connect", 1),
		addr(unix.SYS_BIND, "bind", 1),
		addr(unix.SYS_SENDTO, "sendto", 4),
	}
}

// Watched returns the system calls the violation monitor watches on the
// running architecture (see WatchFilter).
func Watched() []Call {
	return append(commonWatched(), archWatched()...)
}

// WatchFilter returns the classic-BPF program of the violation monitor: it
// sends every watched call (Watched) of the native architecture to the
// listener (SECCOMP_RET_USER_NOTIF) and allows everything else, which the
// enforcing filter (Filter) decides. sendto is watched only with an
// address. Calls of a foreign architecture are left to the enforcing
// filter, which denies them.
func WatchFilter() ([]unix.SockFilter, error) {
	return notifyFilter(Watched())
}

// SuperviseFilter returns the program of the Landlock-only backend's
// supervisor: WatchFilter's, over the Supervised calls.
func SuperviseFilter() ([]unix.SockFilter, error) {
	return notifyFilter(Supervised())
}

// Renamed returns the rename calls of Watched (rename, renameat,
// renameat2): those RenameFilter sends.
func Renamed() []Call {
	var out []Call
	for _, c := range Watched() {
		switch c.Name {
		case "rename", "renameat", "renameat2":
			out = append(out, c)
		}
	}
	return out
}

// RenameFilter returns WatchFilter's program over the rename calls only
// (Renamed): a host that serves a file from a private copy performs a
// rename onto it itself, and lets every other go on.
func RenameFilter() ([]unix.SockFilter, error) {
	return notifyFilter(Renamed())
}

// InstallRenames is InstallWatch with RenameFilter.
func InstallRenames() (int, error) {
	return InstallCalls(Renamed())
}

// Opened returns the open calls of Watched (open, openat, openat2,
// creat): those cordon run --ask holds while it asks about a file.
func Opened() []Call {
	var out []Call
	for _, c := range Watched() {
		if c.Kind == CallOpen || c.Kind == CallOpenHow || c.Name == "creat" {
			out = append(out, c)
		}
	}
	return out
}

// InstallCalls is InstallWatch with WatchFilter's program over calls
// only (some of Watched: Opened, Renamed): the host sees those, and every
// other call goes on unseen, at no cost.
func InstallCalls(calls []Call) (int, error) {
	prog, err := notifyFilter(calls)
	if err != nil {
		return -1, err
	}
	return installNotify(prog)
}

// notifyFilter is the program that sends calls (sendto only with an
// address) to the listener.
func notifyFilter(calls []Call) ([]unix.SockFilter, error) {
	if !archSupported {
		return nil, unsupported()
	}
	const labNotify, labSendto = "notify", "sendto"
	var a asm
	a.stmt(ldAbs, offArch)
	a.jmp(jeqK, nativeArch, "", labAll)
	a.stmt(ldAbs, offNr)
	for _, c := range calls {
		if c.Nr == unix.SYS_SENDTO {
			a.jmp(jeqK, c.Nr, labSendto, "")
			continue
		}
		a.jmp(jeqK, c.Nr, labNotify, "")
	}
	a.stmt(retK, retAllow)
	// sendto: only with a destination address (args[4] not NULL).
	a.label(labSendto)
	a.stmt(ldAbs, offArgLow(4))
	a.jmp(jeqK, 0, "", labNotify)
	a.stmt(ldAbs, offArgLow(4)+4)
	a.jmp(jeqK, 0, labAll, labNotify)
	a.label(labNotify)
	a.stmt(retK, unix.SECCOMP_RET_USER_NOTIF)
	a.label(labAll)
	a.stmt(retK, retAllow)
	return a.assemble()
}

// InstallWatch installs the violation monitor's filter (WatchFilter) on
// the calling thread, which must be locked to its goroutine and is the
// one that execs the command, and returns the listener descriptor
// (close-on-exec) the host's supervisor reads. It sets PR_SET_NO_NEW_PRIVS.
//
// The filter is not synchronised to the process's other threads: the
// kernel refuses a new listener together with TSYNC, and only the
// exec'ing thread matters. It fails with EBUSY when a filter with a
// listener is installed already (cordon inside a watched cordon).
//
// The filter only asks: the supervisor answers every call with
// SECCOMP_USER_NOTIF_FLAG_CONTINUE, so the call goes on to the kernel's
// checks (the mount namespace, Landlock, the enforcing filter, whose
// SECCOMP_RET_ERRNO takes precedence over a notification). If the
// listener is closed, the watched calls fail with ENOSYS: the command
// stays confined.
func InstallWatch() (int, error) {
	prog, err := WatchFilter()
	if err != nil {
		return -1, err
	}
	return installNotify(prog)
}

// InstallSupervise is InstallWatch with the supervisor's filter
// (SuperviseFilter): the host's supervisor (monitor.Options.Supervise)
// decides each supervised call, performing it itself or refusing it, and
// answers CONTINUE only where the call's path cannot change the outcome.
// If the listener is closed, the supervised calls fail with ENOSYS.
func InstallSupervise() (int, error) {
	prog, err := SuperviseFilter()
	if err != nil {
		return -1, err
	}
	return installNotify(prog)
}

// installNotify installs prog with a new listener on the calling thread.
func installNotify(prog []unix.SockFilter) (int, error) {
	if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
		return -1, fmt.Errorf("seccomp: prctl(PR_SET_NO_NEW_PRIVS): %w", e)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return -1, fmt.Errorf("seccomp: installing a filter with a listener (SECCOMP_FILTER_FLAG_NEW_LISTENER): %w", e)
	}
	return int(fd), nil
}

// WatchAvailable reports whether the violation monitor's filter is written
// for this architecture (the kernel's support shows when it is installed).
func WatchAvailable() error {
	_, err := WatchFilter()
	return err
}
