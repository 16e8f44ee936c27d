//go:build linux

package globscan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watchMask are the events that can change what a scan finds in a
// directory: an entry added, removed or renamed, an attribute changed
// (a permission that makes a directory unreadable, a hook made
// executable), the directory itself removed or moved. The contents of
// files are not watched: no scan reads them.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// watcher is a Cache's inotify instance (see Cache.Watch): a watch on
// every directory of the scans it vouches for, and a count of the events
// seen. Any event, an overflow of the queue (IN_Q_OVERFLOW: events were
// lost) or a change of the mount table (a file system mounted over a
// directory sends no event: the table is compared) counts; a scan is vouched for only while the
// count is the one read before it started.
type watcher struct {
	mu  sync.Mutex
	fd  int
	max int // the most watches this watcher adds
	// wds are the watches by descriptor; byID those of the directories
	// whose identity is known (device and inode).
	wds  map[int32]*watchInfo
	byID map[dirKey]*watchInfo
	// events counts what was read: any change (see above).
	events uint64
	// tick orders the watches, the events and the scans' starts (see
	// begin and vouch): it counts up at each event and each start.
	// broke is the tick of the latest overflow or change of the mount
	// table, after which no earlier record holds.
	tick  uint64
	broke uint64
	// drained says that count drained the queue for the scan about to
	// begin (see begin).
	drained bool
	// broken says why the watcher vouches for nothing any more (the
	// system's watches ran out, a read failed); "" while it works.
	broken string
	// mounts is /proc/self/mountinfo, read again at every drain but
	// those while held (see Cache.HoldMounts) after the first;
	// mountsSeen its last contents.
	mounts                *os.File
	mountsSeen, mountsBuf []byte
	held                  int  // holds not yet released
	heldRead              bool // the table was read since the first hold
	buf                   []byte
	// paths are the watches watchPaths added or found, and the mask
	// it asked of each (see Cache.WatchPaths).
	paths map[int32]uint32
}

// dirKey identifies a directory: its device and inode number.
type dirKey struct{ dev, ino uint64 }

// watchInfo is one watch: its directory (when known) and the ticks at
// which it was added and its latest event came.
type watchInfo struct {
	w           *watcher // whose (a node may keep one of a watcher closed since)
	key         dirKey
	known       bool
	gone        bool // removed (IN_IGNORED)
	added, last uint64
	// whole is the tick of the latest event that may have changed more
	// than one entry's record: one of the directory itself, of a
	// subdirectory (IN_ISDIR), or of more names than maxNames. names
	// are, by name, the ticks of the latest events that changed only
	// that entry, not a directory (a placeholder made and removed):
	// vouchNames.
	whole uint64
	names map[string]uint64
	// self is the tick of the latest event of the directory itself (no
	// entry's name), named the ticks of the latest events of each entry,
	// a directory's too, and namedFloor the latest tick of a name pushed
	// out of named: see watcher.unchangedBut.
	self       uint64
	named      map[string]uint64
	namedFloor uint64
}

// maxNames bounds the names a watch keeps (watchInfo.names).
const maxNames = 16

// DefaultWatches is the share of the system's inotify watches a Cache
// takes by default (Watch with max 0): a quarter of
// /proc/sys/fs/inotify/max_user_watches, which every program of the user
// shares (editors, other sessions), or 8192 when it cannot be read.
func DefaultWatches() int {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return 8192
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return 8192
	}
	return n / 4
}

// newWatcher starts an inotify instance that adds at most max watches.
func newWatcher(max int) (*watcher, error) {
	if max <= 0 {
		max = DefaultWatches()
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("globscan: starting an inotify instance: %w", err)
	}
	mounts, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("globscan: opening the mount table to watch it: %w", err)
	}
	w := &watcher{fd: fd, max: max, wds: map[int32]*watchInfo{}, byID: map[dirKey]*watchInfo{}, paths: map[int32]uint32{}, mounts: mounts, buf: make([]byte, 64<<10)}
	w.mountsChanged() // from now on
	return w, nil
}

// count drains the queue and returns the count of events, or ok false
// when the watcher vouches for nothing.
func (w *watcher) count() (n uint64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drain()
	w.drained = true
	return w.events, w.broken == ""
}

// drain reads every event queued: the queue is filled as each change
// is made, before the call that made it returns, so that what was done
// before drain is counted.
func (w *watcher) drain() {
	if w.broken != "" {
		return
	}
	for {
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		if err != nil || n <= 0 {
			w.broken = fmt.Sprintf("reading the inotify queue failed (%v)", err)
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			w.events++
			w.tick++
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				w.broke = w.tick
			}
			if wi := w.wds[ev.Wd]; wi != nil {
				wi.last = w.tick
				wi.event(ev, w.buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], w.tick)
				if ev.Mask&unix.IN_IGNORED != 0 {
					// The watch is gone (its directory removed).
					wi.gone = true
					if wi.known && w.byID[wi.key] == wi {
						delete(w.byID, wi.key)
					}
					delete(w.wds, ev.Wd)
				}
			}
			if ev.Mask&unix.IN_IGNORED != 0 {
				delete(w.paths, ev.Wd)
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
	if w.held > 0 && w.heldRead {
		return
	}
	w.heldRead = w.held > 0
	if w.mountsChanged() {
		w.events++
		w.tick++
		w.broke = w.tick
	}
}

// begin drains the queue and returns the tick of a scan that starts now
// (0 when the watcher vouches for nothing): what vouch compares the
// records of that scan with in the next.
func (w *watcher) begin() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	// Right after count (the same scan's look at its memo), the queue
	// and the mount table were just read: the scan began there.
	if !w.drained {
		w.drain()
	}
	w.drained = false
	if w.broken != "" {
		return 0
	}
	w.tick++
	return w.tick
}

// vouch reports whether the directory id, as recorded by a scan that
// began at tick since (begin), is still as it was then without looking at
// it: it was watched before that scan began, and no event came from its
// watch, and no overflow or mount since then (the queue drained by the
// begin of the scan that asks). An entry added, removed or renamed in
// it, or an attribute of it changed, is an event of its own watch; a
// directory removed loses its watch (IN_IGNORED), and one made in its
// place, even with the same inode number, has none yet.
//
// It takes no lock: it is called only by the workers of a scan, and the
// watcher changes only in drain and watchDirs, which run in
// Cache.ScanPatterns (holding the Cache's scanMu) before and after its
// workers, never while they run.
func (w *watcher) vouch(n *node, since uint64) bool {
	if w.broken != "" || since == 0 || w.broke >= since {
		return false
	}
	// The node keeps its directory's watch (watchDirs), which spares a
	// lookup by identity.
	wi := n.wi
	return wi != nil && wi.w == w && !wi.gone && wi.known && wi.key == dirKey{n.id.dev, n.id.ino} && wi.added < since && wi.last < since
}

// nameEvents are the events that change one entry of a directory.
const nameEvents = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB

// event records an event of wi's watch at tick, with name its name's
// bytes (NUL-padded; none for an event of the directory itself): see
// watchInfo.names.
func (wi *watchInfo) event(ev *unix.InotifyEvent, name []byte, tick uint64) {
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	wi.recordNamed(ev.Mask, name, tick)
	if len(name) == 0 || ev.Mask&unix.IN_ISDIR != 0 || ev.Mask&nameEvents == 0 {
		wi.whole = tick
		clear(wi.names)
		return
	}
	if _, ok := wi.names[string(name)]; !ok && len(wi.names) >= maxNames {
		wi.whole = tick
		clear(wi.names)
		return
	}
	if wi.names == nil {
		wi.names = map[string]uint64{}
	}
	wi.names[string(name)] = tick
}

// vouchNames is vouch for a directory whose watch saw, since the scan
// that recorded it began, only events of single entries that are not
// directories (a file made, removed, renamed, its mode changed): it
// appends their names to buf, and the caller vouches for the record only
// if each of them is as recorded (worker.sameEntries). A directory's
// other entries, and its subdirectories, are as recorded.
func (w *watcher) vouchNames(n *node, since uint64, buf []string) ([]string, bool) {
	if w.broken != "" || since == 0 || w.broke >= since {
		return buf, false
	}
	wi := n.wi
	if wi == nil || wi.w != w || wi.gone || !wi.known || wi.key != (dirKey{n.id.dev, n.id.ino}) || wi.added >= since || wi.whole >= since {
		return buf, false
	}
	for name, t := range wi.names {
		if t >= since {
			buf = append(buf, name)
		}
	}
	return buf, true
}

// hold and unhold count the holds of Cache.HoldMounts.
func (w *watcher) hold() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held++
}

func (w *watcher) unhold() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held--; w.held == 0 {
		w.heldRead = false
	}
}

// mountsChanged reports whether the mount table differs from the one
// read last. It is read whole each time (tens of microseconds for a
// table of a few dozen mounts): its poll (POLLPRI) did not say every
// mount on this kernel.
func (w *watcher) mountsChanged() bool {
	b, err := readAt0(w.mounts, w.mountsBuf[:0])
	if err != nil {
		return true
	}
	changed := string(b) != string(w.mountsSeen)
	w.mountsSeen, w.mountsBuf = append(w.mountsSeen[:0], b...), b
	return changed
}

// readAt0 reads f whole from its start into buf.
func readAt0(f *os.File, buf []byte) ([]byte, error) {
	for off := int64(0); ; {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.ReadAt(buf[len(buf):cap(buf)], off)
		buf = buf[:len(buf)+n]
		off += int64(n)
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if off > maxMountTable {
			return nil, fmt.Errorf("the mount table is larger than %d bytes", maxMountTable)
		}
	}
}

// maxMountTable bounds the mount table read.
const maxMountTable = 16 << 20

// watchDirs adds a watch on each directory of cands that has none, and
// reports whether each already had one: then every change made in them
// since before the scan that listed them began is counted. A directory
// without its identity (an untrusted record) is watched by its path.
// When the watches would pass w.max, none is added (the tree is left to
// the scans); when the system refuses one for want of watches, the
// watcher breaks. Either way, or broken before, full is true.
func (w *watcher) watchDirs(cands []watchCand, root string) (had, full bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != "" {
		return false, true
	}
	add := cands[:0:0]
	for _, c := range cands {
		if c.id == (dirID{}) {
			add = append(add, c)
		} else if wi := w.byID[dirKey{c.id.dev, c.id.ino}]; wi == nil {
			add = append(add, c)
		} else if c.n != nil {
			c.n.wi = wi
		}
	}
	if len(w.wds)+len(add) > w.max {
		return false, true
	}
	had = true
	for _, a := range add {
		flags := uint32(watchMask)
		if a.path != root {
			// The root is scanned through a link; below, none is
			// followed.
			flags |= unix.IN_DONT_FOLLOW
		}
		var wd int
		var err error
		if a.id == (dirID{}) {
			wd, err = unix.InotifyAddWatch(w.fd, a.path, flags)
		} else if wd, err = w.addWatchOf(a.path, a.id, a.path == root); errors.Is(err, errNotScanned) {
			// Another directory stands at the path now (a rename or an
			// exchange since the scan): not watched, so never vouched
			// for; the next scan reads it.
			had = false
			continue
		}
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.ENOMEM) {
			w.broken = "the system's inotify watches ran out (fs.inotify.max_user_watches)"
			return false, true
		}
		if err != nil {
			// Gone since: its parent's event says so.
			had = false
			continue
		}
		wi := w.wds[int32(wd)]
		if wi == nil {
			had = false
			wi = &watchInfo{w: w, added: w.tick}
			w.wds[int32(wd)] = wi
		}
		if a.id != (dirID{}) {
			key := dirKey{a.id.dev, a.id.ino}
			if wi.known && wi.key != key && w.byID[wi.key] == wi {
				delete(w.byID, wi.key)
			}
			wi.key, wi.known = key, true
			w.byID[key] = wi
			if a.n != nil {
				a.n.wi = wi
			}
		}
	}
	return had, false
}

// errNotScanned is addWatchOf's refusal of a path where another
// directory than the one scanned stands now.
var errNotScanned = errors.New("not the directory scanned")

// addWatchOf adds the watch of the directory at path only if it is still
// the one scanned (id): the path is opened without following a link
// (unless follow: the root is scanned through one), compared by device
// and inode, and the watch added through the descriptor, so that it is on
// that directory whatever the path names meanwhile. Added by the path
// after the scan, a watch could land on another directory swapped there
// in between (rename, RENAME_EXCHANGE), which then vouched for the first
// one's listing while its own changes went unseen (found by an attack: a
// run exchanging pairs of directories while others ran, then a run
// planting a repository with a hook in each, most not found).
func (w *watcher) addWatchOf(path string, id dirID, follow bool) (int, error) {
	oflags := unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
	if !follow {
		oflags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(path, oflags, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, err
	}
	if uint64(st.Dev) != id.dev || st.Ino != id.ino {
		return -1, errNotScanned
	}
	// The magic link /proc/self/fd/N is followed to the descriptor's own
	// directory: no IN_DONT_FOLLOW here.
	return unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
}

// watching is the number of watches, for the tests.
func (w *watcher) watching() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.wds)
}

// close ends the watcher.
func (w *watcher) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		// Closing an inotify instance waits for an SRCU grace period
		// (about 12 ms): not on the caller's path.
		go unix.Close(w.fd)
		w.mounts.Close()
		w.fd = -1
		w.broken = "closed"
	}
}
