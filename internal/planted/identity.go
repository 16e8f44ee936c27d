package planted

import (
	"os"
	"path/filepath"
)

// What the snapshot kept read-only is trusted only while it is the same
// file: a bind mount keeps a path read-only, but the directories above it
// can still be renamed, taking the mount along (mv sub sub2), and a new
// git directory or protected name made at the old path (mkdir sub; git
// init sub) is not the one that was kept read-only. Its inode tells.

// recordIDs records the inode of each path in paths (a git directory or a
// protected name), as Snapshot finds it.
func (b *Before) recordIDs(paths []string) {
	if b.ids == nil {
		b.ids = map[string]uint64{}
	}
	for _, p := range paths {
		p = filepath.Clean(p)
		if fi, err := os.Lstat(p); err == nil {
			b.ids[p] = statOf(fi).ino
		}
	}
}

// replaced reports whether the git directory or protected name ref (abs
// its path) is another file than the one Snapshot recorded there.
func (c *checker) replaced(abs string, ref gitDirRef) bool {
	ino, ok := c.b.ids[abs]
	if !ok {
		return false
	}
	fi, err := ref.root.Lstat(ref.rel)
	if err != nil {
		return false
	}
	return statOf(fi).ino != ino
}
