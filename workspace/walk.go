package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
)

// dirRef is an open directory of a walk, shared by the walk and the Grep
// workers that open files in it; it is closed when the last user releases
// it. Its descriptor was opened through the root (the start of the walk) or
// with openat relative to a dirRef and O_NOFOLLOW, so everything reached
// through it is inside the root by descriptor: a path string is never
// resolved again.
type dirRef struct {
	f    *os.File
	fd   handle
	refs atomic.Int32
}

func (d *dirRef) acquire() { d.refs.Add(1) }

func (d *dirRef) release() {
	if d.refs.Add(-1) == 0 {
		d.f.Close()
	}
}

// walkFunc is called for each entry of a walk in lexical order (the start
// first, with parent nil): rel is the path relative to the mount, typ the
// entry's type bits (a hint from the directory listing: openers verify it by
// fstat), parent the directory holding it and name its base name. It returns
// nil, fs.SkipDir (for a directory: do not enter it) or an error that ends
// the walk.
type walkFunc func(rel string, typ fs.FileMode, parent *dirRef, name string) error

// walk visits the tree under the resolved, checked target t like
// fs.WalkDir, but by descriptor: the start directory is opened with
// openat(parent, name, O_DIRECTORY|O_NOFOLLOW) relative to the directory
// the walk of t holds (and must be the directory that walk looked up), and
// each directory below it with openat(dir, name, O_DIRECTORY|O_NOFOLLOW),
// so a symbolic link swapped in for a directory is refused by the kernel
// instead of being followed. fn sees each entry, by name, before it is
// entered or opened: that is where the deny rules are applied (deniedLeaf).
// When ign is not nil, each directory's .gitignore is read (by descriptor,
// from the listing) as the walk enters it, and ign holds the rules that
// apply to the entries fn sees. Unreadable directories are skipped. An
// error from the start itself is returned.
func (f *FS) walk(t *target, ign *ignoreStack, fn walkFunc) error {
	start := t.rel
	if !t.st.isDir() {
		err := fn(start, t.st.mode().Type(), nil, filepath.Base(start))
		if err == fs.SkipDir {
			err = nil
		}
		return err
	}
	dirfd, name := t.leaf()
	fd, err := openDirAt(dirfd, name)
	if err != nil {
		return &fs.PathError{Op: "openat", Path: start, Err: err}
	}
	var st sysStat
	if err := fstat(fd, &st); err != nil || !sameFile(&st, &t.st) {
		closeHandle(fd)
		return &fs.PathError{Op: "openat", Path: start, Err: errChanged}
	}
	m := t.m
	d := newDirRef(fd, filepath.Join(m.Path, start))
	defer d.release()
	if err := fn(start, fs.ModeDir, nil, filepath.Base(start)); err != nil {
		if err == fs.SkipDir {
			return nil
		}
		return err
	}
	err = f.walkDir(m, d, start, ign, fn)
	if err == fs.SkipDir {
		err = nil
	}
	return err
}

func newDirRef(fd handle, name string) *dirRef {
	d := &dirRef{f: dirFile(fd, name), fd: fd}
	d.refs.Store(1)
	return d
}

func (f *FS) walkDir(m *mount, d *dirRef, rel string, ign *ignoreStack, fn walkFunc) error {
	ents, err := d.f.ReadDir(-1)
	if err != nil && len(ents) == 0 {
		return nil
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	if ign != nil && ign.enter(d, rel, ents) {
		defer ign.leave()
	}
	for _, e := range ents {
		name := e.Name()
		if isTemp(name) {
			continue
		}
		child := name
		if rel != "." {
			child = rel + "/" + name
		}
		typ := e.Type()
		if err := fn(child, typ, d, name); err != nil {
			if err == fs.SkipDir {
				if typ.IsDir() {
					continue
				}
				return nil
			}
			return err
		}
		if !typ.IsDir() {
			continue
		}
		cfd, err := openDirAt(d.fd, name)
		if err != nil {
			continue // gone, replaced by a link or a file, or unreadable
		}
		c := newDirRef(cfd, filepath.Join(m.Path, child))
		err = f.walkDir(m, c, child, ign, fn)
		c.release()
		if err != nil {
			return err
		}
	}
	return nil
}

// readRegularAt reads the regular file name of the directory dirfd into buf (reusing its
// capacity), up to limit bytes. The file is opened with
// openat(O_NOFOLLOW|O_NONBLOCK), so a symbolic link is refused and a FIFO
// cannot block, and its type is verified by fstat on the open descriptor:
// anything but a regular file is refused.
func readRegularAt(dirfd handle, name string, buf []byte, limit int64) ([]byte, error) {
	fd, err := openFileAt(dirfd, name)
	if err != nil {
		return buf, err
	}
	defer closeHandle(fd)
	var st sysStat
	if err := fstat(fd, &st); err != nil {
		return buf, err
	}
	if !st.isReg() {
		return buf, errNotRegular
	}
	size := min(st.size(), limit) + 1
	if int64(cap(buf)) < size {
		buf = make([]byte, 0, size)
	}
	buf = buf[:0]
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := readHandle(fd, buf[len(buf):min(int64(cap(buf)), limit)])
		if err != nil || n <= 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	return buf, nil
}

var errNotRegular = errors.New("not a regular file")
