package globscan

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// A Cache keeps what earlier scans found, so that a scan of the same root
// with the same patterns reads again only the directories that changed
// since: every other directory costs one lstat instead of an open, its
// listing and a close.
//
// A directory is taken from the cache only when its device, inode number
// and change time (ctime) are those recorded when it was read. The kernel
// sets a directory's ctime to the current time whenever an entry is
// added, removed or renamed in it, and on every chmod, chown or utimes of
// it, and no unprivileged process can set a ctime back (utimes sets only
// the access and modification times, and then changes the ctime too): a
// command that creates sub/.env and restores sub's mtime with touch -d
// still changes sub's ctime. Recorded directories that the scan must
// trust are only those
//
//   - on a local file system that keeps these rules (ext2/3/4, XFS, Btrfs,
//     tmpfs, overlayfs, F2FS, bcachefs, ZFS; elsewhere, such as NFS, FUSE
//     or FAT, where times come from a server or can be set, every
//     directory is read);
//   - whose ctime is older than the start of the scan that read them by
//     more than the file system's time granularity and the kernel's clock
//     tick (racyWindow, 2 s): a change made in the same tick as the read
//     could leave the ctime as it was (git's "racily clean" rule);
//   - read whole (a directory that could not be listed is read again).
//
// The cache's files live in a directory of their own (OpenCache), one per
// root and pattern list, and are written by Save, to a temporary file
// renamed over the old one: concurrent scans never see half a file. A
// file that is missing, truncated, corrupt (its checksum), too large, not
// a regular file, a symbolic link, owned by another user, writable by the
// group or others, made for another root or other patterns, or written by
// a clock later than now is ignored: the scan reads every directory, as
// without a cache. A scan in which few directories changed keeps the file
// (see saveRatio), and a first scan of fewer than MinCacheDirs makes none.
// The cache is bounded: MaxCacheDirs directories per file,
// MaxCacheFileBytes per file, MaxCacheFiles files and MaxCacheBytes in all
// (the least recently used files are removed first).
//
// The directory must be out of reach of whatever could change the
// scanned trees without changing their ctimes, which is nothing short of
// the owner of the cache itself: cordon keeps it in its state directory,
// which no sandbox can read or write.
//
// A Cache is safe for concurrent use (its scans take turns). A nil *Cache
// caches nothing.
type Cache struct {
	dir string
	// now is the clock (a variable for the tests).
	now func() time.Time

	// uid is the owner a cache file must have (os.Geteuid; a variable
	// for the tests).
	uid int

	scanMu sync.Mutex // held by a scan

	mu    sync.Mutex
	trees map[string]*cacheTree // by key: the latest tree (loaded or scanned)
	dirty map[string]bool       // keys whose tree Save must write
	// What was loaded and rejected (see CacheStats).
	loads    int
	rejected int
	why      string

	// watch, when not nil, vouches for the scans in memos (see Watch).
	watch *watcher
	memos map[string]*memo
	// unwatched are the keys whose latest scan's new directories the
	// watcher could not take (see Watched).
	unwatched map[string]bool
	reused    int
	// remote, when not nil, runs the scans of a cache that does not
	// watch (see UseRemote); remoteScans counts those it answered,
	// walked the directories of the scans run here.
	remote      Remote
	remoteScans int
	// remoteDeclined counts the scans the remote declined.
	remoteDeclined int
	walked         int
	// noMemo makes a watched cache answer no scan from a memo, so that
	// the tests see the directories vouched for one by one.
	noMemo bool
}

// memo is a scan's result, kept while the watcher vouches that nothing
// it depends on changed: events is the watcher's count read before the
// scan started, top the root's record.
type memo struct {
	events uint64
	tick   uint64 // the watcher's tick when the scan began
	// ignored, when not nil, are the paths of a scan that ignored them
	// (ScanPatternsIgnoring) and found below them directories not watched
	// before: the memo answers only a scan that ignores each of them too.
	ignored []string
	top     dirID
	matches []Match
	st      Stats
}

// Bounds of a Cache.
const (
	// MaxCacheDirs is the most directories one cache file records; a
	// scan of more is not saved (the next scan reads everything).
	MaxCacheDirs = 500_000
	// MaxCacheFileBytes is the largest cache file written or read.
	MaxCacheFileBytes = 32 << 20
	// MaxCacheFiles is the most cache files kept in the directory.
	MaxCacheFiles = 32
	// MaxCacheBytes bounds the size of all the cache files together.
	MaxCacheBytes = 256 << 20
)

// saveRatio: a scan's tree replaces the earlier one, and is written by
// Save, only if more than one directory in saveRatio (and more than one)
// is recorded otherwise. Those that are not cost a directory read in the
// next scans (a few microseconds each), where writing the tree costs a
// file of 50 bytes a directory: a workspace whose top changes at every
// run (the placeholders of the protected paths come and go) is not
// rewritten at every run.
const saveRatio = 64

// MinCacheDirs is the fewest directories a scan must walk for its tree to
// be written to a new cache file: a smaller tree is read faster than a
// file is written and read.
const MinCacheDirs = 64

// cacheBounds are the bounds in force: the constants above (smaller in
// the tests).
var cacheBounds = struct{ dirs, fileBytes, files, bytes, minDirs int }{MaxCacheDirs, MaxCacheFileBytes, MaxCacheFiles, MaxCacheBytes, MinCacheDirs}

// racyWindow is how much older than the start of the scan that reads it a
// directory's ctime must be for the record to be trusted later: more than
// the coarsest time granularity of the trusted file systems (1 s, on
// ext4 with 128-byte inodes) plus the kernel's clock tick, by which file
// times lag the wall clock.
const racyWindow = 2 * time.Second

// OpenCache returns the cache kept in dir. Nothing is read until a scan
// needs it, and nothing is written until Save.
func OpenCache(dir string) *Cache {
	return &Cache{dir: dir, now: time.Now, uid: os.Geteuid(), trees: map[string]*cacheTree{}, dirty: map[string]bool{}}
}

// CacheStats says what a Cache did, for the tests and benchmarks.
type CacheStats struct {
	// Loaded is the number of cache files read and used.
	Loaded int
	// Rejected is the number of cache files found but not used.
	Rejected int
	// Why says why the last rejected one was not used.
	Why string
	// Dirty is the number of trees Save would write.
	Dirty int
	// Reused is the number of scans answered from a watched earlier
	// scan without reading a directory (see Watch).
	Reused int
	// Watches is the number of directories watched.
	Watches int
	// Remote is the number of scans a Remote answered (see UseRemote),
	// and Walked the directories of the scans run here.
	Remote, Walked int
	// RemoteDeclined is the number of scans a Remote that runs declined
	// (RemoteScan.Declined).
	RemoteDeclined int
}

// A Remote runs a Cache's scans in another process that keeps them
// watched (cordon's walk server): Scan returns what Cache.ScanPatternsIgnoring
// returns there, or ok false when it cannot answer (with r.Declined set
// when it runs and said no).
type Remote interface {
	Scan(root string, patterns []Pattern, lim Limits, ignore []string) (r RemoteScan, ok bool)
}

// RemoteScan is a scan's result from a Remote.
type RemoteScan struct {
	Matches []Match
	Stats   Stats
	Err     error
	// Declined, with ok false, says that the Remote runs and declined
	// the scan (a tree it does not keep watched), rather than that none
	// answered.
	Declined bool
}

// UseRemote makes c hand its scans to r while c does not watch (Watch):
// a scan r cannot answer runs here, as without r. r must run the scan
// that c would, with the same limits, on the same view of the files.
func (c *Cache) UseRemote(r Remote) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remote = r
}

// Stats reports what the cache loaded and rejected so far.
func (c *Cache) Stats() CacheStats {
	if c == nil {
		return CacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := CacheStats{Loaded: c.loads, Rejected: c.rejected, Why: c.why, Dirty: len(c.dirty), Reused: c.reused, Remote: c.remoteScans, Walked: c.walked, RemoteDeclined: c.remoteDeclined}
	if c.watch != nil {
		st.Watches = c.watch.watching()
	}
	return st
}

// Watch makes c watch, with inotify, every directory of its scans (at
// most max watches; 0: DefaultWatches), and answer a scan of a root with
// the same patterns as an earlier one without reading a directory when
// nothing that scan depends on can have changed since it started:
//
//   - every directory it entered was watched before it started, and no
//     event came since from any watched directory (an entry added,
//     removed, renamed, an attribute changed; the queue drained first);
//   - the queue did not overflow (IN_Q_OVERFLOW: events were lost) and
//     the mount table did not change (a mount sends no event);
//   - every directory was recorded trusted (see Cache: a file system
//     whose changes are all local, so that inotify sees them), none was
//     skipped, and the root is still the same directory, unchanged.
//
// Any of these failing, the scan walks, but takes without an lstat each
// directory the watcher vouches for (watcher.vouch: watched before the
// scan that recorded it began, no event from its watch since, no overflow
// or mount since, and its parent taken from the cache too; Stats.Vouched),
// reads what changed, and watches the directories new to it for the next.
// A tree that would take
// more than the watches left, or a system whose watches run out
// (fs.inotify.max_user_watches), is scanned every time, as without
// Watch. Watching is for a process that scans the same trees again and
// again (a session of many commands, the walk server of one-shot runs);
// Close ends it.
func (c *Cache) Watch(max int) error {
	if c == nil {
		return nil
	}
	w, err := newWatcher(max)
	if err != nil {
		return err
	}
	c.scanMu.Lock()
	defer c.scanMu.Unlock()
	c.mu.Lock() // for Stats
	defer c.mu.Unlock()
	if c.watch != nil {
		c.watch.close()
	}
	c.watch, c.memos, c.unwatched = w, map[string]*memo{}, map[string]bool{}
	for _, t := range c.trees {
		if t != nil {
			t.tick = 0 // recorded without this watcher
		}
	}
	return nil
}

// Watched reports whether a watched Cache (see Watch) took every
// directory of its latest scan of root with patterns into its watches:
// false when they would have passed its share of the system's watches,
// or the system's ran out, and the tree is then scanned every time, as
// without Watch.
func (c *Cache) Watched(root string, patterns []Pattern) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watch != nil && !c.unwatched[cacheKey(root, patterns)]
}

// HoldMounts makes the scans of a watched cache (see Watch), until the
// release it returns is called, read the mount table once, at the first
// of them, rather than at each: the walks of one step (the plan of a
// command, the check after it) then see the mounts as they were when the
// step began, as a single walk sees them as they were when it began. The
// next scan after the release reads it again. Without Watch it does
// nothing. Release once.
func (c *Cache) HoldMounts() (release func()) {
	if c == nil {
		return func() {}
	}
	c.mu.Lock()
	w := c.watch
	c.mu.Unlock()
	if w == nil {
		return func() {}
	}
	w.hold()
	var once sync.Once
	return func() { once.Do(w.unhold) }
}

// Close ends Watch. The cache still works, without it.
func (c *Cache) Close() error {
	if c == nil {
		return nil
	}
	c.scanMu.Lock()
	defer c.scanMu.Unlock()
	c.mu.Lock() // for Stats
	defer c.mu.Unlock()
	if c.watch != nil {
		c.watch.close()
		c.watch, c.memos = nil, nil
	}
	return nil
}

// remembered is the result of the scan of key kept by Watch, when it
// still holds (see Watch); events is the watcher's count now, for the
// scan that follows when it does not.
func (c *Cache) remembered(key, root string, lim Limits, ignore []string) (matches []Match, st Stats, events uint64, ok bool) {
	events, ok = c.watch.count()
	if !ok {
		return nil, Stats{}, 0, false
	}
	m := c.memos[key]
	// Within this scan's bounds, the scan would end as that one did
	// (the plan's walk and the check's bound the same root otherwise).
	if m == nil || m.st.Entries > lim.MaxEntries || len(m.matches) > lim.MaxMatches || !coveredBy(m.ignored, ignore) {
		return nil, Stats{}, events, false
	}
	// The root itself: its parents are not watched. Entries made or
	// removed in it change its ctime: with ignored changes, its identity
	// alone is compared (its own watch saw the rest).
	id, isDir, err := statID(root, true)
	if err != nil || !isDir {
		return nil, Stats{}, events, false
	}
	switch {
	case m.events == events:
		if id != m.top {
			return nil, Stats{}, events, false
		}
	case len(ignore) == 0 || id.dev != m.top.dev || id.ino != m.top.ino || !c.onlyIgnored(key, root, m.tick, ignore):
		return nil, Stats{}, events, false
	}
	st = m.st
	st.SkippedPaths = nil
	st.Cached, st.Vouched, st.Elapsed = st.Dirs, st.Dirs, 0
	return slices.Clone(m.matches), st, events, true
}

// remember keeps the result of a scan of key that started when the
// watcher's count was events, when the watcher vouches for it (see
// Watch), and watches the directories of its tree new to it. A
// directory read whole in the tick of a change (nodeWhole) is vouched for
// as any other: it was watched before the scan began. With ignore (see
// ScanPatternsIgnoring), a directory at or below one of its paths that
// was not watched before (a placeholder made for the run) does not keep
// the scan from being kept, but then only for a scan that ignores those
// paths too (memo.ignored).
func (c *Cache) remember(key, root string, events uint64, cr *cacheRun, matches []Match, st Stats, ignore []string) {
	delete(c.memos, key)
	cands, ignoredCands := cr.watchCands, []watchCand(nil)
	if ignored := subpath.NewSet(ignore); ignored != nil {
		cands = nil
		for _, cand := range cr.watchCands {
			if ignored.Holds(cand.path) {
				ignoredCands = append(ignoredCands, cand)
			} else {
				cands = append(cands, cand)
			}
		}
	}
	had, full := c.watch.watchDirs(cands, root)
	if len(ignoredCands) > 0 {
		_, full2 := c.watch.watchDirs(ignoredCands, root)
		full = full || full2
	}
	if full {
		c.unwatched[key] = true
	} else {
		delete(c.unwatched, key)
	}
	if !had || cr.unvouchable.Load() > 0 || st.Skipped > 0 || cr.top == nil || cr.top.id == (dirID{}) {
		return
	}
	m := &memo{events: events, tick: cr.tick, top: cr.top.id, matches: slices.Clone(matches), st: st}
	if len(ignoredCands) > 0 {
		m.ignored = slices.Clone(ignore)
	}
	c.memos[key] = m
}

// ScanPatterns is the package's ScanPatterns, taking from the cache every
// directory unchanged since an earlier scan of root with the same
// patterns (see Cache) and recording this scan for the next one: Save
// writes it if more than one directory in 64 changed, or if it is the
// first of at least MinCacheDirs directories. Its result is the one
// ScanPatterns would return; Stats.Dirs counts the directories taken from
// the cache too, and Stats.Cached those.
func (c *Cache) ScanPatterns(root string, patterns []Pattern, lim Limits) ([]Match, Stats, error) {
	return c.ScanPatternsIgnoring(root, patterns, lim, nil)
}

// ScanPatternsIgnoring is ScanPatterns for a caller that ignores what
// lies at or below each path of ignore (absolute, clean): a watched
// Cache (see Watch) also answers from its earlier scan of root with the
// same patterns when every change since that scan began is of an entry
// at or below one of them (the placeholders a run made, when the check
// after it ignores them). Its result may then differ from a new scan's
// there, and only there.
func (c *Cache) ScanPatternsIgnoring(root string, patterns []Pattern, lim Limits, ignore []string) ([]Match, Stats, error) {
	if c == nil || !cacheSupported || len(patterns) == 0 {
		return ScanPatterns(root, patterns, lim)
	}
	c.mu.Lock()
	remote := c.remote
	if c.watch != nil {
		remote = nil // it watches itself
	}
	c.mu.Unlock()
	if remote != nil {
		r, ok := remote.Scan(root, patterns, lim, ignore)
		if ok {
			c.mu.Lock()
			c.remoteScans++
			c.mu.Unlock()
			return r.Matches, r.Stats, r.Err
		}
		if r.Declined {
			c.mu.Lock()
			c.remoteDeclined++
			c.mu.Unlock()
		}
	}
	// The scan updates the tree in place: one scan of a Cache at a time.
	c.scanMu.Lock()
	defer c.scanMu.Unlock()
	key := cacheKey(root, patterns)
	var events uint64
	if c.watch != nil && !c.noMemo {
		m, st, n, ok := c.remembered(key, root, lim.withDefaults(), ignore)
		if ok {
			c.mu.Lock()
			c.reused++
			c.mu.Unlock()
			return m, st, nil
		}
		events = n
	}
	old := c.tree(key, root, patterns)
	cr := &cacheRun{start: c.now()}
	if old != nil {
		cr.old = old.top
	}
	if c.watch != nil {
		// The directories the watcher vouches for since the scan that
		// recorded old cost no lstat (see watcher.vouch).
		cr.watch, cr.tick = c.watch, c.watch.begin()
		if old != nil && cr.tick != 0 {
			cr.since = old.tick
		}
	}
	matches, st, err := scanPatterns(root, patterns, lim, cr)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.walked += st.Dirs
	if err != nil {
		// Half updated, and maybe still being updated by workers that
		// did not stop yet: the next scan reads the file again, and
		// Save does not write it (an earlier scan may have left it
		// dirty).
		delete(c.trees, key)
		delete(c.dirty, key)
		delete(c.memos, key)
		return nil, st, err
	}
	if c.watch != nil {
		c.remember(key, root, events, cr, matches, st, ignore)
	}
	t := &cacheTree{root: root, patterns: slices.Clone(patterns), start: cr.start.UnixNano(), dirs: st.Dirs, top: cr.top, tick: cr.tick}
	c.trees[key] = t
	switch {
	case old == nil && st.Dirs < cacheBounds.minDirs:
		// Too small a tree to be worth a file.
	case old != nil && cr.differ.Load() <= int64(max(1, st.Dirs/saveRatio)):
		// Little changed: the file stays (each directory in it is
		// checked anyway), and is not written again.
	default:
		c.dirty[key] = true
	}
	return matches, st, nil
}

// tree returns the latest tree of key: the one a scan of this Cache
// recorded, else the one in its file, else nil.
func (c *Cache) tree(key, root string, patterns []Pattern) *cacheTree {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.trees[key]; ok {
		return t
	}
	t, why := c.load(key, root, patterns)
	switch {
	case t != nil:
		c.loads++
	case why != "":
		c.rejected++
		c.why = why
	}
	c.trees[key] = t
	return t
}

// cacheKey names the cache file of a root and pattern list.
func cacheKey(root string, patterns []Pattern) string {
	h := sha256.New()
	var n [8]byte
	put := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	put(cacheMagic)
	put(root)
	for _, p := range patterns {
		put(p.Glob)
		if p.Descend {
			put("descend")
		} else {
			put("")
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// cacheTree is what one scan found: the root's node and, below it, every
// directory the scan entered.
type cacheTree struct {
	root     string
	patterns []Pattern
	start    int64 // when the scan started, in Unix nanoseconds
	dirs     int   // directories walked (for a decoded tree, its nodes)
	top      *node
	// tick is the watcher's tick when the scan that recorded the tree
	// began (watcher.begin), 0 when it was not watched.
	tick uint64
}

// node is one directory of a cacheTree.
type node struct {
	name    string // the last component; "" for the root
	id      dirID  // when it was read
	entries uint32 // entries seen (counted against Limits)
	flags   uint8
	matches []cachedMatch
	// kids are the subdirectories the scan entered, in no set order.
	kids []node
	// wi is the directory's watch, with a watched Cache (see
	// watcher.vouch); nil when not known.
	wi *watchInfo
}

// watchCand is a directory a scan read or looked at, to be watched if it
// is not: its path and, when recorded trusted, its identity.
type watchCand struct {
	path string
	id   dirID
	n    *node // its node, which keeps its watch
}

// dirID identifies a version of a directory: its device, inode number
// and change time.
type dirID struct {
	dev, ino  uint64
	sec, nsec int64
}

// Node flags.
const (
	// nodeTrusted: the directory was read whole, on a file system that
	// keeps ctimes, and its ctime was older than the read by more than
	// racyWindow. Without it the directory is read again, unless a
	// watcher vouches for a nodeWhole record.
	nodeTrusted = 1 << iota
	// nodeWhole: the directory was read whole by a watched scan, on a
	// file system that keeps ctimes, in the tick of a change (a run's
	// placeholders removed just before): its record holds, and a watcher
	// that saw no event since the scan began vouches for it (an event
	// comes with each change, whatever the clock); no ctime compares with
	// it. Without a watcher such a directory keeps no record.
	nodeWhole
)

// cachedMatch is a match in a directory: its entry's name, the index of
// the pattern that matched, and its kind.
type cachedMatch struct {
	name  string
	pat   uint16
	flags uint8 // matchDir, matchSymlink
}

// Kinds of cachedMatch.
const (
	matchDir = 1 << iota
	matchSymlink
)

// cacheRun is the cache's part of one scan.
type cacheRun struct {
	start time.Time
	old   *node // the root's node in the earlier tree, or nil
	top   *node // the root's node in this scan's tree: old, updated
	// differ counts the directories this scan recorded otherwise than
	// the earlier one.
	differ atomic.Int64
	// cached counts the directories taken from the earlier tree.
	cached atomic.Int64
	// unvouchable counts the directories recorded untrusted (see
	// nodeTrusted) that not even a watcher vouches for (not nodeWhole
	// either): a scan with one is not kept (see remember).
	unvouchable atomic.Int64
	// watch, with a watched Cache, is its watcher; tick the tick at
	// which this scan began, since that of the scan that recorded old
	// (0: none, nothing is vouched for).
	watch       *watcher
	tick, since uint64
	// vouchedDirs counts the directories taken from the earlier tree on the
	// watcher's word, without an lstat.
	vouchedDirs atomic.Int64
	// watchCands are the directories the scan read or looked at (not
	// those vouched for, watched already), for the watcher.
	watchCands []watchCand

	fsMu sync.Mutex
	fsOK map[uint64]fsTrust // by device: what its file system keeps
}

// fsTrust is what a scan may trust of a file system (see keepsCtime and
// listsInodes).
type fsTrust uint8

const (
	fsCtimes fsTrust = 1 << iota // keepsCtime
	fsInodes                     // listsInodes
)

// sameNode reports whether a directory read again is recorded as before
// (its kids compared by name only: they are compared themselves).
func sameNode(a, b *node) bool {
	if a.id != b.id || a.entries != b.entries || a.flags != b.flags || !slices.Equal(a.matches, b.matches) || len(a.kids) != len(b.kids) {
		return false
	}
	for i := range a.kids {
		if a.kids[i].name != b.kids[i].name {
			return false
		}
	}
	return true
}

// trustedFS reports whether the file system of device dev keeps ctimes
// (keepsCtime); fsType finds its type the first time dev is seen.
func (cr *cacheRun) trustedFS(dev uint64, fsType func() (int64, error)) bool {
	cr.fsMu.Lock()
	defer cr.fsMu.Unlock()
	tr, seen := cr.fsOK[dev]
	if !seen {
		if t, err := fsType(); err == nil {
			if keepsCtime(t) {
				tr |= fsCtimes
			}
			if listsInodes(t) {
				tr |= fsInodes
			}
		}
		if cr.fsOK == nil {
			cr.fsOK = map[uint64]fsTrust{}
		}
		cr.fsOK[dev] = tr
	}
	return tr&fsCtimes != 0
}

// listsInodes reports whether the file system of device dev, seen by
// trustedFS before, lists each entry with the inode number that lstat
// gives it (see listsInodes).
func (cr *cacheRun) listsInodes(dev uint64) bool {
	cr.fsMu.Lock()
	defer cr.fsMu.Unlock()
	return cr.fsOK[dev]&(fsCtimes|fsInodes) == fsCtimes|fsInodes
}

// vouched reports whether the watcher vouches that the directory of n,
// recorded by the earlier scan, is unchanged since (see watcher.vouch).
func (cr *cacheRun) vouched(n *node) bool {
	if cr.watch == nil || cr.since == 0 || n.id == (dirID{}) {
		return false
	}
	if !cr.watch.vouch(n, cr.since) {
		return false
	}
	cr.vouchedDirs.Add(1)
	return true
}

// vouchedNames is vouched for a directory whose watch saw only events of
// single entries, not directories, since the earlier scan: their names,
// appended to buf, which the caller looks at (see watcher.vouchNames).
func (cr *cacheRun) vouchedNames(n *node, buf []string) ([]string, bool) {
	if cr.watch == nil || cr.since == 0 || n.id == (dirID{}) {
		return buf, false
	}
	return cr.watch.vouchNames(n, cr.since, buf)
}

// fresh reports whether a directory with id, read by this scan, may be
// trusted by a later one: its ctime is older than the scan's start by
// more than racyWindow.
func (cr *cacheRun) fresh(id dirID) bool {
	return time.Unix(id.sec, id.nsec).Before(cr.start.Add(-racyWindow))
}
