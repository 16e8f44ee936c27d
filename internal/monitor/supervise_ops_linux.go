//go:build linux

package monitor

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/enforce/seccomp"
	"golang.org/x/sys/unix"
)

// openFlags are the open flags the supervisor passes on; openat and open
// ignore others, openat2 refuses them (and so does the supervisor, for
// it).
const openFlags = unix.O_ACCMODE | unix.O_CREAT | unix.O_EXCL | unix.O_NOCTTY | unix.O_TRUNC |
	unix.O_APPEND | unix.O_NONBLOCK | unix.O_DSYNC | unix.O_SYNC | unix.O_DIRECT | unix.O_LARGEFILE |
	unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NOATIME | unix.O_CLOEXEC | unix.O_PATH | unix.O_TMPFILE | unix.O_ASYNC

// resolveFlags are the openat2 resolve flags the supervisor knows.
const resolveFlags = unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS |
	unix.RESOLVE_BENEATH | unix.RESOLVE_IN_ROOT | resolveCached

// resolveCached is RESOLVE_CACHED (Linux 5.12).
const resolveCached = 0x20

// openAccess is what an open with flags does (see openOp).
func openAccess(flags uint64) Access {
	if flags&unix.O_PATH != 0 {
		return AccessPath
	}
	if op, _ := openOp(flags); op == OpWrite {
		return AccessWrite
	}
	return AccessRead
}

// open performs an open (open, openat, openat2, creat) and hands the
// descriptor in. The path is walked once, to an O_PATH descriptor (the
// parent directory's, when the call creates), whose real path the policy
// decides; the file is then opened again through that descriptor, never
// through the caller's path string, with the caller's flags.
func (s *supervisor) open(tid int, n *notif, c seccomp.Call, valid func() bool) reply {
	args := n.Data.Args
	var flags, mode, resolve uint64
	switch c.Name {
	case "creat":
		flags, mode = unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, args[1]
	case "openat2":
		size := args[3]
		if size < 24 || size > 4096 {
			return fail(unix.EINVAL)
		}
		b := make([]byte, size)
		if !readMem(tid, args[2], b) {
			return fail(unix.EFAULT)
		}
		for _, x := range b[24:] {
			if x != 0 {
				return fail(unix.E2BIG)
			}
		}
		flags = binary.NativeEndian.Uint64(b[0:])
		mode = binary.NativeEndian.Uint64(b[8:])
		resolve = binary.NativeEndian.Uint64(b[16:])
		if flags&^openFlags != 0 || resolve&^resolveFlags != 0 {
			return fail(unix.EINVAL)
		}
	default:
		flags = args[c.Flags] & openFlags
		mode = args[c.Flags+1] & 0o7777
	}
	p, ok := readString(tid, args[c.Path])
	if !ok {
		return fail(unix.EFAULT)
	}
	dirfd := int32(unix.AT_FDCWD)
	if c.Dirfd != seccomp.NoArg {
		dirfd = int32(args[c.Dirfd])
	}
	if strings.HasPrefix(p, "/") && resolve&unix.RESOLVE_BENEATH != 0 {
		return fail(unix.EXDEV)
	}
	if strings.HasPrefix(p, "/") && resolve&unix.RESOLVE_IN_ROOT != 0 {
		// Absolute below dirfd, as if it were the root.
		if p = strings.TrimLeft(p, "/"); p == "" {
			p = "."
		}
	}
	base, walk, magic, e := s.at(tid, dirfd, p)
	if e != 0 {
		return fail(e)
	}
	if base != s.root {
		defer unix.Close(base)
	}
	if !magic {
		resolve |= unix.RESOLVE_NO_MAGICLINKS
	}
	if flags&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		mode &^= umaskOf(tid)
	}
	tmpfile := flags&unix.O_TMPFILE == unix.O_TMPFILE
	follow := uint64(0)
	if flags&unix.O_NOFOLLOW != 0 {
		follow = unix.O_NOFOLLOW
	}
	// The object: an O_PATH descriptor of what the path names.
	var obj int
	created := false
	switch {
	case tmpfile:
		dir, e := openat2(base, walk, unix.O_PATH|unix.O_DIRECTORY, 0, resolve)
		if e != 0 {
			return fail(e)
		}
		defer unix.Close(dir)
		if !valid() || !s.allowName(dir, ".tmpfile", AccessCreate) {
			return fail(unix.EACCES)
		}
		fd, e := openat2(dir, ".", flags&^unix.O_CLOEXEC, mode, 0)
		if e != 0 {
			return fail(e)
		}
		s.fixMode(fd, -1, "", uint32(mode))
		return reply{kind: replyFd, fd: fd, cloexec: flags&unix.O_CLOEXEC != 0}
	case flags&unix.O_CREAT != 0:
		var e unix.Errno
		obj, created, e = s.create(tid, base, walk, flags, mode, resolve, valid)
		if e != 0 {
			return fail(e)
		}
	default:
		var e unix.Errno
		obj, e = openat2(base, walk, unix.O_PATH|follow|flags&unix.O_DIRECTORY, 0, resolve)
		if e != 0 {
			return fail(e)
		}
	}
	defer unix.Close(obj)
	if created {
		// Opened by create with the caller's flags already.
		return reply{kind: replyFd, fd: dup(obj), cloexec: flags&unix.O_CLOEXEC != 0}
	}
	var st unix.Stat_t
	if err := unix.Fstat(obj, &st); err != nil {
		return fail(errnoOf(err))
	}
	if r := s.redirect(&st); r != nil && flags&unix.O_PATH == 0 && openAccess(flags) == AccessRead {
		// Its private copy, once the file itself may be read.
		if !valid() || !s.allow(tid, obj, AccessRead) {
			return fail(unix.EACCES)
		}
		fd, e := openat2(unix.AT_FDCWD, fdPath(int(r.Copy.Fd())), unix.O_RDONLY|flags&unix.O_NONBLOCK, 0, 0)
		if e != 0 {
			return fail(e)
		}
		return reply{kind: replyFd, fd: fd, cloexec: flags&unix.O_CLOEXEC != 0}
	}
	if !valid() || !s.allow(tid, obj, openAccess(flags)) && !s.asked(tid, obj, flags, &st) {
		return fail(unix.EACCES)
	}
	if flags&unix.O_PATH != 0 {
		return reply{kind: replyFd, fd: dup(obj), cloexec: flags&unix.O_CLOEXEC != 0}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return fail(unix.ELOOP) // O_NOFOLLOW on a symbolic link
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR && flags&unix.O_ACCMODE != unix.O_RDONLY {
		return fail(unix.EISDIR)
	}
	reopen := reopenFlags(flags)
	if st.Mode&unix.S_IFMT == unix.S_IFIFO && flags&unix.O_NONBLOCK == 0 {
		// A FIFO's open waits for its other end: in a goroutine of its
		// own, not in the serving one, which first checks the FIFO's
		// mode as the caller.
		want := uint32(unix.R_OK)
		switch flags & unix.O_ACCMODE {
		case unix.O_WRONLY:
			want = unix.W_OK
		case unix.O_RDWR:
			want = unix.R_OK | unix.W_OK
		}
		if err := unix.Faccessat(unix.AT_FDCWD, fdPath(obj), want, unix.AT_EACCESS); err != nil {
			return fail(errnoOf(err))
		}
		o := dup(obj)
		return reply{kind: replyAsync, async: func(send func(reply)) {
			defer unix.Close(o)
			fd, e := openat2(unix.AT_FDCWD, fdPath(o), reopen, 0, 0)
			if e != 0 {
				send(fail(e))
				return
			}
			send(reply{kind: replyFd, fd: fd, cloexec: flags&unix.O_CLOEXEC != 0})
		}}
	}
	fd, e := openat2(unix.AT_FDCWD, fdPath(obj), reopen, 0, 0)
	if e != 0 {
		return fail(e)
	}
	return reply{kind: replyFd, fd: fd, cloexec: flags&unix.O_CLOEXEC != 0}
}

// asked asks Options.Ask (cordon run --ask) about an open the policy
// refused, of the regular file or directory obj for reading, or of a
// regular file for writing, and reports whether a person allowed it: the
// open then goes on as an allowed one, by descriptor. The process's view
// of the files is the host's here (no mount namespace).
func (s *supervisor) asked(tid, obj int, flags uint64, st *unix.Stat_t) bool {
	if s.ask == nil || flags&unix.O_PATH != 0 {
		return false
	}
	access := openAccess(flags)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		if access == AccessWrite {
			return false
		}
	default:
		return false
	}
	p, ok := realPath(obj)
	if !ok || !s.ask.Askable(p, access) {
		return false
	}
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/comm")
	return s.ask.Ask(tid, strings.TrimSpace(string(comm)), p, access) == Serve
}

// askedCreate asks Options.Ask (cordon run --ask) about creating name
// in the directory pfd, which the policy refused, and reports whether a
// person allowed it: the create then goes on as an allowed one, with
// O_EXCL below pfd. A name that is there (a symbolic link, dangling or
// not: open would create its target) is not asked about.
func (s *supervisor) askedCreate(tid, pfd int, name string) bool {
	if s.ask == nil {
		return false
	}
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); errnoOf(err) != unix.ENOENT {
		return false
	}
	dir, ok := realPath(pfd)
	if !ok {
		return false
	}
	p := filepath.Join(dir, name)
	if !s.ask.Askable(p, AccessCreate) {
		return false
	}
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/comm")
	return s.ask.Ask(tid, strings.TrimSpace(string(comm)), p, AccessCreate) == Serve
}

// create opens or creates, as open(2) with O_CREAT does, the last name of
// walk below base: an existing file is returned as an O_PATH descriptor
// for open to decide; a new one is created, once the policy allows the
// name, with the caller's flags and mode, and returned open (created).
func (s *supervisor) create(tid, base int, walk string, flags, mode, resolve uint64, valid func() bool) (fd int, created bool, e unix.Errno) {
	dir, name := splitLast(walk)
	if name == "" || name == "." || name == ".." {
		return -1, false, unix.EISDIR
	}
	pfd, e := openat2(base, dir, unix.O_PATH|unix.O_DIRECTORY, 0, resolve)
	if e != 0 {
		return -1, false, e
	}
	defer unix.Close(pfd)
	last := resolve &^ (unix.RESOLVE_BENEATH | unix.RESOLVE_IN_ROOT)
	if resolve&(unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT) != 0 {
		last |= unix.RESOLVE_BENEATH // one name, below the directory
	}
	for range 3 {
		if flags&unix.O_EXCL == 0 {
			follow := uint64(0)
			if flags&unix.O_NOFOLLOW != 0 {
				follow = unix.O_NOFOLLOW
			}
			fd, e := openat2(pfd, name, unix.O_PATH|follow|flags&unix.O_DIRECTORY, 0, last)
			if e == 0 {
				return fd, false, 0
			}
			if e != unix.ENOENT {
				return -1, false, e
			}
		}
		if !valid() || !s.allowName(pfd, name, AccessCreate) && !s.askedCreate(tid, pfd, name) {
			return -1, false, unix.EACCES
		}
		fd, e := openat2(pfd, name, (flags|unix.O_EXCL|unix.O_NOCTTY)&^unix.O_CLOEXEC, mode, last)
		if e == unix.EEXIST && flags&unix.O_EXCL == 0 {
			continue // made meanwhile: open it as it is
		}
		if e != 0 {
			return -1, false, e
		}
		s.fixMode(fd, -1, "", uint32(mode))
		return fd, true, 0
	}
	return -1, false, unix.EEXIST
}

// splitLast splits walk into its directory and last name, trailing
// slashes dropped.
func splitLast(walk string) (dir, name string) {
	w := strings.TrimRight(walk, "/")
	if w == "" {
		return ".", ""
	}
	i := strings.LastIndexByte(w, '/')
	if i < 0 {
		return ".", w
	}
	if i == 0 {
		return "/", w[1:]
	}
	return w[:i], w[i+1:]
}

func dup(fd int) int {
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return d
}

// object walks (dirfd, path argument pathArg) of thread tid to an O_PATH
// descriptor, following the last link when follow is set; with
// AT_EMPTY_PATH in flags and an empty path, the object is dirfd itself.
func (s *supervisor) object(tid int, args [6]uint64, dirArg, pathArg int, follow, emptyPath bool) (int, unix.Errno) {
	dirfd := int32(unix.AT_FDCWD)
	if dirArg != seccomp.NoArg {
		dirfd = int32(args[dirArg])
	}
	p, ok := readString(tid, args[pathArg])
	if !ok {
		return -1, unix.EFAULT
	}
	if p == "" && emptyPath {
		if dirfd == unix.AT_FDCWD {
			p = "."
		} else {
			fd, err := unix.Open("/proc/"+strconv.Itoa(tid)+"/fd/"+strconv.Itoa(int(dirfd)), unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				return -1, unix.EBADF
			}
			return fd, 0
		}
	}
	base, walk, magic, e := s.at(tid, dirfd, p)
	if e != 0 {
		return -1, e
	}
	if base != s.root {
		defer unix.Close(base)
	}
	var resolve uint64
	if !magic {
		resolve = unix.RESOLVE_NO_MAGICLINKS
	}
	fl := uint64(unix.O_PATH)
	if !follow {
		fl |= unix.O_NOFOLLOW
	}
	return openat2(base, walk, fl, 0, resolve)
}

// parent walks (dirfd, path argument pathArg) of thread tid to the
// directory of its last name (O_PATH), and returns that name.
func (s *supervisor) parent(tid int, args [6]uint64, dirArg, pathArg int) (int, string, unix.Errno) {
	dirfd := int32(unix.AT_FDCWD)
	if dirArg != seccomp.NoArg {
		dirfd = int32(args[dirArg])
	}
	p, ok := readString(tid, args[pathArg])
	if !ok {
		return -1, "", unix.EFAULT
	}
	base, walk, magic, e := s.at(tid, dirfd, p)
	if e != 0 {
		return -1, "", e
	}
	if base != s.root {
		defer unix.Close(base)
	}
	dir, name := splitLast(walk)
	if name == "" || name == "." || name == ".." {
		return -1, "", unix.EINVAL
	}
	var resolve uint64
	if !magic {
		resolve = unix.RESOLVE_NO_MAGICLINKS
	}
	pfd, e := openat2(base, dir, unix.O_PATH|unix.O_DIRECTORY, 0, resolve)
	return pfd, name, e
}

// truncate performs truncate(2) on the file the path names, opened for
// writing through its descriptor.
func (s *supervisor) truncate(tid int, n *notif, valid func() bool) reply {
	obj, e := s.object(tid, n.Data.Args, seccomp.NoArg, 0, true, false)
	if e != 0 {
		return fail(e)
	}
	defer unix.Close(obj)
	var st unix.Stat_t
	if err := unix.Fstat(obj, &st); err != nil {
		return fail(errnoOf(err))
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fail(unix.EISDIR)
	case unix.S_IFREG:
	default:
		return fail(unix.EINVAL)
	}
	if !valid() || !s.allow(tid, obj, AccessWrite) {
		return fail(unix.EACCES)
	}
	fd, e := openat2(unix.AT_FDCWD, fdPath(obj), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0, 0)
	if e != 0 {
		return fail(e)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(n.Data.Args[1])); err != nil {
		return fail(errnoOf(err))
	}
	return done(0)
}

// name performs the calls that create, remove, rename or link a name,
// each in the directory it was walked to, once the policy allows the
// name there (and, for a link, the file linked).
func (s *supervisor) name(tid int, n *notif, c seccomp.Call, valid func() bool) reply {
	args := n.Data.Args
	dirArg, pathArg := c.Dirfd, c.Path
	if c.Path2 != seccomp.NoArg {
		dirArg, pathArg = c.Dirfd2, c.Path2 // rename's new name
	}
	pfd, name, e := s.parent(tid, args, dirArg, pathArg)
	if e != 0 {
		return fail(e)
	}
	defer unix.Close(pfd)
	// As the kernel, which looks the name up before any check: an
	// existing name cannot be made (mkdir -p of a read-only tree gets
	// EEXIST), a missing one cannot be removed.
	var st unix.Stat_t
	exists := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	switch c.Name {
	case "mkdir", "mkdirat", "mknod", "mknodat", "symlink", "symlinkat", "link", "linkat":
		if exists {
			return fail(unix.EEXIST)
		}
	case "unlink", "unlinkat", "rmdir":
		if !exists {
			return fail(unix.ENOENT)
		}
	}
	switch c.Name {
	case "unlink", "unlinkat", "rmdir":
		flags := 0
		switch c.Name {
		case "rmdir":
			flags = unix.AT_REMOVEDIR
		case "unlinkat":
			flags = int(args[2])
		}
		if !valid() || !s.allowName(pfd, name, AccessRemove) {
			return fail(unix.EACCES)
		}
		return result(unix.Unlinkat(pfd, name, flags))
	case "mkdir", "mkdirat":
		mode := args[c.Path+1] & 0o7777 &^ umaskOf(tid)
		if !valid() || !s.allowName(pfd, name, AccessCreate) {
			return fail(unix.EACCES)
		}
		if err := unix.Mkdirat(pfd, name, uint32(mode)); err != nil {
			return result(err)
		}
		s.fixMode(-1, pfd, name, uint32(mode))
		return done(0)
	case "mknod", "mknodat":
		mode := args[c.Path+1]
		mode = mode&unix.S_IFMT | mode&0o7777&^umaskOf(tid)
		if !valid() || !s.allowName(pfd, name, AccessCreate) {
			return fail(unix.EACCES)
		}
		if err := unix.Mknodat(pfd, name, uint32(mode), int(args[c.Path+2])); err != nil {
			return result(err)
		}
		s.fixMode(-1, pfd, name, uint32(mode))
		return done(0)
	case "symlink", "symlinkat":
		target, ok := readString(tid, args[0])
		if !ok {
			return fail(unix.EFAULT)
		}
		if !valid() || !s.allowName(pfd, name, AccessCreate) {
			return fail(unix.EACCES)
		}
		return result(unix.Symlinkat(target, pfd, name))
	case "rename", "renameat", "renameat2":
		odir, oname, e := s.parent(tid, args, c.Dirfd, c.Path)
		if e != 0 {
			return fail(e)
		}
		defer unix.Close(odir)
		flags := uint(0)
		if c.Name == "renameat2" {
			flags = uint(args[4])
		}
		if r := s.redirectAt(pfd, name); r != nil {
			return s.commit(r, odir, oname, pfd, name, flags, valid)
		}
		ok := valid() && s.allowName(odir, oname, AccessRemove) && s.allowName(pfd, name, AccessCreate) && s.allowName(pfd, name, AccessRemove)
		ok = ok && s.allowMove(odir, oname, pfd, name)
		if flags&unix.RENAME_EXCHANGE != 0 {
			ok = ok && s.allowName(odir, oname, AccessCreate) && s.allowMove(pfd, name, odir, oname)
		}
		if !ok {
			return fail(unix.EACCES)
		}
		return result(unix.Renameat2(odir, oname, pfd, name, flags))
	case "link", "linkat":
		var src int
		if c.Name == "link" {
			src, e = s.object(tid, args, seccomp.NoArg, 0, false, false)
		} else {
			fl := args[4]
			src, e = s.object(tid, args, 0, 1, fl&unix.AT_SYMLINK_FOLLOW != 0, fl&unix.AT_EMPTY_PATH != 0)
		}
		if e != 0 {
			return fail(e)
		}
		defer unix.Close(src)
		if !valid() || !s.allow(tid, src, AccessLink) || !s.allowName(pfd, name, AccessCreate) {
			return fail(unix.EACCES)
		}
		return result(unix.Linkat(unix.AT_FDCWD, fdPath(src), pfd, name, unix.AT_SYMLINK_FOLLOW))
	}
	return fail(unix.ENOSYS)
}

// xattrSizeMax is XATTR_SIZE_MAX.
const xattrSizeMax = 65536

func result(err error) reply {
	if err != nil {
		return fail(errnoOf(err))
	}
	return done(0)
}
