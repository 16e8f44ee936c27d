//go:build unix

package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// openFlags never block (a FIFO or a device opens at once) and never make
// the file cordon's controlling terminal.
const openFlags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY

// ReadFile reads a config file safely: it opens path without blocking,
// checks on the open descriptor that it is a regular file of at most
// MaxFileSize bytes, and reads at most that much through the descriptor.
// With opts it also refuses symbolic links (see ReadOptions). A missing
// file gives an error satisfying errors.Is(err, fs.ErrNotExist). Every
// error is one line starting with path; none contains the file's content.
func ReadFile(path string, opts ReadOptions) ([]byte, error) {
	var (
		fd  int
		err error
	)
	if opts.Beneath != "" {
		fd, err = openBeneath(path, opts.Beneath)
	} else {
		flags := openFlags
		if opts.NoFollow {
			flags |= unix.O_NOFOLLOW
		}
		fd, err = openRetry(func() (int, error) { return unix.Open(path, flags, 0) })
		if errors.Is(err, unix.ELOOP) && opts.NoFollow {
			return nil, fmt.Errorf("%s: is a symbolic link; cordon does not follow it here, replace it with a regular file", path)
		}
		if err != nil {
			err = pathError(path, err)
		}
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s: not a regular file (%s); a config file must be a regular file", path, fileKind(uint32(st.Mode)))
	}
	return readBounded(f, path, st.Size)
}

// fileKind names the type of a file for messages.
func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symbolic link"
	}
	return "not a file"
}

// openRetry calls open until it is not interrupted (EINTR).
func openRetry(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// openBeneath opens path, which must lie below root, following no
// symbolic link below root.
func openBeneath(path, root string) (int, error) {
	rel, err := beneathRel(path, root)
	if err != nil {
		return -1, err
	}
	dfd, err := openRetry(func() (int, error) {
		return unix.Open(root, dirOpenFlags, 0)
	})
	if err != nil {
		return -1, pathError(root, err)
	}
	defer unix.Close(dfd)
	fd, err := openat2Beneath(dfd, rel)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		// No openat2 (Linux before 5.6, or a seccomp filter that refuses
		// it): walk the components without following links.
		fd, err = walkBeneath(dfd, rel)
	}
	switch {
	case err == nil:
		return fd, nil
	case errors.Is(err, unix.ELOOP):
		return -1, symlinkError(path)
	case errors.Is(err, unix.EXDEV):
		return -1, fmt.Errorf("%s: leaves %s; cordon does not follow links there, replace it with a regular file", path, root)
	}
	return -1, pathError(path, err)
}

// walkBeneath opens rel below the directory dfd one component at a time,
// with O_NOFOLLOW, so that no component may be a symbolic link (ELOOP).
func walkBeneath(dfd int, rel string) (int, error) {
	parts := strings.Split(rel, "/")
	cur := dfd
	defer func() {
		if cur != dfd {
			unix.Close(cur)
		}
	}()
	for i, part := range parts {
		if part == ".." {
			return -1, unix.EXDEV
		}
		last := i == len(parts)-1
		flags := openFlags | unix.O_NOFOLLOW
		if !last {
			flags = dirOpenFlags | unix.O_NOFOLLOW
		}
		fd, err := openRetry(func() (int, error) { return unix.Openat(cur, part, flags, 0) })
		if err != nil {
			// O_NOFOLLOW|O_DIRECTORY on a symbolic link gives ENOTDIR
			// on Linux: say what it is.
			var st unix.Stat_t
			if errors.Is(err, unix.ENOTDIR) && unix.Fstatat(cur, part, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && uint32(st.Mode)&unix.S_IFMT == unix.S_IFLNK {
				err = unix.ELOOP
			}
			return -1, err
		}
		if cur != dfd {
			unix.Close(cur)
		}
		if last {
			cur = dfd
			return fd, nil
		}
		cur = fd
	}
	return -1, unix.ENOENT
}
