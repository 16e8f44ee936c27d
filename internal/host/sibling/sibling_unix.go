//go:build unix

package sibling

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// exeSuffix ends a program's file name: none on Unix.
const exeSuffix = ""

// recheck checks again, on its descriptor, the owner and mode of a
// program that passed Open before.
func recheck(b *Binary) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(b.File.Fd()), &st); err != nil {
		return fmt.Errorf("checking %s: %w", b.Path, err)
	}
	return owned(b.Path, &st, "")
}

func open(p string) (*os.File, error) {
	dir, name := filepath.Split(p)
	dir = filepath.Clean(dir)
	dfd, err := unix.Open(dir, dirOpenFlags, 0)
	if err != nil {
		return nil, missing(p, err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return nil, fmt.Errorf("checking %s: %w", dir, err)
	}
	if err := owned(dir, &st, "directory "); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, &Error{p, "is a symbolic link", "cordon runs only a program that is a file of its own beside it; " + reinstall()}
	case err != nil:
		return nil, missing(p, err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("checking %s: %w", p, err)
	}
	if err := regular(p, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := owned(p, &st, ""); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// missing is the error for a sibling that could not be opened.
func missing(p string, err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return &Error{p, "is missing", reinstall()}
	}
	return &Error{p, fmt.Sprintf("cannot be opened (%v)", err), reinstall()}
}

// regular checks that st is an executable regular file.
func regular(p string, st *unix.Stat_t) error {
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return &Error{p, "is not a regular file", reinstall()}
	}
	if st.Mode&0o111 == 0 {
		return &Error{p, "is not executable", "chmod 755 " + p + ", or " + reinstall()}
	}
	return nil
}

// owned checks that st, of the file or directory p (kind names which, for
// messages), is owned by root or the effective user and not writable by
// group or others.
func owned(p string, st *unix.Stat_t, kind string) error {
	if euid := uint32(os.Geteuid()); st.Uid != 0 && st.Uid != euid {
		return &Error{kind + p, fmt.Sprintf("is owned by uid %d, neither root nor you (uid %d), so another user could replace what cordon runs", st.Uid, euid),
			fmt.Sprintf("install cordon's binaries into a directory of your own or root's (%s)", reinstall())}
	}
	if st.Mode&0o022 != 0 {
		return &Error{kind + p, fmt.Sprintf("is writable by group or others (mode %04o), so another user could replace what cordon runs", st.Mode&0o7777),
			"chmod go-w " + p}
	}
	return nil
}
