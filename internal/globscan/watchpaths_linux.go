//go:build linux

package globscan

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The masks of WatchPaths: a file's content and attributes, and its own
// removal or rename; a directory's entries (watchMask); a directory
// above, its own removal or rename.
const (
	fileMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	selfMask = unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
)

// trustedFS are the file systems whose every change inotify sees: local
// ones (a network or FUSE file system changes without an event).
var trustedFS = map[int64]bool{
	unix.EXT4_SUPER_MAGIC: true, unix.XFS_SUPER_MAGIC: true, unix.BTRFS_SUPER_MAGIC: true,
	unix.TMPFS_MAGIC: true, unix.F2FS_SUPER_MAGIC: true, unix.OVERLAYFS_SUPER_MAGIC: true,
	0x2fc12fc1: true, // zfs
}

// changes is Cache.Changes: count, but leaving the next scan's begin to
// drain the queue itself (a scan begins when it drains; see begin).
func (w *watcher) changes() (n uint64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drain()
	return w.events, w.broken == ""
}

// watchPaths is Cache.WatchPaths.
func (w *watcher) watchPaths(paths []string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != "" {
		return false
	}
	had := true
	add := func(p string, mask uint32) bool {
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil || !trustedFS[int64(st.Type)] {
			return false
		}
		if len(w.wds)+len(w.paths) >= w.max {
			return false
		}
		wd, err := unix.InotifyAddWatch(w.fd, p, mask|unix.IN_MASK_ADD|unix.IN_DONT_FOLLOW)
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.ENOMEM) {
			w.broken = "the system's inotify watches ran out (fs.inotify.max_user_watches)"
			return false
		}
		if err != nil {
			// Gone since, or not a directory any more: changed.
			had = false
			return true
		}
		if was, ok := w.paths[int32(wd)]; !ok || was&mask != mask {
			had = false
			w.paths[int32(wd)] = was | mask
		}
		return true
	}
	done := map[string]uint32{}
	watch := func(p string, mask uint32) bool {
		if done[p]&mask == mask {
			return true
		}
		done[p] |= mask
		return add(p, mask)
	}
	for _, p := range paths {
		p = filepath.Clean(p)
		if !filepath.IsAbs(p) {
			return false
		}
		var st unix.Stat_t
		dir := p
		if err := unix.Lstat(p, &st); err == nil {
			mask := uint32(fileMask)
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				mask = watchMask
			}
			if !watch(p, mask) {
				return false
			}
			dir = filepath.Dir(p)
		} else {
			// The nearest directory above that exists sees it made.
			for dir != "/" {
				if err := unix.Lstat(dir, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
					break
				}
				dir = filepath.Dir(dir)
			}
		}
		if !watch(dir, watchMask) {
			return false
		}
		for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
			if !watch(d, selfMask) {
				return false
			}
			if d == "/" {
				break
			}
		}
	}
	return had
}
