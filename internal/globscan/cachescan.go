package globscan

// The part of a scan that takes directories from a Cache and records
// them (see Cache).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// cached is the number of directories taken from the cache so far.
func (s *scan) cached() int {
	if s.cr == nil {
		return 0
	}
	return int(s.cr.cached.Load())
}

// vouched is the number of directories taken from the cache on the
// watcher's word so far.
func (s *scan) vouched() int {
	if s.cr == nil {
		return 0
	}
	return int(s.cr.vouchedDirs.Load())
}

// sameFS reports whether the directory d, on device dev, is on a file
// system that keeps ctimes: known from its parent when on the same
// device, else asked with fsType (once per device and scan).
func (cr *cacheRun) sameFS(d dirState, dev uint64, fsType func() (int64, error)) bool {
	if dev == d.pdev {
		return d.pfs
	}
	return cr.trustedFS(dev, fsType)
}

// join is the slash-separated path of name in the directory rel.
func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// reuse takes the directory d from the earlier scan if its record is
// trusted and it is still the same directory with the same ctime: its
// matches are reported, its entries counted, and the subdirectories the
// earlier scan entered are walked. ok is false when d must be read.
func (w *worker) reuse(d dirState) (ok bool, err error) {
	s, n := w.s, d.n
	if n.flags&(nodeTrusted|nodeWhole) == 0 {
		return false, nil
	}
	var id dirID
	var isDir bool
	vouched := d.same && s.cr.vouched(n)
	if !vouched && d.same {
		// Only some entries changed, none a directory: looked at one
		// by one (a run's placeholders made and removed in 200
		// repositories' git directories).
		var ok bool
		if w.names, ok = s.cr.vouchedNames(n, w.names[:0]); ok && w.sameEntries(d, w.names) {
			vouched = true
			s.cr.vouchedDirs.Add(1)
		}
	}
	if !vouched && n.flags&nodeTrusted == 0 {
		return false, nil // read in the tick of a change: no ctime tells
	}
	switch {
	case vouched:
		// Watched and unchanged since it was recorded: no lstat.
		id = n.id
	case d.at > 0:
		id, isDir, err = statIDAt(d.at-1, n.name)
	default:
		id, isDir, err = statID(s.full(d.rel), d.rel == "")
	}
	if !vouched && (err != nil || !isDir || id != n.id || !s.cr.sameFS(d, id.dev, func() (int64, error) { return fsTypeAt(s.full(d.rel)) })) {
		return false, nil
	}
	if !vouched && s.cr.watch != nil {
		w.watch = append(w.watch, watchCand{s.full(d.rel), id, n})
	}
	if c := s.entries.Add(int64(n.entries)); c > int64(s.lim.MaxEntries) {
		return true, s.limitError("MaxEntries", fmt.Sprint(s.lim.MaxEntries))
	}
	// (A directory vouched for costs no system call: the scan's timer
	// ends the scan, and the loops below check for its end.)
	if !vouched && s.pastDeadline() {
		return true, s.limitError("Deadline", s.lim.Deadline.String())
	}
	s.dirs.Add(1)
	s.cr.cached.Add(1)
	for _, m := range n.matches {
		if s.nmatch.Add(1) > int64(s.lim.MaxMatches) {
			return true, s.limitError("MaxMatches", fmt.Sprint(s.lim.MaxMatches))
		}
		rel := join(d.rel, m.name)
		w.matches = append(w.matches, Match{
			Path: s.full(rel), Rel: rel, Pattern: s.pats[m.pat].orig,
			IsDir: m.flags&matchDir != 0, IsSymlink: m.flags&matchSymlink != 0,
		})
	}
	if len(n.kids) == 0 {
		return true, nil
	}
	depth := 0
	if d.rel != "" {
		depth = 1 + strings.Count(d.rel, "/")
	}
	if depth < localDepth {
		// Near the root, the subdirectories are shared among the
		// workers.
		slab := s.stateSlab(len(n.kids))
		for i := range n.kids {
			k := &n.kids[i]
			w.subdirs = append(w.subdirs, dirState{
				rel: join(d.rel, k.name), states: s.childStatesIn(slab, i, d.states, k.name),
				n: k, known: true, pdev: id.dev, pfs: true, same: true,
			})
		}
		return true, nil
	}
	// Below, this worker walks them itself, looking each up by name in
	// a descriptor of this directory, which costs less than a path.
	at := 0
	if !vouched && len(n.kids) >= fdKids && depth < maxFdDepth {
		if fd, err := openPathAt(d.at-1, n.name, s.full(d.rel)); err == nil {
			defer closeFd(fd)
			if fid, err := fdID(fd); err == nil && fid == id {
				at = fd + 1
			}
		}
	}
	slab := s.stateSlab(len(n.kids))
	for i := range n.kids {
		if s.abort.Load() {
			return true, nil
		}
		k := &n.kids[i]
		kd := dirState{
			rel: join(d.rel, k.name), states: s.childStatesIn(slab, i, d.states, k.name),
			n: k, known: true, pdev: id.dev, pfs: true, at: at, same: true,
		}
		if err := w.readDir(kd); err != nil {
			return true, err
		}
	}
	return true, nil
}

// sameEntries reports whether each of names, entries of the directory d
// changed since it was recorded but not directories (the watcher says
// so), is again as its record says: absent and unmatched, or present,
// no directory, and matching the same pattern with the same type. The
// record then still holds but for its count of entries, which may be off
// by the names made or removed (at most maxNames: more, and the
// directory is read).
func (w *worker) sameEntries(d dirState, names []string) bool {
	s, n := w.s, d.n
	for _, name := range names {
		var want *cachedMatch
		for i := range n.matches {
			if n.matches[i].name == name {
				want = &n.matches[i]
				break
			}
		}
		fi, err := os.Lstat(s.full(join(d.rel, name)))
		if errors.Is(err, fs.ErrNotExist) {
			if want != nil {
				return false
			}
			continue
		}
		if err != nil || fi.IsDir() {
			return false
		}
		// The one implementation of matching: entry, its output taken
		// back.
		mstart, sstart := len(w.matches), len(w.subdirs)
		err = w.entry(d, dent{name: name, typ: fi.Mode().Type()})
		got := w.matches[mstart:]
		s.nmatch.Add(-int64(len(got)))
		same := err == nil && len(got) <= 1 && (len(got) == 1) == (want != nil) && len(w.subdirs) == sstart
		if same && want != nil {
			var flags uint8
			if got[0].IsSymlink {
				flags |= matchSymlink
			}
			same = s.patIndex[got[0].Pattern] == want.pat && flags == want.flags
		}
		w.matches, w.subdirs = w.matches[:mstart], w.subdirs[:sstart]
		if !same {
			return false
		}
	}
	return true
}

// Below localDepth, a worker walks the subdirectories of a directory taken
// from the cache itself (not through the queue), and looks them up in a
// descriptor of their parent when there are at least fdKids of them, down
// to maxFdDepth (a descriptor per level is open meanwhile).
const (
	localDepth = 2
	fdKids     = 8
	maxFdDepth = 64
)

// stateSlab is room for the automaton states of n subdirectories, one
// allocation for them all (see childStatesIn).
func (s *scan) stateSlab(n int) []uint64 {
	if len(s.progs) == 0 {
		return nil
	}
	return make([]uint64, n*len(s.progs))
}

// childStatesIn are the automaton states of the subdirectory name of a
// directory in states (as entry computes them), the i-th of slab's.
func (s *scan) childStatesIn(slab []uint64, i int, states []uint64, name string) []uint64 {
	if len(s.progs) == 0 {
		return nil
	}
	child := slab[i*len(s.progs) : (i+1)*len(s.progs) : (i+1)*len(s.progs)]
	for i, p := range s.progs {
		if m := states[i]; m&p.live != 0 {
			child[i] = p.step(m, name)
		}
	}
	return child
}

// record records the directory d, just read (or not: id zero), in its
// node, in place of the earlier record: its identity, flags, entries, the
// matches found in it (w.matches from mstart) and the subdirectories
// queued (w.subdirs from sstart), each given its earlier node (found by
// name) or a new one; fsOK says that its file system keeps ctimes. A
// record that differs from the earlier one is counted.
func (w *worker) record(d dirState, id dirID, flags uint8, fsOK bool, entries uint32, mstart, sstart int) {
	s, n := w.s, d.n
	if n == nil {
		return
	}
	if s.cr.watch != nil {
		wid := dirID{}
		if flags&(nodeTrusted|nodeWhole) != 0 {
			wid = id
		}
		w.watch = append(w.watch, watchCand{s.full(d.rel), wid, n})
	}
	prev := *n
	// A record not read whole only links the subdirectories to theirs:
	// the directory is read again next time whatever its identity. One
	// read whole in the tick of a change (nodeWhole alone: a workspace
	// changed at every run, by the placeholders of the protected paths)
	// is kept for a watcher to vouch for, and read again without one.
	n.id, n.flags, n.entries, n.matches = dirID{}, flags, 0, nil
	if flags&(nodeTrusted|nodeWhole) == 0 {
		s.cr.unvouchable.Add(1)
	}
	if flags&(nodeTrusted|nodeWhole) != 0 {
		n.id, n.entries = id, entries
		for _, m := range w.matches[mstart:] {
			cm := cachedMatch{name: m.Rel[len(d.rel):], pat: s.patIndex[m.Pattern]}
			if d.rel != "" {
				cm.name = cm.name[1:]
			}
			if m.IsDir {
				cm.flags |= matchDir
			}
			if m.IsSymlink {
				cm.flags |= matchSymlink
			}
			n.matches = append(n.matches, cm)
		}
	}
	// In name order, not the listing's, which may change when entries
	// come and go (placeholders): the same entries make the same record,
	// and the earlier subdirectories are found by merging.
	slices.SortFunc(n.matches, func(a, b cachedMatch) int { return strings.Compare(a.name, b.name) })
	subdirs := w.subdirs[sstart:]
	slices.SortFunc(subdirs, func(a, b dirState) int { return strings.Compare(a.rel, b.rel) })
	n.kids = nil
	if len(subdirs) > 0 {
		n.kids = make([]node, len(subdirs))
	}
	j := 0
	for i := range subdirs {
		sd := &subdirs[i]
		name := sd.rel[len(d.rel):]
		if d.rel != "" {
			name = name[1:]
		}
		for d.known && j < len(prev.kids) && prev.kids[j].name < name {
			j++
		}
		k := &n.kids[i]
		if d.known && j < len(prev.kids) && prev.kids[j].name == name {
			*k, sd.known = prev.kids[j], true
			// Read again, the directory listed the name with the inode
			// number recorded, on its own device (not a mount point)
			// whose listings give lstat's numbers: the name leads to
			// the directory recorded (directories have no other links),
			// and its watch, if it has one, says whether it changed. A
			// directory removed loses its watch, so one made since with
			// the same number has none.
			sd.same = sd.ino != 0 && k.id.ino == sd.ino && k.id.dev == id.dev && id.dev != 0 && s.cr.listsInodes(id.dev)
		} else {
			*k = node{name: name}
		}
		sd.n, sd.pdev, sd.pfs = k, id.dev, fsOK
	}
	if !d.known || !sameNode(&prev, n) {
		s.cr.differ.Add(1)
	}
}
