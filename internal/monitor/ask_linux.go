//go:build linux

package monitor

import (
	"encoding/binary"
	"path/filepath"
	"strconv"

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
// its answer (SECCOMP_ADDFD_FLAG_SEND). The caller's path string is read
// once; the kernel never looks it up again for a served open. What cannot
// be asked about (a file not on the host, a FIFO or device, an open that
// creates a file, openat2 with resolve flags) goes on to the kernel's
// layers as without --ask.

// askOpen handles the watched open n with Options.Ask: it returns the
// reply and true when the open was asked about (and is answered here),
// false when it goes on as any watched call.
func (m *Monitor) askOpen(n *notif) (reply, bool) {
	c, ok := m.calls[uint32(n.Data.Nr)]
	if !ok || c.Kind != seccomp.CallOpen && c.Kind != seccomp.CallOpenHow {
		return reply{}, false
	}
	pid, args := int(n.Pid), n.Data.Args
	flags := args[c.Flags]
	if c.Kind == seccomp.CallOpenHow {
		var b [24]byte
		if args[3] < 24 || !readMem(pid, args[c.Flags], b[:]) || binary.NativeEndian.Uint64(b[16:]) != 0 {
			return reply{}, false
		}
		flags = binary.NativeEndian.Uint64(b[:])
	}
	if flags&(unix.O_PATH|unix.O_CREAT) != 0 || flags&unix.O_TMPFILE == unix.O_TMPFILE {
		return reply{}, false
	}
	op, _ := openOp(flags)
	write := op == OpWrite
	p, ok := hostPath(pid, args, c)
	if !ok || !m.opts.Ask.Askable(p, write) {
		return reply{}, false
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
		if write {
			return reply{}, false
		}
	default:
		return reply{}, false
	}
	if !idValid(m.fd, n.ID) {
		return fail(unix.EACCES), true
	}
	switch m.opts.Ask.Ask(pid, m.comm(pid), real, write) {
	case Refuse:
		return fail(unix.EACCES), true
	case Serve:
	default:
		return reply{}, false
	}
	var fd int
	e = m.onCallerThread(func() unix.Errno {
		var e unix.Errno
		reopen := (flags &^ (unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC)) | unix.O_NOCTTY
		fd, e = openat2(unix.AT_FDCWD, fdPath(obj), reopen&openFlags, 0, 0)
		return e
	})
	if e != 0 {
		return fail(e), true
	}
	return reply{kind: replyFd, fd: fd, cloexec: flags&unix.O_CLOEXEC != 0}, true
}

// hostPath is the path the open c of pid names, taken as the host's
// path: an absolute one cleaned; a relative one joined to the path of the
// directory it starts from (the working directory, or the dirfd), only
// when that directory is the host's directory of the same path (same
// device and inode).
func hostPath(pid int, args [6]uint64, c seccomp.Call) (string, bool) {
	p, ok := readString(pid, args[c.Path])
	if !ok || p == "" {
		return "", false
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), true
	}
	name := "cwd"
	if c.Dirfd != seccomp.NoArg {
		if fd := int32(args[c.Dirfd]); fd != unix.AT_FDCWD {
			name = "fd/" + strconv.Itoa(int(fd))
		}
	}
	dir, ok := procLink(pid, name)
	if !ok {
		return "", false
	}
	var in, host unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid)+"/"+name, &in) != nil || unix.Stat(dir, &host) != nil ||
		in.Dev != host.Dev || in.Ino != host.Ino {
		return "", false
	}
	return filepath.Join(dir, p), true
}

// onCallerThread runs fn on the monitor's thread prepared as the
// supervisor's (prepareThread: no effective capabilities, umask 0) and
// returns its result. That thread is one, started with the monitor's
// first question and ended by Stop: a thread locked by a goroutine that
// ends is ended with it, and were it the thread that started bwrap, the
// sandbox would be killed with it (bwrap's --die-with-parent is the
// parent thread's death signal).
func (m *Monitor) onCallerThread(fn func() unix.Errno) unix.Errno {
	m.askOnce.Do(func() {
		m.askFns = make(chan func())
		ready := make(chan error, 1)
		go func() {
			// Its umask does not matter: an open that creates is never
			// asked about.
			_, err := prepareThread()
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
