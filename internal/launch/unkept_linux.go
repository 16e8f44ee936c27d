package launch

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
)

// oNoFollow opens the last component itself, never what a link names.
const oNoFollow = unix.O_NOFOLLOW

// changeTime is fi's change time (ctime), which no one can set back.
func changeTime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Unix())
	}
	return time.Time{}
}

// Bounds of an unkept snapshot.
const (
	// maxUnkeptContent is the largest file whose content is kept, to be
	// put back if the run changes it (a path that is a file itself).
	maxUnkeptContent = 1 << 20
	// maxUnkeptEntries bounds the files looked at below one directory.
	maxUnkeptEntries = 10000
	// unkeptSlack is how long before the snapshot a file's change time
	// may lie and the file still count as the run's (coarse clocks).
	unkeptSlack = time.Second
)

// unkeptFile is one version of a file: what stat says and, for a small
// regular file, its content (nil otherwise).
type unkeptFile struct {
	mode    fs.FileMode
	size    int64
	mtime   time.Time
	ctime   time.Time
	content []byte
}

func (f unkeptFile) same(fi fs.FileInfo) bool {
	return f.mode == fi.Mode() && f.size == fi.Size() && f.mtime.Equal(fi.ModTime()) && f.ctime.Equal(changeTime(fi))
}

// unkeptSnapshot is what the paths that nothing keeps from the command
// (plan.Plan.Unkept) held before the run: each file, and each file below
// a directory (at most maxUnkeptEntries each; one not recorded counts as
// the run's by its change time).
type unkeptSnapshot struct {
	at    time.Time
	paths []string
	files map[string]unkeptFile
}

// snapshotUnkept records paths just before the command starts.
func snapshotUnkept(paths []string) *unkeptSnapshot {
	if len(paths) == 0 {
		return nil
	}
	s := &unkeptSnapshot{at: time.Now(), paths: paths, files: map[string]unkeptFile{}}
	for _, p := range paths {
		walkUnkept(p, func(q string, fi fs.FileInfo) {
			f := unkeptFile{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime(), ctime: changeTime(fi)}
			if q == p {
				f.content = readUnkept(q, fi)
			}
			s.files[q] = f
		})
	}
	return s
}

// walkUnkept calls fn with each file at or below p (at most
// maxUnkeptEntries) and its Lstat; it reports whether it saw them all.
func walkUnkept(p string, fn func(string, fs.FileInfo)) bool {
	n := 0
	err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if n++; n > maxUnkeptEntries {
			return fs.SkipAll
		}
		if fi, err := d.Info(); err == nil {
			fn(q, fi)
		}
		return nil
	})
	return err == nil && n <= maxUnkeptEntries
}

// readUnkept returns the content of the small regular file q, or nil.
func readUnkept(q string, fi fs.FileInfo) []byte {
	if !fi.Mode().IsRegular() || fi.Size() > maxUnkeptContent {
		return nil
	}
	h, err := os.OpenFile(q, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil
	}
	defer h.Close()
	b, err := io.ReadAll(io.LimitReader(h, maxUnkeptContent+1))
	if err != nil || int64(len(b)) != fi.Size() {
		return nil
	}
	return b
}

// check compares the paths with the snapshot after the run and disarms
// each file the run created or changed: a path that is a file, changed,
// is put back as it was, the run's version kept beside it as
// NAME.cordon-disarmed; any other is renamed to that name. It returns one
// finding each, and one for a directory too large to look at whole.
func (s *unkeptSnapshot) check(keep bool) []result.Planted {
	if s == nil {
		return nil
	}
	var out []result.Planted
	for _, p := range s.paths {
		all := walkUnkept(p, func(q string, fi fs.FileInfo) {
			was, had := s.files[q]
			if had && was.same(fi) || !had && changeTime(fi).Before(s.at.Add(-unkeptSlack)) {
				return
			}
			out = append(out, disarmUnkept(q, was, had, keep))
		})
		if !all {
			out = append(out, result.Planted{Path: p, Kind: "guarded", Rule: "planted:" + filepath.Base(p),
				Warning: fmt.Sprintf("mode permissive on the Landlock-only backend: %s has more than %d files, and only those were compared with what they were before the run: review it", p, maxUnkeptEntries)})
		}
	}
	return out
}

// disarmUnkept disarms the file q the run created (had false) or changed
// from was, unless keep.
func disarmUnkept(q string, was unkeptFile, had, keep bool) result.Planted {
	f := result.Planted{Path: q, Kind: "guarded", Rule: "planted:" + filepath.Base(q)}
	what := "created"
	if had {
		what = "changed"
	}
	say := func(how string) {
		f.Warning = fmt.Sprintf("mode permissive on the Landlock-only backend: the run %s %s, which runs code later or decides later runs: %s", what, q, how)
	}
	if keep {
		say("left in place (--no-disarm): review it")
		return f
	}
	dir, name := filepath.Split(q)
	r, err := os.OpenRoot(dir)
	if err != nil {
		say(fmt.Sprintf("could not disarm it (%v): review it", err))
		return f
	}
	defer r.Close()
	aside, err := asideName(r, name)
	if err == nil {
		err = r.Rename(name, aside)
	}
	if err != nil {
		say(fmt.Sprintf("could not disarm it (%v): review it", err))
		return f
	}
	f.Disarmed = true
	if !had || was.content == nil || !was.mode.IsRegular() {
		say("renamed to " + aside + ": review it")
		return f
	}
	// Put back what was there, as a new file of the same mode.
	h, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, was.mode.Perm())
	if err == nil {
		_, err = io.Copy(h, bytes.NewReader(was.content))
		if cerr := h.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		say(fmt.Sprintf("renamed to %s, and what was there before could not be put back (%v): review both", aside, err))
		return f
	}
	say("put back as it was before the run; the run's version is " + aside + ": review it")
	return f
}
