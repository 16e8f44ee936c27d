package gocacheprog

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// hashSize is the size of action and output IDs (SHA-256).
const hashSize = 32

// entrySize is the size of an action entry file:
// "v1 <hex id> <hex out> <size, 20 wide> <unix nanoseconds, 20 wide>\n".
const entrySize = 2 + 1 + 2*hashSize + 1 + 2*hashSize + 1 + 20 + 1 + 20 + 1

// The go command's cache expiry (cmd/go/internal/cache): the mtime of a
// used entry is refreshed at most once per mtimeInterval; a trim runs at
// most once per trimInterval and removes entries unused for trimLimit.
const (
	mtimeInterval = time.Hour
	trimInterval  = 24 * time.Hour
	trimLimit     = 5 * 24 * time.Hour
)

// tmpPrefix names the files Put writes before renaming them into place.
const tmpPrefix = "tmp-"

// Cache is a build cache made of two directories in the go command's own
// layout: Own, which it reads and writes, and Host, which it only reads.
type Cache struct {
	// Own is the sandbox's build cache directory.
	Own string
	// Host is the host's build cache directory, or "" for none. Nothing
	// is ever created, changed or removed in it.
	Host string

	now func() time.Time // time.Now unless a test sets it
}

// Entry is a cache hit.
type Entry struct {
	// OutputID is the SHA-256 of the output.
	OutputID []byte
	// Size is the output's size in bytes.
	Size int64
	// Time is when the entry was put.
	Time time.Time
	// DiskPath is the output file, in Own or in Host.
	DiskPath string
}

func (c *Cache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// Get looks actionID up in Own, then in Host. An entry counts only when its
// output file is there with the recorded size.
func (c *Cache) Get(actionID []byte) (Entry, bool) {
	if len(actionID) != hashSize {
		return Entry{}, false
	}
	if e, ok := lookup(c.Own, actionID); ok {
		c.markUsed(filepath.Join(c.Own, fileName(actionID, "a")))
		c.markUsed(e.DiskPath)
		return e, true
	}
	if c.Host != "" {
		return lookup(c.Host, actionID)
	}
	return Entry{}, false
}

// lookup reads the entry for actionID in dir. The output must be a
// regular file (not a link) of the recorded size.
func lookup(dir string, actionID []byte) (Entry, bool) {
	f, err := os.Open(filepath.Join(dir, fileName(actionID, "a")))
	if err != nil {
		return Entry{}, false
	}
	defer f.Close()
	var buf [entrySize + 1]byte // one more, to see a file that is too long
	n, err := io.ReadFull(f, buf[:])
	if n != entrySize || !errors.Is(err, io.ErrUnexpectedEOF) {
		return Entry{}, false
	}
	e, ok := parseEntry(buf[:entrySize], actionID)
	if !ok {
		return Entry{}, false
	}
	path := filepath.Join(dir, fileName(e.OutputID, "d"))
	fi, err := os.Lstat(path)
	if err != nil {
		return Entry{}, false
	}
	if fi.IsDir() {
		// An executable the go command cached for go run or go tool:
		// the directory holds the one file.
		ents, err := os.ReadDir(path)
		if err != nil || len(ents) != 1 {
			return Entry{}, false
		}
		path = filepath.Join(path, ents[0].Name())
		if fi, err = os.Lstat(path); err != nil {
			return Entry{}, false
		}
	}
	if !fi.Mode().IsRegular() || fi.Size() != e.Size {
		return Entry{}, false
	}
	e.DiskPath = path
	return e, true
}

// parseEntry parses an action entry (entrySize bytes, fixed columns) and
// checks that it is for actionID.
func parseEntry(b []byte, actionID []byte) (Entry, bool) {
	const (
		idAt   = 3
		outAt  = idAt + 2*hashSize + 1
		sizeAt = outAt + 2*hashSize + 1
		timeAt = sizeAt + 20 + 1
	)
	if len(b) != entrySize || string(b[:idAt]) != "v1 " || b[outAt-1] != ' ' || b[sizeAt-1] != ' ' || b[timeAt-1] != ' ' || b[entrySize-1] != '\n' {
		return Entry{}, false
	}
	id, err1 := hex.DecodeString(string(b[idAt : outAt-1]))
	out, err2 := hex.DecodeString(string(b[outAt : sizeAt-1]))
	if err1 != nil || err2 != nil || !bytes.Equal(id, actionID) {
		return Entry{}, false
	}
	size, err1 := strconv.ParseInt(strings.TrimLeft(string(b[sizeAt:timeAt-1]), " "), 10, 64)
	nanos, err2 := strconv.ParseInt(strings.TrimLeft(string(b[timeAt:entrySize-1]), " "), 10, 64)
	if err1 != nil || err2 != nil || size < 0 || nanos < 0 {
		return Entry{}, false
	}
	return Entry{OutputID: out, Size: size, Time: time.Unix(0, nanos)}, true
}

// Put stores body (size bytes, whose SHA-256 must be outputID) as the
// output of actionID in Own and returns the output file. Both files are
// written under a temporary name and renamed into place, so a concurrent
// reader sees the old file or the new one, never a part. Host is never
// written, even when it already holds the entry.
func (c *Cache) Put(actionID, outputID []byte, body io.Reader, size int64) (string, error) {
	if len(actionID) != hashSize || len(outputID) != hashSize {
		return "", fmt.Errorf("put: action and output IDs must be %d bytes, got %d and %d", hashSize, len(actionID), len(outputID))
	}
	out := filepath.Join(c.Own, fileName(outputID, "d"))
	h := sha256.New()
	err := writeAtomic(out, func(w io.Writer) error {
		n, err := io.Copy(io.MultiWriter(w, h), body)
		if err != nil {
			return fmt.Errorf("reading the body: %w", err)
		}
		if n != size {
			return fmt.Errorf("body is %d bytes, not %d", n, size)
		}
		if !bytes.Equal(h.Sum(nil), outputID) {
			return errors.New("body does not match its output ID")
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("put %x: %w", actionID, err)
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", actionID, outputID, size, c.clock().UnixNano())
	err = writeAtomic(filepath.Join(c.Own, fileName(actionID, "a")), func(w io.Writer) error {
		_, err := io.WriteString(w, entry)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("put %x: %w", actionID, err)
	}
	return out, nil
}

// writeAtomic writes path through fill into a temporary file beside it
// and renames that into place; on any error the temporary file is removed.
func writeAtomic(path string, fill func(io.Writer) error) error {
	dir := filepath.Dir(path)
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := filepath.Join(dir, tmpPrefix+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o777); err == nil {
			f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		}
	}
	if err != nil {
		return err
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// markUsed refreshes the mtime of a file in Own that was just used, at
// most once an hour, so Trim keeps what is in use.
func (c *Cache) markUsed(path string) {
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	if now := c.clock(); now.Sub(fi.ModTime()) >= mtimeInterval {
		os.Chtimes(path, now, now)
	}
}

// Trim removes from Own the entries unused for five days, and temporary
// files left by an interrupted Put, at most once a day, as the go command
// trims its own cache (both use Own/trim.txt to know when it last ran).
// Host is never trimmed: that is the host's go command's business.
func (c *Cache) Trim() {
	now := c.clock()
	stamp := filepath.Join(c.Own, "trim.txt")
	if b, err := os.ReadFile(stamp); err == nil {
		if t, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			if d := now.Sub(time.Unix(t, 0)); d < trimInterval && d > -mtimeInterval {
				return
			}
		}
	}
	if err := writeAtomic(stamp, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%d", now.Unix())
		return err
	}); err != nil {
		return
	}
	cutoff := now.Add(-trimLimit - mtimeInterval)
	tmpCutoff := now.Add(-trimInterval)
	for i := 0; i < 256; i++ {
		sub := filepath.Join(c.Own, fmt.Sprintf("%02x", i))
		names, err := readNames(sub)
		if err != nil {
			continue
		}
		for _, name := range names {
			isEntry := strings.HasSuffix(name, "-a") || strings.HasSuffix(name, "-d")
			isTmp := strings.HasPrefix(name, tmpPrefix)
			if !isEntry && !isTmp {
				continue
			}
			p := filepath.Join(sub, name)
			fi, err := os.Lstat(p)
			if err != nil {
				continue
			}
			if (isEntry && fi.ModTime().Before(cutoff)) || (isTmp && fi.ModTime().Before(tmpCutoff)) {
				if fi.IsDir() {
					os.RemoveAll(p)
				} else {
					os.Remove(p)
				}
			}
		}
	}
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// fileName is the path of an ID's file relative to a cache directory.
func fileName(id []byte, kind string) string {
	h := hex.EncodeToString(id)
	return filepath.Join(h[:2], h+"-"+kind)
}
