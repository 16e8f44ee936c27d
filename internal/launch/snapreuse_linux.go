package launch

import (
	"encoding/json"

	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/planted"
)

// snapshotReuse is a session's snapshot for the planted-files check,
// kept between its commands: the next command's snapshot is the same
// record, its time taken anew (planted.Before.Again), while the session's
// watcher (globscan.Cache.WatchPaths) saw nothing change in what it was
// read from (the git directories' configs, hooks, commondir and to-do
// lists, the files core.hooksPath and include.path name, the protected
// names, the virtual environments) since before it was read, and the
// plan asks for the same record. Anything else takes it again: an event
// (the command's own writes are on the same inodes, so they are seen
// too), an overflow, a mount change, a watch that could not be added or
// was not there before the read, a file system inotify cannot vouch for,
// a bound reached (planted.Before.Reads), a check that found, restored or
// could not check something. Commands use it one at a time.
type snapshotReuse struct {
	before *planted.Before
	key    string
	events uint64
	// reused counts the snapshots taken from before.
	reused int
}

// snapshot returns the snapshot for a command of guard g: take's, or the
// kept one again.
func (r *snapshotReuse) snapshot(g plan.Guard, cache *globscan.Cache, take func() *planted.Before) *planted.Before {
	if r == nil {
		return take()
	}
	key := snapshotKey(g)
	n, ok := cache.Changes()
	if ok && r.before != nil && r.key == key && r.events == n {
		r.reused++
		return r.before.Again()
	}
	r.before = nil
	b := take()
	// Kept only when every path it was read from was watched before n
	// was read: then any change since the read is counted after n.
	if paths, all := b.Reads(); ok && all && cache.WatchPaths(paths) {
		r.before, r.key, r.events = b, key, n
	}
	return b
}

// drop forgets the kept snapshot.
func (r *snapshotReuse) drop() {
	if r != nil {
		r.before = nil
	}
}

// snapshotKey is what a snapshot of g is made from.
func snapshotKey(g plan.Guard) string {
	b, _ := json.Marshal(struct {
		GitDirs, UnwalkedGitDirs, Names, UnwalkedNames, Kept, Roots []string
		Git                                                         any
	}{g.GitDirs, g.UnwalkedGitDirs, g.Names, g.UnwalkedNames, g.KeptReadOnly, g.Roots, g.Git})
	return string(b)
}

// snapshotsReused counts the commands of sb whose snapshot was reused.
func (sb *sessionSandbox) snapshotsReused() int { return sb.snap.reused }
