// Package globscan finds the existing files and directories under a root that
// match relative deny globs such as "**/.env", "**/secrets.*" or
// "build/**/token.json", so that a sandbox backend can mask them before a
// command starts.
//
// Patterns use doublestar syntax (see github.com/bmatcuk/doublestar/v4) and
// are matched against the slash-separated path relative to the scanned root:
// "secrets.*" matches only <root>/secrets.yaml, "**/secrets.*" matches at any
// depth. The final decision for every entry is doublestar.Match.
//
// Scan walks the tree once for all patterns and prunes it: a directory is
// entered only if some pattern could still match below it, so
// "build/**/token.json" reads only build/ while "**/.env" reads everything
// (including .git and node_modules: a secret can be anywhere). Matched
// directories are reported and not entered, symlinks are reported by name and
// never followed, and the walk is bounded in entries, matches and time; going
// over a bound is an error, because a partial list of secrets is not safe to
// act on.
//
// A Cache keeps what earlier scans found, so that a scan reads again only
// the directories changed since; with Watch, it also watches every
// directory of its scans with inotify, and answers a scan that nothing
// can have changed since the same scan before without reading one.
package globscan

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// maxSkippedPaths bounds Stats.SkippedPaths.
const maxSkippedPaths = 100

// Match is one existing path that matched a pattern.
type Match struct {
	// Path is the matched path: root joined with Rel.
	Path string
	// Rel is the slash-separated path relative to the root, as matched.
	Rel string
	// Pattern is the first pattern (in the order given) that matched, as
	// given to Scan.
	Pattern string
	// IsDir is set for a directory (not for a symlink to one). Scan does
	// not descend into matched directories.
	IsDir bool
	// IsSymlink is set for a symbolic link; its target is neither checked
	// nor followed.
	IsSymlink bool
}

// Pattern is one pattern of ScanPatterns.
type Pattern struct {
	// Glob is the relative doublestar pattern (see Validate).
	Glob string
	// Descend reports a matched directory and still walks below it, so
	// that the other patterns are matched there too. Without it a matched
	// directory is reported whole and not entered.
	Descend bool
}

// Stats describes the work one Scan did.
type Stats struct {
	// Dirs is the number of directories walked, the root included:
	// read, or taken from a Cache.
	Dirs int
	// Cached is the number of directories taken from a Cache (see
	// Cache.ScanPatterns) instead of being read.
	Cached int
	// Vouched is the number of those taken on the word of a watcher
	// (see Cache.Watch), without an lstat.
	Vouched int
	// Entries is the number of directory entries seen.
	Entries int
	// Pruned is the number of directories not entered because no pattern
	// could match below them (matched directories are not counted).
	Pruned int
	// Skipped is the number of directories that could not be read
	// (permission denied, or removed or replaced during the scan).
	Skipped int
	// SkippedPaths are the first 100 skipped directories.
	SkippedPaths []string
	// Elapsed is the wall-clock time of the scan.
	Elapsed time.Duration
}

// dirState is a directory waiting to be read, with the automaton states of
// every prog after its path.
type dirState struct {
	rel    string // slash-separated, "" for the root
	states []uint64
	// With a Cache: the directory's node in the tree, which holds the
	// earlier scan's record if known and which this scan updates in
	// place; the device of its parent and whether the parent's file
	// system keeps ctimes (false for the root).
	n     *node
	known bool
	pdev  uint64
	pfs   bool
	// at is a descriptor of the parent directory plus one (0: none):
	// the directory is then looked up by name in it.
	at int
	// same says that the name leads to the directory recorded, which a
	// watcher may then vouch for (see Cache.Watch): the parent was taken
	// from the cache, its entries those recorded, or it was read again
	// and listed the name with the inode number recorded (see record).
	same bool
	// ino is the inode number the parent's listing gave (0: not known).
	ino uint64
}

// scan is the state shared by the workers of one Scan.
type scan struct {
	root    string
	pats    []*pattern
	progs   []*prog // all alternatives of all safe patterns, flattened
	progPat []int   // pattern index of each prog
	unsafe  bool    // some pattern is unsafe: try every entry
	// names maps the NAME of each "**/NAME" pattern to the patterns with
	// that name (see pattern.anyName); such patterns keep every directory
	// live and are not stepped as automata.
	names map[string][]int
	// nameFirst marks the first bytes of the names in names: most entries
	// skip the map lookup.
	nameFirst [256]bool
	lim       Limits
	start     time.Time
	// until is when the scan gives up (Unix nanoseconds): start plus
	// lim.Deadline, moved later while the machine is short of CPU (see
	// extend).
	until atomic.Int64
	// cr is the Cache's part of the scan, or nil; patIndex maps each
	// pattern to the index of its first occurrence.
	cr       *cacheRun
	patIndex map[string]uint16

	entries atomic.Int64 // for the limits and the error message
	dirs    atomic.Int64
	nmatch  atomic.Int64
	abort   atomic.Bool

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []dirState
	active int // directories being read
	// workers are those started so far (see spawn); wg waits for them.
	workers []*worker
	max     int // the most workers (see workers)
	wg      sync.WaitGroup
	err     error
}

// worker is one walking goroutine; its results are merged at the end.
type worker struct {
	s       *scan
	matches []Match
	pruned  int
	skipped []string
	cand    []bool // per pattern: candidate for the current entry
	subdirs []dirState
	rd      dirReader // reused across directories
	// watch are the directories read or looked at, for a watched
	// Cache to watch (see watcher.watchDirs).
	watch []watchCand
	// names is room for the entries a watcher names (see sameEntries).
	names []string
}

// workers is how many directories are read concurrently. Reading is
// dominated by system calls (and, on a cold cache, by I/O latency), so a few
// more goroutines than CPUs help.
func workers() int {
	return min(16, max(4, 2*runtime.GOMAXPROCS(0)))
}

// spawnQueue is how many directories must be waiting to be read for a
// scan to start one more worker: a scan starts with one, and a small tree
// (a few dozen directories) is read by it alone, without waking other
// threads for it (a workspace of 30 directories: 0.75 -> 0.3 ms).
const spawnQueue = 32

// spawn starts one more worker, with s.mu held.
func (s *scan) spawn() {
	w := &worker{s: s, cand: make([]bool, len(s.pats))}
	s.workers = append(s.workers, w)
	s.wg.Go(w.run)
}

// Scan walks root once and returns every existing file, directory, symlink
// or other entry below it whose root-relative path matches one of patterns,
// sorted by Path, each reported once (with the first matching pattern). The
// root itself is never matched. Matched directories are not entered,
// symlinks are never followed, and a directory is entered only if some
// pattern could still match below it (see CouldMatchBelow). Directories are
// read by one goroutine, and by a few concurrently once many wait (see
// spawnQueue).
//
// Directories below root that cannot be read (permission denied, or removed
// or replaced by a non-directory during the scan) are skipped and counted in
// Stats.Skipped; any other read error, an unreadable root, an invalid
// pattern (see Validate) or going over a bound of lim (a *LimitError) is an
// error, and the matches are then nil. Scan returns by the deadline even if
// a directory read hangs.
func Scan(root string, patterns []string, lim Limits) ([]Match, Stats, error) {
	pats := make([]Pattern, len(patterns))
	for i, p := range patterns {
		pats[i] = Pattern{Glob: p}
	}
	return ScanPatterns(root, pats, lim)
}

// ScanPatterns is Scan with patterns that may descend into the directories
// they match (Pattern.Descend), so that one walk finds both what a deny
// rule hides whole and what a protecting rule marks inside a tree. An entry
// is reported once, with the first pattern (in the order given) that
// matches it; whether the walk enters a matched directory is that
// pattern's Descend.
func ScanPatterns(root string, patterns []Pattern, lim Limits) ([]Match, Stats, error) {
	return scanPatterns(root, patterns, lim, nil)
}

// scanPatterns is ScanPatterns, with a Cache's part when cr is not nil.
func scanPatterns(root string, patterns []Pattern, lim Limits, cr *cacheRun) ([]Match, Stats, error) {
	s := &scan{root: root, lim: lim.withDefaults(), start: time.Now(), cr: cr}
	s.until.Store(s.start.Add(s.lim.Deadline).UnixNano())
	for _, p := range patterns {
		cp, err := compile(p.Glob)
		if err != nil {
			return nil, Stats{}, err
		}
		cp.descend = p.Descend
		s.pats = append(s.pats, cp)
		s.unsafe = s.unsafe || cp.unsafe
		if cp.anyName != "" {
			if s.names == nil {
				s.names = map[string][]int{}
			}
			s.names[cp.anyName] = append(s.names[cp.anyName], len(s.pats)-1)
			s.nameFirst[cp.anyName[0]] = true
			continue
		}
		for i := range cp.progs {
			s.progs = append(s.progs, &cp.progs[i])
			s.progPat = append(s.progPat, len(s.pats)-1)
		}
	}
	if len(s.pats) == 0 {
		return nil, Stats{}, nil
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, Stats{}, fmt.Errorf("globscan: %w", err)
	}
	if !fi.IsDir() {
		return nil, Stats{}, fmt.Errorf("globscan: %s is not a directory", root)
	}
	s.cond = sync.NewCond(&s.mu)
	st := make([]uint64, len(s.progs))
	for i, p := range s.progs {
		st[i] = p.start
	}
	top := dirState{rel: "", states: st}
	if cr != nil {
		if len(s.pats) > 0xffff {
			return nil, Stats{}, fmt.Errorf("globscan: %d patterns, more than a cache can record", len(s.pats))
		}
		s.patIndex = map[string]uint16{}
		for i, p := range s.pats {
			if _, ok := s.patIndex[p.orig]; !ok {
				s.patIndex[p.orig] = uint16(i)
			}
		}
		cr.top = cr.old
		if cr.top == nil {
			cr.top = &node{}
		}
		top.n, top.known = cr.top, cr.old != nil
	}
	s.queue = append(s.queue, top)

	s.max = workers()
	done := make(chan struct{})
	s.mu.Lock()
	s.spawn()
	s.mu.Unlock()
	go func() { s.wg.Wait(); close(done) }()
	timer := time.NewTimer(s.lim.Deadline - time.Since(s.start))
	defer timer.Stop()
wait:
	for {
		select {
		case <-done:
			break wait
		case <-timer.C:
			if s.extend() {
				timer.Reset(time.Until(time.Unix(0, s.until.Load())))
				continue
			}
			// A read is stuck (a hung network filesystem, say): give
			// up without waiting; the workers stop at their next check.
			err := s.fail(s.limitError("Deadline", s.lim.Deadline.String()))
			return nil, s.partialStats(), err
		}
	}

	stats := s.partialStats()
	if s.err != nil {
		return nil, stats, s.err
	}
	var matches []Match
	for _, w := range s.workers {
		matches = append(matches, w.matches...)
		stats.Pruned += w.pruned
		stats.Skipped += len(w.skipped)
		stats.SkippedPaths = append(stats.SkippedPaths, w.skipped...)
		if s.cr != nil {
			s.cr.watchCands = append(s.cr.watchCands, w.watch...)
		}
	}
	slices.SortFunc(matches, func(a, b Match) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(stats.SkippedPaths)
	if len(stats.SkippedPaths) > maxSkippedPaths {
		stats.SkippedPaths = stats.SkippedPaths[:maxSkippedPaths:maxSkippedPaths]
	}
	return matches, stats, nil
}

// partialStats are the counters that are safe to read while workers run.
func (s *scan) partialStats() Stats {
	return Stats{
		Dirs:    int(s.dirs.Load()),
		Cached:  s.cached(),
		Vouched: s.vouched(),
		Entries: int(s.entries.Load()),
		Elapsed: time.Since(s.start),
	}
}

// fail records the first error and stops the walk; it returns that error.
func (s *scan) fail(err error) error {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	err = s.err
	s.abort.Store(true)
	s.mu.Unlock()
	s.cond.Broadcast()
	return err
}

func (w *worker) run() {
	s := w.s
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && s.active > 0 && s.err == nil {
			s.cond.Wait()
		}
		if s.err != nil || len(s.queue) == 0 {
			s.mu.Unlock()
			s.cond.Broadcast()
			return
		}
		d := s.queue[len(s.queue)-1]
		s.queue = s.queue[:len(s.queue)-1]
		s.active++
		s.mu.Unlock()

		w.subdirs = w.subdirs[:0]
		err := w.readDir(d)

		s.mu.Lock()
		s.active--
		if err != nil && s.err == nil {
			s.err = err
			s.abort.Store(true)
		}
		s.queue = append(s.queue, w.subdirs...)
		if len(s.queue) >= spawnQueue && len(s.workers) < s.max && s.err == nil {
			// This worker is counted in s.wg: adding to it is safe.
			s.spawn()
		}
		wake := len(w.subdirs) > 0 || s.active == 0 || err != nil
		s.mu.Unlock()
		if wake {
			s.cond.Broadcast()
		}
	}
}

func (s *scan) full(rel string) string {
	if rel == "" {
		return s.root
	}
	return filepath.Join(s.root, filepath.FromSlash(rel))
}

func (s *scan) limitError(bound, limit string) error {
	e := &LimitError{
		Root: s.root, Bound: bound, Limit: limit,
		Entries: int(s.entries.Load()), Dirs: int(s.dirs.Load()), Matches: int(s.nmatch.Load()),
		Elapsed: time.Since(s.start),
	}
	for _, p := range s.pats {
		if !p.anchored {
			e.Unanchored = append(e.Unanchored, p.orig)
		}
	}
	return e
}

// skippable reports errors that mean "this directory cannot be listed":
// permission denied, gone, no longer a directory, or a path too long to
// open (a tree nested past PATH_MAX). The directory is skipped and named
// in Stats.SkippedPaths, and the rest of the root is still walked: one
// such directory must not leave the whole root unsearched.
func skippable(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) ||
		errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENAMETOOLONG)
}

// readDir reads one directory, records its matching entries and collects
// the subdirectories worth entering in w.subdirs; with a Cache, it takes
// the directory from the earlier scan instead if it has not changed, and
// records it for the next.
func (w *worker) readDir(d dirState) error {
	s := w.s
	if d.known {
		if ok, err := w.reuse(d); ok || err != nil {
			return err
		}
	}
	mstart, sstart := len(w.matches), len(w.subdirs)
	r := &w.rd
	if err := r.open(s.full(d.rel), d.rel == ""); err != nil {
		if d.rel != "" && skippable(err) {
			w.skipped = append(w.skipped, s.full(d.rel))
			// Gone or replaced since its parent was listed: skipped.
			// Unreadable: what can be opened in it without a listing
			// is looked up.
			var perr error
			if errors.Is(err, fs.ErrPermission) {
				perr = w.probe(d)
			}
			w.record(d, dirID{}, 0, false, 0, mstart, sstart)
			return perr
		}
		return fmt.Errorf("globscan: %w", err)
	}
	defer r.close()
	var id dirID
	var flags uint8
	var fsOK bool
	if d.n != nil {
		var err error
		id, err = r.id()
		fsOK = err == nil && s.cr.sameFS(d, id.dev, r.fsType)
		switch {
		case !fsOK:
		case s.cr.fresh(id):
			flags = nodeTrusted
		case s.cr.watch != nil:
			// Only a watcher can vouch for it; without one its record
			// stays empty, so that the file of a tree changed at every
			// run (placeholders) is not written again each time.
			flags = nodeWhole
		}
	}
	s.dirs.Add(1)
	var entries uint32
	for {
		if s.abort.Load() {
			return nil
		}
		ents, err := r.next()
		entries += uint32(len(ents))
		if n := s.entries.Add(int64(len(ents))); n > int64(s.lim.MaxEntries) {
			return s.limitError("MaxEntries", fmt.Sprint(s.lim.MaxEntries))
		}
		if s.pastDeadline() {
			return s.limitError("Deadline", s.lim.Deadline.String())
		}
		for _, e := range ents {
			if err := w.entry(d, e); err != nil {
				return err
			}
		}
		if err == io.EOF {
			w.record(d, id, flags, fsOK, entries, mstart, sstart)
			return nil
		}
		if err != nil {
			if d.rel != "" && skippable(err) {
				w.skipped = append(w.skipped, s.full(d.rel))
				w.record(d, id, 0, fsOK, entries, mstart, sstart)
				return nil
			}
			return fmt.Errorf("globscan: reading %s: %w", s.full(d.rel), err)
		}
	}
}

// probe handles a directory that cannot be listed but may still be
// searchable (mode 0711): a command can open "dir/.env" there without
// listing dir, so every literal name a pattern expects next is looked up
// directly and handled like a listed entry.
func (w *worker) probe(d dirState) error {
	s := w.s
	seen := map[string]bool{}
	// "**/NAME" patterns can match NAME in any directory; "**/A/B/NAME"
	// can go on with any of its components.
	for name := range s.names {
		if err := w.probeName(d, name, seen); err != nil {
			return err
		}
	}
	for _, p := range s.pats {
		for c := range strings.SplitSeq(p.anySuffix, "/") {
			if c == "" {
				continue
			}
			if err := w.probeName(d, c, seen); err != nil {
				return err
			}
		}
	}
	for i, p := range s.progs {
		for m := d.states[i] & p.live &^ p.dstar; m != 0; m &= m - 1 {
			sg := &p.segs[bits.TrailingZeros64(m)]
			if sg.kind != segLiteral || seen[sg.lit] {
				continue
			}
			if err := w.probeName(d, sg.lit, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// probeName looks up one literal name in the unlistable directory d and
// handles it like a listed entry if it exists.
func (w *worker) probeName(d dirState, name string, seen map[string]bool) error {
	s := w.s
	if seen[name] {
		return nil
	}
	seen[name] = true
	fi, err := os.Lstat(filepath.Join(s.full(d.rel), name))
	if err != nil {
		return nil
	}
	if s.entries.Add(1) > int64(s.lim.MaxEntries) {
		return s.limitError("MaxEntries", fmt.Sprint(s.lim.MaxEntries))
	}
	return w.entry(d, dent{name: name, typ: fi.Mode().Type()})
}

// dent is one directory entry: its name and type bits (fs.ModeDir,
// fs.ModeSymlink, ...), as the directory listing reports them.
type dent struct {
	name string
	typ  fs.FileMode
	ino  uint64 // the inode number the listing gives (0: not known)
}

// entry handles one directory entry of d.
func (w *worker) entry(d dirState, e dent) error {
	s := w.s
	name, typ := e.name, e.typ
	isDir := typ.IsDir()
	try := s.unsafe
	var child []uint64
	// A "**/NAME" pattern can match below any directory (a file has no
	// "below": it is looked at only when a pattern may match it).
	live := isDir && s.names != nil
	if name != "" && s.nameFirst[name[0]] {
		for _, i := range s.names[name] {
			w.cand[i] = true
			try = true
		}
	}
	if isDir {
		child = make([]uint64, len(s.progs))
	}
	for i, p := range s.progs {
		m := d.states[i]
		if m&p.live == 0 {
			continue
		}
		m = p.step(m, name)
		if m&p.accept != 0 {
			w.cand[s.progPat[i]] = true
			try = true
		}
		if isDir {
			child[i] = m
			live = live || m&p.live != 0
		}
	}
	if !try && !live {
		if isDir {
			w.pruned++
		}
		return nil
	}
	var rel string
	if d.rel != "" {
		rel = d.rel + "/" + name
	} else {
		rel = strings.Clone(name) // do not pin the listing buffer
	}
	if try {
		matched, descend := false, false
		for i, p := range s.pats {
			if (w.cand[i] || p.unsafe) && !matched && (p.anyName != "" && w.cand[i] && p.suffixOf(rel) || p.anyName == "" && doublestar.MatchUnvalidated(p.norm, rel)) {
				matched, descend = true, p.descend
				if s.nmatch.Add(1) > int64(s.lim.MaxMatches) {
					return s.limitError("MaxMatches", fmt.Sprint(s.lim.MaxMatches))
				}
				w.matches = append(w.matches, Match{
					Path: s.full(rel), Rel: rel, Pattern: p.orig,
					IsDir: isDir, IsSymlink: typ&fs.ModeSymlink != 0,
				})
			}
			w.cand[i] = false
		}
		if matched && !descend {
			return nil // a matched directory is masked whole: do not enter
		}
	}
	if isDir {
		if live || s.unsafe {
			w.subdirs = append(w.subdirs, dirState{rel: rel, states: child, ino: e.ino})
		} else {
			w.pruned++
		}
	}
	return nil
}
