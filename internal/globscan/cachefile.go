package globscan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// The cache file: cacheMagic, a header, the nodes in breadth-first order
// (so that the kids of a node are consecutive), and a CRC-32 (IEEE) of all
// that.
// Integers are little-endian.
//
//	header: start u64 (Unix ns), dirs u32, root str16, patterns u16
//	        and for each: glob str16, descend u8
//	node:   name str16, dev u64, ino u64, ctime sec i64, nsec u32,
//	        entries u32, flags u8, matches u32 and for each: name str16,
//	        pattern u16, flags u8; kids u32
//
// where str16 is a u16 length and the bytes.
const cacheMagic = "cordon globscan walk cache 2\n"

// cacheExt names the cache files in the cache directory.
const cacheExt = ".walk"

// crcTable is CRC-32 (IEEE), which the hardware computes on amd64 and
// arm64 as fast as CRC-32C, but whose set-up costs about 0.02 ms where
// CRC-32C's costs 0.15 ms on amd64, paid by every cordon command at
// start-up. (Version 1 of the format used CRC-32C; its files have another
// cacheMagic, hence another name, and go with the least recently used.)
var crcTable = crc32.IEEETable

// minNodeBytes is the smallest encoded node: it bounds the node count a
// file of a given size can claim.
const minNodeBytes = 2 + 8 + 8 + 8 + 4 + 4 + 1 + 4 + 4

// encodeTree encodes t, or fails when it is over the bounds.
func encodeTree(t *cacheTree) ([]byte, error) {
	if t.dirs > cacheBounds.dirs {
		return nil, fmt.Errorf("%d directories, more than %d", t.dirs, cacheBounds.dirs)
	}
	b := make([]byte, 0, 64+len(t.root)+t.dirs*48)
	b = append(b, cacheMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(t.start))
	countAt := len(b)
	b = binary.LittleEndian.AppendUint32(b, 0)
	var err error
	str := func(s string) {
		if len(s) > 0xffff {
			err = fmt.Errorf("a name of %d bytes", len(s))
		}
		b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	str(t.root)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(t.patterns)))
	for _, p := range t.patterns {
		str(p.Glob)
		b = append(b, boolByte(p.Descend))
	}
	queue := []*node{t.top}
	for i := 0; i < len(queue); i++ {
		if len(queue) > cacheBounds.dirs {
			return nil, fmt.Errorf("more than %d directories", cacheBounds.dirs)
		}
		if len(b) > cacheBounds.fileBytes {
			return nil, fmt.Errorf("more than %d bytes", cacheBounds.fileBytes)
		}
		n := queue[i]
		str(n.name)
		b = binary.LittleEndian.AppendUint64(b, n.id.dev)
		b = binary.LittleEndian.AppendUint64(b, n.id.ino)
		b = binary.LittleEndian.AppendUint64(b, uint64(n.id.sec))
		b = binary.LittleEndian.AppendUint32(b, uint32(n.id.nsec))
		b = binary.LittleEndian.AppendUint32(b, n.entries)
		b = append(b, n.flags)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(n.matches)))
		for _, m := range n.matches {
			str(m.name)
			b = binary.LittleEndian.AppendUint16(b, m.pat)
			b = append(b, m.flags)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(len(n.kids)))
		for k := range n.kids {
			queue = append(queue, &n.kids[k])
		}
	}
	if err != nil {
		return nil, err
	}
	binary.LittleEndian.PutUint32(b[countAt:], uint32(len(queue)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
	if len(b) > cacheBounds.fileBytes {
		return nil, fmt.Errorf("%d bytes, more than %d", len(b), cacheBounds.fileBytes)
	}
	return b, nil
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// decoder reads a cache file; the first error sticks.
type decoder struct {
	b   []byte
	s   string // b; names are substrings of it
	off int
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("truncated or corrupt at byte %d (%s)", d.off, what)
	}
}

func (d *decoder) take(n int, what string) string {
	if d.err != nil || n > len(d.s)-d.off {
		d.fail(what)
		return ""
	}
	v := d.s[d.off : d.off+n]
	d.off += n
	return v
}

// ok reports whether n more bytes are there, and moves past them.
func (d *decoder) ok(n int, what string) bool {
	if d.err != nil || n > len(d.b)-d.off {
		d.fail(what)
		return false
	}
	d.off += n
	return true
}

func (d *decoder) u8(what string) uint8 {
	if !d.ok(1, what) {
		return 0
	}
	return d.b[d.off-1]
}

func (d *decoder) u16(what string) uint16 {
	if !d.ok(2, what) {
		return 0
	}
	return binary.LittleEndian.Uint16(d.b[d.off-2:])
}

func (d *decoder) u32(what string) uint32 {
	if !d.ok(4, what) {
		return 0
	}
	return binary.LittleEndian.Uint32(d.b[d.off-4:])
}

func (d *decoder) u64(what string) uint64 {
	if !d.ok(8, what) {
		return 0
	}
	return binary.LittleEndian.Uint64(d.b[d.off-8:])
}

func (d *decoder) str(what string) string {
	return d.take(int(d.u16(what)), what)
}

// decodeTree decodes a cache file made for root and patterns, checking
// every count against what is left of the file. A tree written by a
// clock later than now is refused: the clock went back, and a change
// could then get a ctime a record already has.
func decodeTree(b []byte, root string, patterns []Pattern, now time.Time) (*cacheTree, error) {
	if len(b) < len(cacheMagic)+4 || string(b[:len(cacheMagic)]) != cacheMagic {
		return nil, errors.New("not a walk cache of this version")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, errors.New("bad checksum (truncated or corrupt)")
	}
	// The names are substrings of the file, which nothing changes once
	// it is read: no copy of it, nor of each name.
	d := &decoder{b: body, s: unsafe.String(unsafe.SliceData(body), len(body)), off: len(cacheMagic)}
	t := &cacheTree{start: int64(d.u64("start"))}
	dirs := int(d.u32("count"))
	t.root = d.str("root")
	np := int(d.u16("patterns"))
	for range np {
		g := d.str("pattern")
		t.patterns = append(t.patterns, Pattern{Glob: g, Descend: d.u8("descend") != 0})
	}
	switch {
	case d.err != nil:
		return nil, d.err
	case t.root != root || !slices.Equal(t.patterns, patterns):
		return nil, errors.New("made for another root or other patterns")
	case time.Unix(0, t.start).After(now):
		return nil, errors.New("written later than now (the clock went back)")
	case dirs < 1 || dirs > cacheBounds.dirs || dirs > (len(body)-d.off)/minNodeBytes:
		return nil, fmt.Errorf("claims %d directories", dirs)
	}
	nodes := make([]node, dirs)
	next := 1
	for i := range nodes {
		n := &nodes[i]
		n.name = d.str("name")
		if i > 0 && !validName(n.name) {
			d.fail("name")
			break
		}
		n.id = dirID{dev: d.u64("dev"), ino: d.u64("ino"), sec: int64(d.u64("ctime")), nsec: int64(d.u32("ctime ns"))}
		n.entries = d.u32("entries")
		n.flags = d.u8("flags")
		nm := int(d.u32("matches"))
		if nm > (len(body)-d.off)/5 {
			d.fail("match count")
			break
		}
		if nm > 0 {
			n.matches = make([]cachedMatch, nm)
		}
		for j := range n.matches {
			m := &n.matches[j]
			m.name = d.str("match")
			m.pat = d.u16("match pattern")
			m.flags = d.u8("match flags")
			if int(m.pat) >= np || !validName(m.name) {
				d.fail("match pattern")
			}
		}
		nk := int(d.u32("kids"))
		if d.err != nil || nk > dirs-next || (i == 0) != (n.name == "") || n.id.nsec < 0 || n.id.nsec >= 1e9 {
			d.fail("node")
			break
		}
		n.kids = nodes[next : next+nk : next+nk]
		next += nk
	}
	if d.err == nil && (next != dirs || d.off != len(body)) {
		d.fail("node count")
	}
	if d.err != nil {
		return nil, d.err
	}
	t.top, t.dirs = &nodes[0], dirs
	return t, nil
}

// validName reports whether s can be one entry's name.
func validName(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '/' || s[i] == 0 {
			return false
		}
	}
	return true
}

// path is the file of key.
func (c *Cache) path(key string) string { return filepath.Join(c.dir, key+cacheExt) }

// checkDir checks that the cache directory is a directory (not a link)
// owned by the cache's user and writable by nobody else: "" if so, else
// why not.
func (c *Cache) checkDir() (why string, exists bool) {
	fi, err := os.Lstat(c.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		return fmt.Sprintf("the cache directory %s: %v", c.dir, err), true
	}
	return checkOwned(fi, c.uid, true), true
}

// checkOwned says what is wrong with a cache file or directory: not a
// regular file (or directory), owned by another user than uid, or
// writable by the group or others; "" when nothing is.
func checkOwned(fi fs.FileInfo, uid int, dir bool) string {
	switch {
	case dir && !fi.IsDir():
		return fi.Name() + " is not a directory"
	case !dir && !fi.Mode().IsRegular():
		return fi.Name() + " is not a regular file"
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Sprintf("%s is writable by others (mode %v)", fi.Name(), fi.Mode().Perm())
	}
	if owner, ok := ownerOf(fi); !ok || owner != int64(uid) {
		return fi.Name() + " is owned by another user"
	}
	return ""
}

// load reads the cache file of key: the tree, or nil and why not ("" when
// there is no file).
func (c *Cache) load(key, root string, patterns []Pattern) (*cacheTree, string) {
	if c.dir == "" {
		return nil, ""
	}
	if why, ok := c.checkDir(); !ok || why != "" {
		return nil, why
	}
	f, err := os.OpenFile(c.path(key), os.O_RDONLY|openCacheFlags, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ""
	}
	if err != nil {
		return nil, fmt.Sprintf("opening %s: %v", c.path(key), err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", c.path(key), err)
	}
	if why := checkOwned(fi, c.uid, false); why != "" {
		return nil, why
	}
	if fi.Size() > int64(cacheBounds.fileBytes) {
		return nil, fmt.Sprintf("%s has %d bytes, more than %d", c.path(key), fi.Size(), cacheBounds.fileBytes)
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Sprintf("reading %s: %v", c.path(key), err)
	}
	t, err := decodeTree(b, root, patterns, c.now())
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", c.path(key), err)
	}
	// Save removes the least recently used files first: mark this one
	// used (at most once an hour, to spare the writes).
	if now := c.now(); fi.ModTime().Before(now.Add(-time.Hour)) {
		_ = os.Chtimes(c.path(key), time.Time{}, now)
	}
	return t, ""
}

// Save writes the trees the scans of this cache recorded that differ from
// those they started from, each to a temporary file renamed over the
// cache file, then, if it made a new file or a file grew by more than
// 1 MiB, removes the least recently used cache files over the bounds. A tree over the bounds is not written (the next scan reads
// every directory). It creates the cache directory (mode 0700) if it is
// missing, and writes nothing into one that is a link, owned by another
// user or writable by others. It waits for a scan of this cache going on
// (scans update their trees in place).
func (c *Cache) Save() error {
	if c == nil || c.dir == "" {
		return nil
	}
	// Scans update their trees in place: none runs while they are
	// encoded.
	c.scanMu.Lock()
	defer c.scanMu.Unlock()
	c.mu.Lock()
	var keys []string
	for k := range c.dirty {
		keys = append(keys, k)
	}
	trees := map[string]*cacheTree{}
	for _, k := range keys {
		trees[k] = c.trees[k]
	}
	clear(c.dirty)
	c.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("globscan: creating the walk cache: %w", err)
	}
	if why, _ := c.checkDir(); why != "" {
		return fmt.Errorf("globscan: not writing the walk cache: %s", why)
	}
	slices.Sort(keys)
	var errs []error
	grew := false
	for _, k := range keys {
		var was int64 = -1
		if fi, err := os.Lstat(c.path(k)); err == nil {
			was = fi.Size()
		}
		n, err := c.write(k, trees[k])
		if err != nil {
			errs = append(errs, err)
		}
		grew = grew || was < 0 || n > was+evictGrowth
	}
	if grew {
		// A file more, or a larger one: the bounds may be exceeded.
		c.evict()
	}
	return errors.Join(errs...)
}

// evictGrowth is how much a cache file may grow before Save checks the
// bounds again.
const evictGrowth = 1 << 20

// write writes one tree to its cache file and returns its size.
func (c *Cache) write(key string, t *cacheTree) (int64, error) {
	b, err := encodeTree(t)
	if err != nil {
		// The file left is older, and still checked directory by directory.
		return 0, fmt.Errorf("globscan: the walk of %s is not cached: %w", t.root, err)
	}
	f, err := os.CreateTemp(c.dir, key+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("globscan: writing the walk cache: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), c.path(key))
	}
	if err != nil {
		os.Remove(f.Name())
		return 0, fmt.Errorf("globscan: writing the walk cache: %w", err)
	}
	return int64(len(b)), nil
}

// maxCacheListing bounds the entries of the cache directory evict looks at.
const maxCacheListing = 4 * MaxCacheFiles

// staleTemp is how old a temporary file must be to be taken for one left
// by a writer that died.
const staleTemp = 10 * time.Minute

// evict removes the least recently used cache files over MaxCacheFiles
// or MaxCacheBytes, and temporary files left by writers that died.
func (c *Cache) evict() {
	d, err := os.Open(c.dir)
	if err != nil {
		return
	}
	ents, _ := d.ReadDir(maxCacheListing)
	d.Close()
	type file struct {
		name string
		size int64
		mod  time.Time
	}
	var files []file
	now := c.now()
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		switch {
		case strings.Contains(e.Name(), ".tmp-"):
			if fi.ModTime().Before(now.Add(-staleTemp)) {
				os.Remove(filepath.Join(c.dir, e.Name()))
			}
		case strings.HasSuffix(e.Name(), cacheExt):
			files = append(files, file{e.Name(), fi.Size(), fi.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return b.mod.Compare(a.mod) })
	var total int64
	for i, f := range files {
		total += f.size
		if i >= cacheBounds.files || total > int64(cacheBounds.bytes) {
			os.Remove(filepath.Join(c.dir, f.name))
		}
	}
}
