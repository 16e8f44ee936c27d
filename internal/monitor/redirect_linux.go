package monitor

import (
	"io"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/enforce/seccomp"
	"golang.org/x/sys/unix"
)

// maxRedirected bounds what commit copies into a redirected file's copy.
const maxRedirected = 1 << 20

// redirectOf returns the entry of redirects for the file st describes, or
// nil.
func redirectOf(redirects []Redirect, st *unix.Stat_t) *Redirect {
	for i := range redirects {
		if r := &redirects[i]; r.Dev == st.Dev && r.Ino == st.Ino {
			return r
		}
	}
	return nil
}

// redirectIn is redirectOf for the name in the directory pfd.
func redirectIn(redirects []Redirect, pfd int, name string) *Redirect {
	if len(redirects) == 0 {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	return redirectOf(redirects, &st)
}

func (s *supervisor) redirect(st *unix.Stat_t) *Redirect { return redirectOf(s.redirects, st) }

func (s *supervisor) redirectAt(pfd int, name string) *Redirect {
	return redirectIn(s.redirects, pfd, name)
}

// commit is commitInto where the policy lets the caller remove the lock.
func (s *supervisor) commit(r *Redirect, odir int, oname string, pfd int, name string, flags uint, valid func() bool) reply {
	return commitInto(r, odir, oname, pfd, name, flags, func() bool { return valid() && s.allowName(odir, oname, AccessRemove) })
}

// renameInto performs, for the violation monitor under bubblewrap, a
// rename call of a process in the sandbox's mount namespace whose new name
// is a file of Options.Redirects bound there (the copy itself): as
// commitInto, both names walked by descriptor from the caller's root,
// working directory or dirfd (/proc/PID/...). ok is false for any other
// rename, which goes on to the kernel (CONTINUE), as do those whose names
// cannot be walked so: onto a mount point, it then fails as it would.
func (m *Monitor) renameInto(n *notif, c seccomp.Call) (r reply, ok bool) {
	tid, args := int(n.Pid), n.Data.Args
	pfd, name, ok := parentIn(tid, args, c.Dirfd2, c.Path2)
	if !ok {
		return reply{}, false
	}
	defer unix.Close(pfd)
	red := redirectIn(m.opts.Redirects, pfd, name)
	if red == nil {
		return reply{}, false
	}
	odir, oname, ok := parentIn(tid, args, c.Dirfd, c.Path)
	if !ok {
		return reply{}, false
	}
	defer unix.Close(odir)
	flags := uint(0)
	if c.Name == "renameat2" {
		flags = uint(args[4])
	}
	return commitInto(red, odir, oname, pfd, name, flags, func() bool { return idValid(m.fd, n.ID) }), true
}

// parentIn opens (O_PATH) the directory of the path argument pathArg of
// thread tid's call, walked from its root (an absolute path, inside that
// root), its working directory or its dirfd argument, following no magic
// link, and returns it with the last name.
func parentIn(tid int, args [6]uint64, dirArg, pathArg int) (int, string, bool) {
	p, ok := readString(tid, args[pathArg])
	if !ok || p == "" {
		return -1, "", false
	}
	proc := "/proc/" + strconv.Itoa(tid) + "/"
	base, resolve := proc+"cwd", uint64(unix.RESOLVE_NO_MAGICLINKS)
	switch {
	case p[0] == '/':
		base, resolve = proc+"root", resolve|unix.RESOLVE_IN_ROOT
	case dirArg != seccomp.NoArg && int32(args[dirArg]) != unix.AT_FDCWD:
		if int32(args[dirArg]) < 0 {
			return -1, "", false
		}
		base = proc + "fd/" + strconv.Itoa(int(int32(args[dirArg])))
	}
	bfd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", false
	}
	defer unix.Close(bfd)
	dir, name := splitLast(strings.TrimLeft(p, "/"))
	if name == "" || name == "." || name == ".." {
		return -1, "", false
	}
	pfd, e := openat2(bfd, dir, unix.O_PATH|unix.O_DIRECTORY, 0, resolve)
	if e != 0 {
		return -1, "", false
	}
	return pfd, name, true
}

// commitInto performs a rename onto the redirected file r (name in the
// directory pfd) as git's lock file protocol means it: only NAME.lock of
// the same directory, a regular file with one link, is read (at most
// maxRedirected bytes) once allow says the caller may remove it, written
// over r's copy, and removed; the file itself is left as it is. Anything
// else renamed onto it is refused (EACCES), as the file is protected.
func commitInto(r *Redirect, odir int, oname string, pfd int, name string, flags uint, allow func() bool) reply {
	if flags&unix.RENAME_EXCHANGE != 0 || oname != name+".lock" {
		return fail(unix.EACCES)
	}
	if flags&unix.RENAME_NOREPLACE != 0 {
		return fail(unix.EEXIST)
	}
	var od, nd unix.Stat_t
	if unix.Fstat(odir, &od) != nil || unix.Fstat(pfd, &nd) != nil || od.Dev != nd.Dev || od.Ino != nd.Ino {
		return fail(unix.EACCES)
	}
	fd, e := openat2(odir, oname, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0, unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS|unix.RESOLVE_BENEATH)
	if e != 0 {
		return fail(e)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(errnoOf(err))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || st.Size > maxRedirected {
		return fail(unix.EACCES)
	}
	if !allow() {
		return fail(unix.EACCES)
	}
	data := make([]byte, 0, st.Size)
	buf := make([]byte, 32<<10)
	for len(data) <= maxRedirected {
		n, err := unix.Read(fd, buf)
		if n > 0 {
			data = append(data, buf[:n]...)
		}
		if err != nil {
			return fail(errnoOf(err))
		}
		if n == 0 {
			break
		}
	}
	if len(data) > maxRedirected {
		return fail(unix.EFBIG)
	}
	if _, err := r.Copy.WriteAt(data, 0); err != nil {
		return fail(unix.EIO)
	}
	if err := r.Copy.Truncate(int64(len(data))); err != nil {
		return fail(unix.EIO)
	}
	if _, err := r.Copy.Seek(0, io.SeekStart); err != nil {
		return fail(unix.EIO)
	}
	if r.Committed != nil {
		r.Committed.Add(1)
	}
	return result(unix.Unlinkat(odir, oname, 0))
}
