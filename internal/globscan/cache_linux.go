//go:build linux

package globscan

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// cacheSupported: the cache works here.
const cacheSupported = true

// listsInodes reports whether a directory listing (getdents64) on a file
// system of statfs type t gives each entry the inode number lstat gives
// it, so that a subdirectory listed with the inode number recorded is the
// directory recorded. Overlayfs may list the lower layer's number, and
// others are not known: a scan looks at their directories instead.
func listsInodes(t int64) bool {
	switch t {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.F2FS_SUPER_MAGIC:
		return true
	}
	return false
}

// zfsSuperMagic is ZFS's statfs type (not in x/sys).
const zfsSuperMagic = 0x2fc12fc1

// keepsCtime reports whether a file system of statfs type t sets a
// directory's ctime from the local clock on every change of its entries,
// and lets no one set it otherwise: local disk and memory file systems.
// Network and FUSE file systems take times from a server, and FAT's
// times can be set.
func keepsCtime(t int64) bool {
	switch t {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC,
		unix.OVERLAYFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC, unix.BCACHEFS_SUPER_MAGIC, zfsSuperMagic:
		return true
	}
	return false
}

// openCacheFlags open a cache file without following a link, and without
// blocking on a FIFO.
const openCacheFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC

// ownerOf returns the owner of a file.
func ownerOf(fi fs.FileInfo) (int64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int64(st.Uid), true
}

func idOf(st *unix.Stat_t) dirID {
	return dirID{dev: uint64(st.Dev), ino: uint64(st.Ino), sec: int64(st.Ctim.Sec), nsec: int64(st.Ctim.Nsec)}
}

// statID returns the identity of the directory at path, following a
// symbolic link only if follow (the root, which is opened so).
func statID(path string, follow bool) (dirID, bool, error) {
	var st unix.Stat_t
	flags := unix.AT_SYMLINK_NOFOLLOW
	if follow {
		flags = 0
	}
	if err := unix.Fstatat(unix.AT_FDCWD, path, &st, flags); err != nil {
		return dirID{}, false, err
	}
	return idOf(&st), st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}

// fsTypeAt returns the statfs type of the file system holding path.
func fsTypeAt(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Type), nil
}

// id returns the identity of the directory being listed.
func (d *dirReader) id() (dirID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return dirID{}, err
	}
	return idOf(&st), nil
}

// fsType returns the statfs type of the directory being listed.
func (d *dirReader) fsType() (int64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(d.fd, &st); err != nil {
		return 0, err
	}
	return int64(st.Type), nil
}

// statIDAt returns the identity of the entry name of the directory dirfd,
// not following a symbolic link.
func statIDAt(dirfd int, name string) (dirID, bool, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return dirID{}, false, err
	}
	return idOf(&st), st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}

// openPathAt opens a directory for lookups only (O_PATH), by name in the
// directory dirfd, or by path when dirfd is negative, not following a
// symbolic link.
func openPathAt(dirfd int, name, path string) (int, error) {
	const flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if dirfd < 0 {
		return unix.Open(path, flags, 0)
	}
	return unix.Openat(dirfd, name, flags, 0)
}

// fdID returns the identity of an open directory.
func fdID(fd int) (dirID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return dirID{}, err
	}
	return idOf(&st), nil
}

func closeFd(fd int) { unix.Close(fd) }
