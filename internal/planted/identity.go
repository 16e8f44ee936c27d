package planted

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
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

// What a run's mounts keep read-only in a git directory is trusted only
// while each kept entry is the same file too: a run's mount goes away when
// another process (a concurrent run without a mount there, or the host)
// removes or renames the path it stands on, and the run can then write
// there (found by an attack: one run removed another's mount points in a
// repository it had made itself, and the other planted a core.fsmonitor
// and a hook there, which its check, trusting its mounts, never looked
// at).

// keptEntriesChanged reports whether an entry of policy.GitDirProtected in
// the kept git directory ref (abs its path) is not what Snapshot recorded:
// made, removed, another inode, or changed since (its change time, which
// no one can set back: a write, a rename, a new entry of a directory, a
// link to it made or removed). The run's own placeholders are compared
// alike: a file placeholder removed and made anew may get the freed
// inode's number, but not its change time, and no concurrent run links to
// or unlinks the one file they all link to while this run holds the
// workspace.
func (c *checker) keptEntriesChanged(abs string, ref gitDirRef) bool {
	prev := c.b.dirs[abs]
	switch {
	case prev == nil:
		return false
	case !prev.keptOnly:
		// Recorded whole (Snapshot): compare all of it, at no risk of
		// taking the user's files for the run's.
		return true
	case prev.entries == nil:
		return false
	}
	// Removing, making or renaming an entry changes the directory's own
	// modification and change time: unchanged, it holds what it held (the
	// common case of a run in many repositories: one lstat each).
	if prev.self != nil {
		if fi, err := ref.root.Lstat(ref.rel); err == nil && prev.self.same(fi) {
			return false
		}
	}
	for _, e := range policy.GitDirProtected {
		name := strings.TrimSuffix(e, "/")
		was, had := prev.entries[name]
		fi, err := ref.root.Lstat(filepath.Join(ref.rel, name))
		switch {
		case had != (err == nil):
			return true
		case !had:
			continue
		}
		if !was.same(fi) {
			return true
		}
	}
	return false
}
