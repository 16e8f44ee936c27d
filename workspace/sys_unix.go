//go:build unix

package workspace

import (
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// The system calls of the walk, on Unix: every one relative to a directory
// descriptor, none following a symbolic link in the last component.

// handle is an open file or directory: a descriptor.
type handle = int

// noHandle is no handle.
const noHandle handle = -1

// errNoEnt and errNotDir are the errors of a missing path and of a
// directory expected where there is none, as the system words them.
var (
	errNoEnt  error = unix.ENOENT
	errNotDir error = unix.ENOTDIR
)

// sysStat is what lstat or fstat says of a file.
type sysStat struct{ st unix.Stat_t }

func (s *sysStat) isDir() bool  { return s.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (s *sysStat) isLink() bool { return s.st.Mode&unix.S_IFMT == unix.S_IFLNK }
func (s *sysStat) isReg() bool  { return s.st.Mode&unix.S_IFMT == unix.S_IFREG }

// links is the number of hard links to the file.
func (s *sysStat) links() uint64      { return uint64(s.st.Nlink) }
func (s *sysStat) size() int64        { return s.st.Size }
func (s *sysStat) modTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s *sysStat) sys() any           { return &s.st }

// mode converts the stat's mode as package os does.
func (s *sysStat) mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// sameFile reports whether two stats describe the same file.
func sameFile(a, b *sysStat) bool { return a.st.Dev == b.st.Dev && a.st.Ino == b.st.Ino }

// openRootDir opens the directory dir (an absolute, symlink-free path) as
// a root's descriptor: the only open by path string of the package.
func openRootDir(dir string) (handle, error) {
	for {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return noHandle, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
		return fd, nil
	}
}

// openDirAt opens the directory name of dir, O_NOFOLLOW: a symbolic link
// fails with an error for which metLink is true.
func openDirAt(dir handle, name string) (handle, error) {
	return openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// openFileAt opens the file name of dir for reading, O_NOFOLLOW and
// O_NONBLOCK: a symbolic link fails (metLink), and a FIFO cannot block.
func openFileAt(dir handle, name string) (handle, error) {
	return openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
}

// createFileAt creates the new file name of dir for writing, O_EXCL and
// O_NOFOLLOW: nothing that exists, a link included, is opened.
func createFileAt(dir handle, name string, perm fs.FileMode) (*os.File, error) {
	fd, err := openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

func openat(dir handle, name string, flags int, mode uint32) (handle, error) {
	for {
		fd, err := unix.Openat(dir, name, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// lstatAt describes the entry name of dir, not following a link.
func lstatAt(dir handle, name string, st *sysStat) error {
	for {
		err := unix.Fstatat(dir, name, &st.st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}

// fstat describes the open file h.
func fstat(h handle, st *sysStat) error { return unix.Fstat(h, &st.st) }

// readlinkAt reads the symbolic link name of dir.
func readlinkAt(dir handle, name string) (string, error) {
	for n := 256; ; n *= 2 {
		buf := make([]byte, n)
		k, err := unix.Readlinkat(dir, name, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if k < n {
			return string(buf[:k]), nil
		}
		if n > maxPathBytes {
			return "", unix.ENAMETOOLONG
		}
	}
}

// mkdirAt makes the directory name in dir.
func mkdirAt(dir handle, name string) error { return unix.Mkdirat(dir, name, 0o755) }

// renameAt replaces the entry to of dir by its entry from.
func renameAt(dir handle, from, to string) error { return unix.Renameat(dir, from, dir, to) }

// unlinkAt removes the file name of dir.
func unlinkAt(dir handle, name string) error { return unix.Unlinkat(dir, name, 0) }

// closeHandle closes h.
func closeHandle(h handle) error { return unix.Close(h) }

// readHandle reads from h.
func readHandle(h handle, b []byte) (int, error) {
	for {
		n, err := unix.Read(h, b)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// dirFile is h as an *os.File, for ReadDir; closing it closes h.
func dirFile(h handle, name string) *os.File { return os.NewFile(uintptr(h), name) }

// metLink reports whether an open failed because the last component is a
// symbolic link (O_NOFOLLOW).
func metLink(err error) bool { return err == unix.ELOOP }

// notDirOrLink reports whether openDirAt failed because the name is not a
// directory it may enter: a symbolic link, or not a directory at all.
func notDirOrLink(err error) bool {
	return err == unix.ELOOP || err == unix.ENOTDIR || err == unix.EMLINK
}

// linkGone reports whether readlinkAt failed because the name is no
// longer a symbolic link, or no longer there.
func linkGone(err error) bool { return err == unix.EINVAL || err == unix.ENOENT }

// offRoot is the single root of mode off: the file system's root.
func offRoot(string) string { return "/" }

// linkRefused reports whether readlinkAt refused to read a link: never on
// Unix, where links inside the root are followed.
func linkRefused(error) bool { return false }

// rootPath is the path of the open root directory h: dir, whose links
// filepath.EvalSymlinks resolved before it was opened.
func rootPath(_ handle, dir string) string { return dir }
