package globscan

// The part of a scan that takes directories from a Cache and records
// them (see Cache).

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// cached is the number of directories taken from the cache so far.
func (s *scan) cached() int {
	if s.cr == nil {
		return 0
	}
	return int(s.cr.cached.Load())
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
// earlier scan entered are queued. ok is false when d must be read.
func (w *worker) reuse(d dirState) (ok bool, err error) {
	s, o := w.s, d.old
	if o.flags&nodeTrusted == 0 {
		return false, nil
	}
	var id dirID
	var isDir bool
	if d.at > 0 {
		id, isDir, err = statIDAt(d.at-1, o.name)
	} else {
		id, isDir, err = statID(s.full(d.rel), d.rel == "")
	}
	if err != nil || !isDir || id != o.id || !s.cr.sameFS(d, id.dev, func() (int64, error) { return fsTypeAt(s.full(d.rel)) }) {
		return false, nil
	}
	if n := s.entries.Add(int64(o.entries)); n > int64(s.lim.MaxEntries) {
		return true, s.limitError("MaxEntries", fmt.Sprint(s.lim.MaxEntries))
	}
	if time.Since(s.start) > s.lim.Deadline {
		return true, s.limitError("Deadline", s.lim.Deadline.String())
	}
	s.dirs.Add(1)
	s.cr.cached.Add(1)
	for _, m := range o.matches {
		if s.nmatch.Add(1) > int64(s.lim.MaxMatches) {
			return true, s.limitError("MaxMatches", fmt.Sprint(s.lim.MaxMatches))
		}
		rel := join(d.rel, m.name)
		w.matches = append(w.matches, Match{
			Path: s.full(rel), Rel: rel, Pattern: s.pats[m.pat].orig,
			IsDir: m.flags&matchDir != 0, IsSymlink: m.flags&matchSymlink != 0,
		})
	}
	nw := d.nw
	*nw = node{name: o.name, id: o.id, entries: o.entries, flags: o.flags, matches: o.matches}
	if len(o.kids) == 0 {
		return true, nil
	}
	nw.kids = make([]node, len(o.kids))
	depth := 0
	if d.rel != "" {
		depth = 1 + strings.Count(d.rel, "/")
	}
	if depth < localDepth {
		// Near the root, the subdirectories are shared among the
		// workers.
		for i := range o.kids {
			k := &o.kids[i]
			nw.kids[i].name = k.name
			w.subdirs = append(w.subdirs, dirState{
				rel: join(d.rel, k.name), states: s.childStates(d.states, k.name),
				old: k, nw: &nw.kids[i], pdev: id.dev, pfs: true,
			})
		}
		return true, nil
	}
	// Below, this worker walks them itself, looking each up by name in
	// a descriptor of this directory, which costs less than a path.
	at := 0
	if len(o.kids) >= fdKids && depth < maxFdDepth {
		if fd, err := openPathAt(d.at-1, o.name, s.full(d.rel)); err == nil {
			defer closeFd(fd)
			if fid, err := fdID(fd); err == nil && fid == id {
				at = fd + 1
			}
		}
	}
	for i := range o.kids {
		if s.abort.Load() {
			return true, nil
		}
		k := &o.kids[i]
		nw.kids[i].name = k.name
		kd := dirState{
			rel: join(d.rel, k.name), states: s.childStates(d.states, k.name),
			old: k, nw: &nw.kids[i], pdev: id.dev, pfs: true, at: at,
		}
		if err := w.readDir(kd); err != nil {
			return true, err
		}
	}
	return true, nil
}

// Below localDepth, a worker walks the subdirectories of a directory taken
// from the cache itself (not through the queue), and looks them up in a
// descriptor of their parent when there are at least fdKids of them, down
// to maxFdDepth (a descriptor per level is open meanwhile).
const (
	localDepth = 2
	fdKids     = 4
	maxFdDepth = 64
)

// childStates are the automaton states of the subdirectory name of a
// directory in states (as entry computes them).
func (s *scan) childStates(states []uint64, name string) []uint64 {
	if len(s.progs) == 0 {
		return nil
	}
	child := make([]uint64, len(s.progs))
	for i, p := range s.progs {
		if m := states[i]; m&p.live != 0 {
			child[i] = p.step(m, name)
		}
	}
	return child
}

// kidsByName is the size from which the earlier subdirectories of a
// directory read again are looked up in a map.
const kidsByName = 16

// record records the directory d, just read (or not: id zero), in this
// scan's tree: its identity, flags, entries, the matches found in it
// (w.matches from mstart) and the subdirectories queued (w.subdirs from
// sstart), each linked to its earlier node; fsOK says that its file system
// keeps ctimes. A record that differs from the earlier one is counted.
func (w *worker) record(d dirState, id dirID, flags uint8, fsOK bool, entries uint32, mstart, sstart int) {
	s := w.s
	nw := d.nw
	if nw == nil {
		return
	}
	// An untrusted record only links the subdirectories to theirs: the
	// directory is read again next time whatever its identity (so that a
	// workspace changed at every run, by the placeholders of the
	// protected paths, does not change the tree).
	nw.id, nw.flags, nw.entries, nw.matches = dirID{}, flags, 0, nil
	if flags&nodeTrusted != 0 {
		nw.id, nw.entries = id, entries
	}
	for _, m := range w.matches[mstart:] {
		if flags&nodeTrusted == 0 {
			break
		}
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
		nw.matches = append(nw.matches, cm)
	}
	// In name order, not the listing's, which may change when entries
	// come and go (placeholders): the same entries make the same record.
	slices.SortFunc(nw.matches, func(a, b cachedMatch) int { return strings.Compare(a.name, b.name) })
	subdirs := w.subdirs[sstart:]
	slices.SortFunc(subdirs, func(a, b dirState) int { return strings.Compare(a.rel, b.rel) })
	var byName map[string]*node
	if d.old != nil && len(d.old.kids) >= kidsByName {
		byName = make(map[string]*node, len(d.old.kids))
		for i := range d.old.kids {
			byName[d.old.kids[i].name] = &d.old.kids[i]
		}
	}
	nw.kids = nil
	if len(subdirs) > 0 {
		nw.kids = make([]node, len(subdirs))
	}
	for i := range subdirs {
		sd := &subdirs[i]
		k := &nw.kids[i]
		k.name = sd.rel[len(d.rel):]
		if d.rel != "" {
			k.name = k.name[1:]
		}
		sd.nw, sd.pdev, sd.pfs = k, id.dev, fsOK
		switch {
		case d.old == nil:
		case byName != nil:
			sd.old = byName[k.name]
		default:
			for j := range d.old.kids {
				if d.old.kids[j].name == k.name {
					sd.old = &d.old.kids[j]
					break
				}
			}
		}
	}
	if d.old == nil || !sameNode(d.old, nw) {
		s.cr.differ.Add(1)
	}
}
