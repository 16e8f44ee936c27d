package globscan

import (
	"path/filepath"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// maxNamed bounds the names a watch remembers for unchangedBut
// (watchInfo.named).
const maxNamed = 64

// recordNamed notes an event of wi at tick for unchangedBut: by name when
// it concerns one entry (a file or a directory made, removed or renamed,
// its attributes changed), else as one of the directory itself
// (wi.self). A name that does not fit pushes out the one seen longest
// ago, whose tick becomes wi.namedFloor: of the events up to it,
// unchangedBut knows no names.
func (wi *watchInfo) recordNamed(mask uint32, name []byte, tick uint64) {
	if len(name) == 0 || mask&nameEvents == 0 {
		wi.self = tick
		return
	}
	if wi.named == nil {
		wi.named = map[string]uint64{}
	}
	if _, ok := wi.named[string(name)]; !ok && len(wi.named) >= maxNamed {
		oldest, at := "", uint64(0)
		for n, t := range wi.named {
			if oldest == "" || t < at {
				oldest, at = n, t
			}
		}
		delete(wi.named, oldest)
		wi.namedFloor = max(wi.namedFloor, at)
	}
	wi.named[string(name)] = tick
}

// unchangedBut reports whether the directory of n, at path, is as the
// scan that began at tick since recorded it but for entries ignored
// names (at or below an ignored path): it was watched before that scan
// began and still is, the same directory, and every event of its watch
// since was of one such entry. The caller holds w.mu and drained the
// queue; an overflow or a change of the mount table since is its to
// check (w.broke).
func (w *watcher) unchangedBut(n *node, path string, since uint64, ignored subpath.Set) bool {
	wi := n.wi
	if wi == nil || wi.w != w || wi.gone || !wi.known || wi.key != (dirKey{n.id.dev, n.id.ino}) || wi.added >= since {
		return false
	}
	if wi.last < since {
		return true
	}
	if wi.self >= since || wi.namedFloor >= since {
		return false
	}
	for name, t := range wi.named {
		if t >= since && !ignored.Holds(filepath.Join(path, name)) {
			return false
		}
	}
	return true
}

// onlyIgnored reports whether every change since tick since (a scan's
// begin) in the tree of key, rooted at root, was of an entry at or below
// a path of ignore (see ScanPatternsIgnoring): no overflow of the queue,
// no change of the mount table, and each directory the tree records
// unchanged but for those (watcher.unchangedBut). The caller holds
// c.scanMu and drained the queue (watcher.count).
func (c *Cache) onlyIgnored(key, root string, since uint64, ignore []string) bool {
	w := c.watch
	c.mu.Lock()
	t := c.trees[key]
	c.mu.Unlock()
	if w == nil || t == nil || t.top == nil || t.tick != since || since == 0 {
		return false
	}
	ignored := subpath.NewSet(ignore)
	if ignored == nil || ignored.Holds(root) {
		return false // the whole tree: nothing to answer for
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != "" || w.broke >= since {
		return false
	}
	// A directory whose watch saw nothing since costs no path: the path
	// is made only for one that did (names holds the way down).
	var names []string
	var walk func(n *node) bool
	walk = func(n *node) bool {
		if wi := n.wi; wi == nil || wi.last >= since || wi.gone {
			path := filepath.Join(append([]string{root}, names...)...)
			if ignored.Holds(path) {
				return true // a placeholder made again, say: its own events are the caller's to ignore
			}
			if !w.unchangedBut(n, path, since, ignored) {
				return false
			}
		} else if !w.unchangedBut(n, "", since, ignored) {
			return false
		}
		for i := range n.kids {
			names = append(names, n.kids[i].name)
			ok := walk(&n.kids[i])
			names = names[:len(names)-1]
			if !ok {
				return false
			}
		}
		return true
	}
	return walk(t.top)
}
