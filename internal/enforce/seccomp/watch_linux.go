//go:build linux

package seccomp

import (
	"fmt"
	"runtime"
	"slices"
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
	return notifyFilter(Watched(), false)
}

// SuperviseFilter returns the program of the Landlock-only backend's
// supervisor: WatchFilter's, over the Supervised calls.
func SuperviseFilter() ([]unix.SockFilter, error) {
	return notifyFilter(Supervised(), false)
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
	return notifyFilter(Renamed(), false)
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
// only (some of Watched: Opened, Renamed, AskTreeCalls), each sent
// whatever its arguments (an open without O_CREAT too), with the
// btrfsCreates ioctls and the permissionCalls, as every notify filter:
// the host sees those, and every other call goes on unseen, at no cost.
func InstallCalls(calls []Call) (int, error) {
	prog, err := notifyFilter(calls, false)
	if err != nil {
		return -1, err
	}
	return installNotify(prog)
}

// Creating returns the calls of Watched that can create a directory
// entry: open, openat and creat with O_CREAT, openat2 (its flags sit
// behind a pointer, so every one), mkdir, mknod, link, symlink and rename
// in each form the architecture has, and bind (a socket's path; its
// address sits behind a pointer, so every one). With the btrfs ioctls
// that make a subvolume or a snapshot (btrfsCreates), which every notify
// filter sends too, these are every way a process can add a name to a
// directory that the enforcing filter leaves it (io_uring, mount and
// open_by_handle_at fail there).
func Creating() []Call {
	var out []Call
	for _, c := range Watched() {
		if creating[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// creating names the calls of Creating.
var creating = map[string]bool{
	"open": true, "openat": true, "openat2": true, "creat": true,
	"mkdir": true, "mkdirat": true, "mknod": true, "mknodat": true,
	"link": true, "linkat": true, "symlink": true, "symlinkat": true,
	"rename": true, "renameat": true, "renameat2": true, "bind": true,
}

// Requests of ioctl(2) that create a directory entry on btrfs (any user
// may make a subvolume where it may make a directory, and a snapshot of
// a subvolume it owns, with all that subvolume holds): _IOW(0x94, nr,
// 4096 bytes).
const (
	btrfsIocSnapCreate     = 0x50009401
	btrfsIocSubvolCreate   = 0x5000940e
	btrfsIocSnapCreateV2   = 0x50009417
	btrfsIocSubvolCreateV2 = 0x50009418
)

// btrfsCreates are the ioctl requests every notify filter sends.
var btrfsCreates = []uint32{btrfsIocSnapCreate, btrfsIocSubvolCreate, btrfsIocSnapCreateV2, btrfsIocSubvolCreateV2}

// permissionCalls are the calls that change who may read or search a
// file: chmod in every form (by path, at a dirfd, on a descriptor) and
// the extended attribute calls that set a POSIX ACL (the attribute's
// name sits behind a pointer, so every one). A directory made unreadable
// hides what it holds from a check that only looks up what it knew;
// every notify filter sends them.
func permissionCalls() []uint32 {
	return append([]uint32{unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR}, archPermission()...)
}

// ChangesTree reports whether a call the listener received (its number
// nr and arguments args, as the kernel passed them: registers, which no
// other thread can change) may have added a name to a directory (a call
// of Creating, an open only with O_CREAT, or a btrfsCreates ioctl) or
// changed a file's permissions (permissionCalls): what a check that
// walks no tree after the run cannot see. It never reads the caller's
// memory, so that a count of them cannot be raced.
func ChangesTree(nr uint32, args [6]uint64) bool {
	if nr == unix.SYS_IOCTL {
		return slices.Contains(btrfsCreates, uint32(args[1]))
	}
	if slices.Contains(permissionCalls(), nr) {
		return true
	}
	for _, c := range Creating() {
		if c.Nr == nr {
			return c.Kind != CallOpen || args[c.Flags]&unix.O_CREAT != 0
		}
	}
	return false
}

// TreeFilter returns the program that sends the rename calls (as
// RenameFilter does), the calls that can create a directory entry
// (Creating: open and openat only with O_CREAT in their flags), and, as
// every notify filter, the btrfsCreates ioctls and the permissionCalls
// to the listener: the host counts them (ChangesTree), and a run that
// made none changed nothing but the contents of files that existed.
func TreeFilter() ([]unix.SockFilter, error) {
	return notifyFilter(union(Renamed(), Creating()), true)
}

// AskTreeCalls returns the calls of the one filter of cordon run --ask
// whose tree changes are counted too (InstallCalls): every open, with or
// without O_CREAT (Opened: the opens a person may be asked about), the
// renames and every other call that can add a name to a directory
// (TreeFilter's): the host asks about the opens it may and counts every
// call that may change the tree (ChangesTree: an open only with O_CREAT),
// asked about or not.
func AskTreeCalls() []Call {
	return union(Opened(), Renamed(), Creating())
}

// union returns the calls of sets, each number once, in order.
func union(sets ...[]Call) []Call {
	var out []Call
	for _, set := range sets {
		for _, c := range set {
			if !slices.ContainsFunc(out, func(o Call) bool { return o.Nr == c.Nr }) {
				out = append(out, c)
			}
		}
	}
	return out
}

// InstallTree is InstallWatch with TreeFilter.
func InstallTree() (int, error) {
	prog, err := TreeFilter()
	if err != nil {
		return -1, err
	}
	return installNotify(prog)
}

// notifyFilter is the program that sends calls (sendto only with an
// address; with onlyCreate, open and openat only with O_CREAT), the
// btrfsCreates ioctls and the permissionCalls to the listener.
func notifyFilter(calls []Call, onlyCreate bool) ([]unix.SockFilter, error) {
	if !archSupported {
		return nil, unsupported()
	}
	const labNotify, labSendto, labIoctl = "notify", "sendto", "ioctl"
	var a asm
	a.stmt(ldAbs, offArch)
	a.jmp(jeqK, nativeArch, "", labAll)
	a.stmt(ldAbs, offNr)
	var creat []Call
	for _, c := range calls {
		switch {
		case c.Nr == unix.SYS_SENDTO:
			a.jmp(jeqK, c.Nr, labSendto, "")
		case onlyCreate && c.Kind == CallOpen:
			creat = append(creat, c)
			a.jmp(jeqK, c.Nr, "creat"+c.Name, "")
		default:
			a.jmp(jeqK, c.Nr, labNotify, "")
		}
	}
	for _, nr := range permissionCalls() {
		if !slices.ContainsFunc(calls, func(c Call) bool { return c.Nr == nr }) {
			a.jmp(jeqK, nr, labNotify, "")
		}
	}
	a.jmp(jeqK, unix.SYS_IOCTL, labIoctl, "")
	a.stmt(retK, retAllow)
	// sendto: only with a destination address (args[4] not NULL).
	a.label(labSendto)
	a.stmt(ldAbs, offArgLow(4))
	a.jmp(jeqK, 0, "", labNotify)
	a.stmt(ldAbs, offArgLow(4)+4)
	a.jmp(jeqK, 0, labAll, labNotify)
	// An open that may create: O_CREAT in its flags' low word.
	for _, c := range creat {
		a.label("creat" + c.Name)
		a.stmt(ldAbs, offArgLow(c.Flags))
		a.jmp(jsetK, unix.O_CREAT, labNotify, labAll)
	}
	// ioctl: args[1] is an unsigned int request.
	a.label(labIoctl)
	a.stmt(ldAbs, offArgLow(1))
	for i, r := range btrfsCreates {
		jf := ""
		if i == len(btrfsCreates)-1 {
			jf = labAll
		}
		a.jmp(jeqK, r, labNotify, jf)
	}
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
