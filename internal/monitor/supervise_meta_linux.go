//go:build linux

package monitor

import (
	"encoding/binary"
	"unsafe"

	"github.com/cordon-sandbox/cordon/internal/enforce/seccomp"
	"golang.org/x/sys/unix"
)

// meta performs the calls that change a file's mode, owner, times or
// extended attributes by path, on the file the supervisor walked to.
func (s *supervisor) meta(tid int, n *notif, c seccomp.Call, valid func() bool) reply {
	args := n.Data.Args
	follow, empty := true, false
	atFlags := func(i int) {
		follow = args[i]&unix.AT_SYMLINK_NOFOLLOW == 0
		empty = args[i]&unix.AT_EMPTY_PATH != 0
	}
	switch c.Name {
	case "lchown", "lsetxattr", "lremovexattr":
		follow = false
	case "fchownat":
		atFlags(4)
	case "fchmodat2":
		atFlags(3)
	case "utimensat":
		atFlags(3)
		if args[1] == 0 {
			// utimensat(fd, NULL, ...): futimens.
			return s.metaFd(tid, n, c, valid)
		}
	}
	obj, e := s.object(tid, args, c.Dirfd, c.Path, follow, empty)
	if e != 0 {
		return fail(e)
	}
	defer unix.Close(obj)
	var st unix.Stat_t
	if err := unix.Fstat(obj, &st); err != nil {
		return fail(errnoOf(err))
	}
	link := st.Mode&unix.S_IFMT == unix.S_IFLNK
	op, e := s.metaOp(tid, c.Name, args, c.Path)
	if e != 0 {
		return fail(e)
	}
	if !valid() || !s.allow(tid, obj, AccessMeta) {
		return fail(unix.EACCES)
	}
	return op.on(obj, link)
}

// metaFd performs the calls that change an open file's metadata
// (fchmod, fchown, fsetxattr, fremovexattr, futimens) on a copy of the
// caller's descriptor (pidfd_getfd), which another thread cannot swap.
func (s *supervisor) metaFd(tid int, n *notif, c seccomp.Call, valid func() bool) reply {
	args := n.Data.Args
	pidfd, err := unix.PidfdOpen(tgidOf(tid), 0)
	if err != nil {
		return fail(unix.ESRCH)
	}
	fd, err := unix.PidfdGetfd(pidfd, int(int32(args[0])), 0)
	unix.Close(pidfd)
	if err != nil {
		return fail(unix.EBADF)
	}
	defer unix.Close(fd)
	op, e := s.metaOp(tid, c.Name, args, 0)
	if e != 0 {
		return fail(e)
	}
	if !valid() || !s.allow(tid, fd, AccessMeta) {
		return fail(unix.EACCES)
	}
	return op.onFd(fd)
}

// metaOp is one metadata change, its arguments read from the caller.
type metaOp struct {
	kind  string // chmod, chown, times, setxattr, removexattr
	mode  uint32
	uid   int
	gid   int
	times *[2]unix.Timespec
	name  string
	value []byte
	flags int
}

// metaOp reads the arguments of the metadata call name, whose path (or
// fd) argument is at index p.
func (s *supervisor) metaOp(tid int, name string, args [6]uint64, p int) (metaOp, unix.Errno) {
	switch name {
	case "chmod", "fchmodat", "fchmodat2", "fchmod":
		return metaOp{kind: "chmod", mode: uint32(args[p+1] & 0o7777)}, 0
	case "chown", "lchown", "fchownat", "fchown":
		return metaOp{kind: "chown", uid: int(int32(args[p+1])), gid: int(int32(args[p+2]))}, 0
	case "utimensat":
		op := metaOp{kind: "times"}
		if a := args[2]; a != 0 {
			var b [32]byte
			if !readMem(tid, a, b[:]) {
				return op, unix.EFAULT
			}
			op.times = &[2]unix.Timespec{
				{Sec: int64(binary.NativeEndian.Uint64(b[0:])), Nsec: int64(binary.NativeEndian.Uint64(b[8:]))},
				{Sec: int64(binary.NativeEndian.Uint64(b[16:])), Nsec: int64(binary.NativeEndian.Uint64(b[24:]))},
			}
		}
		return op, 0
	case "utimes", "futimesat", "utime":
		op := metaOp{kind: "times"}
		if a := args[p+1]; a != 0 {
			var b [32]byte
			size, scale := 32, int64(1000) // struct timeval[2]: microseconds
			if name == "utime" {
				size, scale = 16, 0 // struct utimbuf: seconds
			}
			if !readMem(tid, a, b[:size]) {
				return op, unix.EFAULT
			}
			if scale == 0 {
				op.times = &[2]unix.Timespec{
					{Sec: int64(binary.NativeEndian.Uint64(b[0:]))},
					{Sec: int64(binary.NativeEndian.Uint64(b[8:]))},
				}
			} else {
				op.times = &[2]unix.Timespec{
					{Sec: int64(binary.NativeEndian.Uint64(b[0:])), Nsec: int64(binary.NativeEndian.Uint64(b[8:])) * scale},
					{Sec: int64(binary.NativeEndian.Uint64(b[16:])), Nsec: int64(binary.NativeEndian.Uint64(b[24:])) * scale},
				}
			}
		}
		return op, 0
	case "setxattr", "lsetxattr", "fsetxattr":
		xn, ok := readString(tid, args[p+1])
		if !ok {
			return metaOp{}, unix.EFAULT
		}
		size := args[p+3]
		if size > xattrSizeMax {
			return metaOp{}, unix.E2BIG
		}
		v := make([]byte, size)
		if size > 0 && !readMem(tid, args[p+2], v) {
			return metaOp{}, unix.EFAULT
		}
		return metaOp{kind: "setxattr", name: xn, value: v, flags: int(args[p+4])}, 0
	case "removexattr", "lremovexattr", "fremovexattr":
		xn, ok := readString(tid, args[p+1])
		if !ok {
			return metaOp{}, unix.EFAULT
		}
		return metaOp{kind: "removexattr", name: xn}, 0
	}
	return metaOp{}, unix.ENOSYS
}

// on performs op on the O_PATH descriptor obj (link: a symbolic link,
// not followed).
func (op metaOp) on(obj int, link bool) reply {
	p := fdPath(obj)
	switch op.kind {
	case "chmod":
		if link {
			return fail(unix.EOPNOTSUPP)
		}
		return result(unix.Fchmodat(unix.AT_FDCWD, p, op.mode, 0))
	case "chown":
		return result(unix.Fchownat(obj, "", op.uid, op.gid, unix.AT_EMPTY_PATH))
	case "times":
		if link {
			return result(utimensat(obj, "", op.times, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW))
		}
		return result(utimensat(unix.AT_FDCWD, p, op.times, 0))
	case "setxattr", "removexattr":
		if link {
			return fail(unix.EPERM) // no user attributes on links
		}
		if op.kind == "setxattr" {
			return result(unix.Setxattr(p, op.name, op.value, op.flags))
		}
		return result(unix.Removexattr(p, op.name))
	}
	return fail(unix.ENOSYS)
}

// onFd performs op on the open descriptor fd.
func (op metaOp) onFd(fd int) reply {
	switch op.kind {
	case "chmod":
		return result(unix.Fchmod(fd, op.mode))
	case "chown":
		return result(unix.Fchown(fd, op.uid, op.gid))
	case "times":
		return result(utimensat(fd, "", op.times, -1))
	case "setxattr":
		return result(unix.Fsetxattr(fd, op.name, op.value, op.flags))
	case "removexattr":
		return result(unix.Fremovexattr(fd, op.name))
	}
	return fail(unix.ENOSYS)
}

// utimensat is utimensat(2) with times possibly NULL (now); flags -1
// means the futimens form (a NULL path: fd itself).
func utimensat(fd int, p string, times *[2]unix.Timespec, flags int) error {
	var ts unsafe.Pointer
	if times != nil {
		ts = unsafe.Pointer(&times[0])
	}
	var pp *byte
	if flags >= 0 {
		b, err := unix.BytePtrFromString(p)
		if err != nil {
			return err
		}
		pp = b
	} else {
		flags = 0
	}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), uintptr(unsafe.Pointer(pp)), uintptr(ts), uintptr(flags), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
