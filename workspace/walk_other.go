//go:build !unix

package workspace

import (
	"io/fs"
	"path/filepath"
)

// dirRef is the directory of a walk entry; without openat it carries the
// mount, and files are opened by path through the os.Root.
type dirRef struct {
	m   *mount
	rel string
}

func (d *dirRef) acquire() {}
func (d *dirRef) release() {}

// walkFunc: see walk_unix.go.
type walkFunc func(rel string, typ fs.FileMode, parent *dirRef, name string) error

// walk visits the tree under start through the os.Root (fs.WalkDir).
func (f *FS) walk(m *mount, start string, fn walkFunc) error {
	return fs.WalkDir(m.root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start {
				return err
			}
			return nil
		}
		var parent *dirRef
		if p != start {
			parent = &dirRef{m: m, rel: filepath.ToSlash(filepath.Dir(p))}
		}
		return fn(p, d.Type(), parent, d.Name())
	})
}

// readRegularAt reads the regular file name of dir through the os.Root.
func readRegularAt(dir *dirRef, name string, buf []byte, limit int64) ([]byte, error) {
	rel := name
	if dir.rel != "." {
		rel = dir.rel + "/" + name
	}
	f := &FS{}
	t := &target{m: dir.m, rel: rel, abs: filepath.Join(dir.m.Path, rel), user: rel}
	file, fi, err := f.openRegular("file-read", t)
	if err != nil {
		return buf, err
	}
	defer file.Close()
	size := min(fi.Size(), limit) + 1
	if int64(cap(buf)) < size {
		buf = make([]byte, 0, size)
	}
	buf = buf[:0]
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, rerr := file.Read(buf[len(buf):min(int64(cap(buf)), limit)])
		buf = buf[:len(buf)+n]
		if rerr != nil {
			break
		}
	}
	return buf, nil
}
