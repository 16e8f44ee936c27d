package globscan

// Changes returns the count of changes the watcher of Cache.Watch saw so
// far (any event of its watches, an overflow of its queue, a change of the
// mount table), and ok false when there is no watcher or it vouches for
// nothing any more (the system's watches ran out, a read failed). What
// was read of paths given to WatchPaths before an earlier Changes still
// holds when a later Changes returns the same count.
func (c *Cache) Changes() (n uint64, ok bool) {
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	w := c.watch
	c.mu.Unlock()
	if w == nil {
		return 0, false
	}
	return w.changes()
}

// WatchPaths watches, with the watcher of Cache.Watch, what a reader of
// paths (absolute) depends on: each file's content and attributes, each
// directory's entries, the directory holding each path (an entry created,
// removed or renamed there) and, above it, each directory's own rename or
// removal; for a path that does not exist, the nearest directory above it
// that does. It reports whether every such watch was already there, added
// by an earlier WatchPaths: then every change to what paths name since that
// earlier call is counted by Changes. It reports false, and watches
// nothing more, on a file system whose changes inotify may not see (only
// local file systems are trusted: ext2/3/4, xfs, btrfs, tmpfs, f2fs, zfs,
// overlayfs; not NFS, FUSE, SMB or 9p), past the watcher's share of
// watches, or without a watcher.
func (c *Cache) WatchPaths(paths []string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	w := c.watch
	c.mu.Unlock()
	if w == nil {
		return false
	}
	return w.watchPaths(paths)
}
