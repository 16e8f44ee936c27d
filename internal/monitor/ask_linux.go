//go:build linux

package monitor

import (
	"encoding/binary"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/enforce/seccomp"
	"golang.org/x/sys/unix"
)

// This file is the asking of cordon run --ask on the bubblewrap backend
// (Options.Ask). The command runs in its own mount namespace, whose
// layout is the host's: every host path it sees is bound at the same
// path, and the rest is the sandbox's own (the private /tmp, /proc,
// /dev, the empty home, the masks over denied paths). A path the process
// names is taken as the host's path only where that holds: an absolute
// path (the sandbox's own trees are refused by the policy's DecideHost,
// never asked about), a relative one only when the directory it starts
// from is, by device and inode, the host's directory of the same path.
// The monitor then walks that path on the host itself, by descriptor,
// with the caller's rights (no capabilities, on a thread of its own),
// asks about the real path it reached, and on a yes opens that file again
// through its descriptor with the caller's flags and hands it in with
// its answer (SECCOMP_ADDFD_FLAG_SEND). An open that creates a file the
// host does not have (O_CREAT) is asked about by the real path of the
// directory it walked to and the new name, and on a yes the file is
// created there, by descriptor, with the caller's flags and mode less
// the caller's umask, never through a symbolic link (O_EXCL below the
// directory; a name that is a link, dangling or not, is not asked
// about). The caller's path string is read once; the kernel never looks
// it up again for a served open. What cannot be asked about (a file not
// on the host, a FIFO or device, a directory made by mkdir, openat2 with
// resolve flags) goes on to the kernel's layers as without --ask.

// askOpen handles the watched open n with Options.Ask: it returns the
// reply and true when the open was asked about (and is answered here),
// false when it goes on as any watched call.
func (m *Monitor) askOpen(n *notif) (reply, bool) {
	c, ok := m.calls[uint32(n.Data.Nr)]
	if !ok {
		return reply{}, false
	}
	pid, args := int(n.Pid), n.Data.Args
	var flags, mode uint64
	switch {
	case c.Kind == seccomp.CallOpen:
		flags, mode = args[c.Flags], args[c.Flags+1]
	case c.Kind == seccomp.CallOpenHow:
		var b [24]byte
		if args[3] < 24 || !readMem(pid, args[c.Flags], b[:]) || binary.NativeEndian.Uint64(b[16:]) != 0 {
			return reply{}, false
		}
		flags, mode = binary.NativeEndian.Uint64(b[:]), binary.NativeEndian.Uint64(b[8:])
	case c.Name == "creat":
		flags, mode = unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, args[1]
	default:
		return reply{}, false
	}
	if flags&unix.O_PATH != 0 || flags&unix.O_TMPFILE == unix.O_TMPFILE {
		return reply{}, false
	}
	access, create := openAccess(flags), flags&unix.O_CREAT != 0
	first := access
	if create {
		first = AccessCreate // or, when it is there, AccessWrite
	}
	p, slash, ok := hostPath(pid, args, c)
	if !ok || !m.opts.Ask.Askable(p, first) {
		return reply{}, false
	}
	if create && (slash || flags&unix.O_DIRECTORY != 0) {
		return reply{}, false // the kernel refuses it (EISDIR, EINVAL)
	}
	if create && flags&unix.O_EXCL != 0 {
		// Only a new file: never an existing one, nor a link's target.
		return m.askCreate(n, p, flags, mode)
	}
	// Walk it on the host, with the caller's rights.
	var obj int
	var real string
	var st unix.Stat_t
	e := m.onCallerThread(func() unix.Errno {
		follow := uint64(0)
		if flags&unix.O_NOFOLLOW != 0 {
			follow = unix.O_NOFOLLOW
		}
		fd, e := openat2(unix.AT_FDCWD, p, unix.O_PATH|follow|flags&unix.O_DIRECTORY, 0, unix.RESOLVE_NO_MAGICLINKS)
		if e != 0 {
			return e
		}
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return errnoOf(err)
		}
		obj = fd
		return 0
	})
	if e == unix.ENOENT && create {
		return m.askCreate(n, p, flags, mode)
	}
	if e != 0 {
		return reply{}, false // not on the host: the kernel's layers answer
	}
	defer unix.Close(obj)
	if real, ok = realPath(obj); !ok {
		return reply{}, false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		if access == AccessWrite {
			return reply{}, false
		}
	default:
		return reply{}, false
	}
	if !idValid(m.fd, n.ID) {
		return fail(unix.EACCES), true
	}
	switch m.opts.Ask.Ask(pid, m.comm(pid), real, access) {
	case Refuse:
		return fail(unix.EACCES), true
	case Serve:
	default:
		return reply{}, false
	}
	var fd int
	e = m.onCallerThread(func() unix.Errno {
		var e unix.Errno
		fd, e = openat2(unix.AT_FDCWD, fdPath(obj), reopenFlags(flags), 0, 0)
		return e
	})
	if e != 0 {
		return fail(e), true
	}
	return reply{kind: replyFd, fd: fd, cloexec: flags&unix.O_CLOEXEC != 0}, true
}

// reopenFlags are the flags that open an O_PATH descriptor of the file
// an open with flags walked to, as that open does.
func reopenFlags(flags uint64) uint64 {
	return (flags&^(unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC))&openFlags | unix.O_NOCTTY
}

// askCreate handles the open n with O_CREAT of p, the host's path, when
// the host has no file there: it walks to p's directory on the host (with
// the caller's rights), asks about the directory's real path joined with
// the new name, and on a yes creates the file there with the caller's
// flags and mode less the caller's umask. A name there already (a link,
// dangling or not, or one made meanwhile) is not asked about: the
// kernel's layers answer, as without --ask.
func (m *Monitor) askCreate(n *notif, p string, flags, mode uint64) (reply, bool) {
	pid := int(n.Pid)
	dir, name := filepath.Dir(p), filepath.Base(p)
	if name == "/" || name == "." || name == ".." {
		return reply{}, false
	}
	var pfd int
	e := m.onCallerThread(func() unix.Errno {
		fd, e := openat2(unix.AT_FDCWD, dir, unix.O_PATH|unix.O_DIRECTORY, 0, unix.RESOLVE_NO_MAGICLINKS)
		if e != 0 {
			return e
		}
		var st unix.Stat_t
		switch err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
		case err == nil:
			unix.Close(fd)
			return unix.EEXIST
		case errnoOf(err) != unix.ENOENT:
			unix.Close(fd)
			return errnoOf(err)
		}
		pfd = fd
		return 0
	})
	if e != 0 {
		return reply{}, false
	}
	defer unix.Close(pfd)
	dreal, ok := realPath(pfd)
	if !ok {
		return reply{}, false
	}
	real := filepath.Join(dreal, name)
	if !idValid(m.fd, n.ID) {
		return fail(unix.EACCES), true
	}
	switch m.opts.Ask.Ask(pid, m.comm(pid), real, AccessCreate) {
	case Refuse:
		return fail(unix.EACCES), true
	case Serve:
	default:
		return reply{}, false
	}
	mode = mode & 0o7777 &^ umaskOf(pid)
	var fd int
	e = m.onCallerThread(func() unix.Errno {
		var e unix.Errno
		// O_EXCL: a link put there meanwhile is never followed.
		fd, e = openat2(pfd, name, (flags|unix.O_EXCL|unix.O_NOCTTY)&^unix.O_CLOEXEC&openFlags, mode,
			unix.RESOLVE_BENEATH|unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS)
		if e == 0 && m.askUmask&uint32(mode) != 0 {
			// The process's umask, shared with this thread, took
			// bits the caller asked for: give them back.
			_ = unix.Fchmod(fd, uint32(mode))
		}
		return e
	})
	if e != 0 {
		// Made meanwhile (EEXIST), or refused on the host: the caller
		// sees why.
		return fail(e), true
	}
	return reply{kind: replyFd, fd: fd, cloexec: flags&unix.O_CLOEXEC != 0}, true
}

// hostPath is the path the open c of pid names, taken as the host's
// path: an absolute one cleaned; a relative one joined to the path of the
// directory it starts from (the working directory, or the dirfd), only
// when that directory is the host's directory of the same path (same
// device and inode). slash says that the path ends in a slash (it names
// a directory).
func hostPath(pid int, args [6]uint64, c seccomp.Call) (path string, slash, ok bool) {
	p, ok := readString(pid, args[c.Path])
	if !ok || p == "" {
		return "", false, false
	}
	slash = strings.HasSuffix(p, "/")
	if filepath.IsAbs(p) {
		return filepath.Clean(p), slash, true
	}
	name := "cwd"
	if c.Dirfd != seccomp.NoArg {
		if fd := int32(args[c.Dirfd]); fd != unix.AT_FDCWD {
			name = "fd/" + strconv.Itoa(int(fd))
		}
	}
	dir, ok := procLink(pid, name)
	if !ok {
		return "", false, false
	}
	var in, host unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid)+"/"+name, &in) != nil || unix.Stat(dir, &host) != nil ||
		in.Dev != host.Dev || in.Ino != host.Ino {
		return "", false, false
	}
	return filepath.Join(dir, p), slash, true
}

// onCallerThread runs fn on the monitor's thread prepared as the
// supervisor's (prepareThread: no effective capabilities, umask 0 in a
// file-system context of its own, or else the process's umask, kept in
// m.askUmask) and returns its result. That thread is one, started with
// the monitor's first question and ended by Stop: a thread locked by a
// goroutine that ends is ended with it, and were it the thread that
// started bwrap, the sandbox would be killed with it (bwrap's
// --die-with-parent is the parent thread's death signal).
func (m *Monitor) onCallerThread(fn func() unix.Errno) unix.Errno {
	m.askOnce.Do(func() {
		m.askFns = make(chan func())
		ready := make(chan error, 1)
		go func() {
			shared, err := prepareThread()
			if shared {
				m.askUmask = uint32(umaskOf(unix.Gettid()))
			}
			ready <- err
			if err != nil {
				return
			}
			for f := range m.askFns {
				f()
			}
		}()
		if err := <-ready; err != nil {
			m.askFns = nil
		}
	})
	if m.askFns == nil {
		return unix.EACCES
	}
	done := make(chan unix.Errno, 1)
	m.askFns <- func() { done <- fn() }
	return <-done
}
