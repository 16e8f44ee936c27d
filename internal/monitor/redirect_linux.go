package monitor

import (
	"io"

	"golang.org/x/sys/unix"
)

// maxRedirected bounds what commit copies into a redirected file's copy.
const maxRedirected = 1 << 20

// redirect returns the Options.Redirects entry of the file st describes,
// or nil.
func (s *supervisor) redirect(st *unix.Stat_t) *Redirect {
	for i := range s.redirects {
		if r := &s.redirects[i]; r.Dev == st.Dev && r.Ino == st.Ino {
			return r
		}
	}
	return nil
}

// redirectAt is redirect for the name in the directory pfd.
func (s *supervisor) redirectAt(pfd int, name string) *Redirect {
	if len(s.redirects) == 0 {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	return s.redirect(&st)
}

// commit performs a rename onto the redirected file r (name in the
// directory pfd) as git's lock file protocol means it: only NAME.lock of
// the same directory, a regular file with one link that the policy lets
// the caller remove, is read (at most maxRedirected bytes), written over
// r's copy, and removed; the file itself is left as it is. Anything else
// renamed onto it is refused (EACCES), as the file is protected.
func (s *supervisor) commit(r *Redirect, odir int, oname string, pfd int, name string, flags uint, valid func() bool) reply {
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
	if !valid() || !s.allowName(odir, oname, AccessRemove) {
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
	return result(unix.Unlinkat(odir, oname, 0))
}
