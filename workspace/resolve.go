package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
)

// maxRetries bounds how often one walk retries a component that changed
// between two system calls (a symbolic link replaced by a directory, or the
// reverse); past it the operation fails and the caller may try again.
const maxRetries = 64

// errChanged is returned when a path kept changing while it was resolved.
var errChanged = errors.New("the path changed while it was resolved; try again")

// walkPath is the one resolution of a path: starting at m's root
// descriptor, it opens each directory component of rest with
// openat(parent, name, O_DIRECTORY|O_NOFOLLOW), and looks the last one up
// with fstatat(parent, name, AT_SYMLINK_NOFOLLOW), so that no component is
// ever looked up by a path string. A component that is a symbolic link is
// read with readlinkat on its parent's descriptor and its target's
// components take its place in the walk (an absolute target restarts at the
// root when it lies inside m, and is refused otherwise; ".." pops the
// directory stack and is refused at the root). The walk stops at the first
// component that does not exist: the rest is what a write would create.
//
// The returned target holds the descriptors of every directory it walked
// through; the caller releases them with close.
func (f *FS) walkPath(op, user, abs string, m *mount, rest []string) (*target, error) {
	t := &target{m: m, user: user, dirs: []handle{m.fd}}
	fail := func(err error) (*target, error) {
		t.close()
		return nil, err
	}
	links, retries := 0, 0
	retry := func(c string) error {
		retries++
		if retries > maxRetries {
			return fmt.Errorf("%s %s: %w", strings.TrimPrefix(op, "file-"), quote(user), errChanged)
		}
		rest = append([]string{c}, rest...)
		return nil
	}
	// follow replaces the symbolic link c of the top directory by its
	// target's components; retry is set when c is no longer a link.
	follow := func(c string) error {
		links++
		if links > maxLinks {
			return fmt.Errorf("resolve %s: too many levels of symbolic links", quote(user))
		}
		link, err := readlinkAt(t.top(), c)
		if linkGone(err) {
			return retry(c) // replaced or removed since: look again
		}
		if linkRefused(err) {
			return &Violation{Op: op, Path: user, Resolved: t.joined(c), Kind: KindSymlink, Rule: m.Path, Detail: err.Error(), Workspace: f.workspace}
		}
		if err != nil {
			return f.wrapErr(op, user, m, &fs.PathError{Op: "readlinkat", Path: t.joined(c), Err: err})
		}
		if link == "" {
			return fmt.Errorf("resolve %s: empty symbolic link", quote(user))
		}
		if filepath.IsAbs(link) {
			lp := split(filepath.Clean(link))
			if !hasPrefix(lp, m.parts) {
				return &Violation{Op: op, Path: user, Resolved: link, Kind: KindSymlink, Rule: m.Path, Workspace: f.workspace}
			}
			t.popTo(0)
			rest = append(lp[len(m.parts):len(lp):len(lp)], rest...)
			return nil
		}
		rest = append(splitRel(link), rest...)
		return nil
	}
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		if c == ".." {
			if len(t.names) == 0 {
				return fail(&Violation{Op: op, Path: user, Resolved: abs, Kind: KindSymlink, Rule: m.Path, Workspace: f.workspace})
			}
			t.popTo(len(t.names) - 1)
			continue
		}
		if len(rest) == 0 {
			// The last component: looked up, not opened; the operation opens
			// it relative to its parent with O_NOFOLLOW.
			err := lstatAt(t.top(), c, &t.st)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				t.names = append(t.names, c)
				continue
			case err != nil:
				return fail(f.wrapErr(op, user, m, &fs.PathError{Op: "fstatat", Path: t.joined(c), Err: err}))
			case t.st.isLink():
				if err := follow(c); err != nil {
					return fail(err)
				}
				continue
			}
			t.names = append(t.names, c)
			t.exists = true
			continue
		}
		fd, err := openDirAt(t.top(), c)
		switch {
		case err == nil:
			t.names = append(t.names, c)
			t.dirs = append(t.dirs, fd)
			continue
		case errors.Is(err, fs.ErrNotExist):
			return t.missingFrom(c, rest, user)
		case notDirOrLink(err):
		default:
			return fail(f.wrapErr(op, user, m, &fs.PathError{Op: "openat", Path: t.joined(c), Err: err}))
		}
		var st sysStat
		err = lstatAt(t.top(), c, &st)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return t.missingFrom(c, rest, user)
		case err != nil:
			return fail(f.wrapErr(op, user, m, &fs.PathError{Op: "fstatat", Path: t.joined(c), Err: err}))
		case st.isLink():
			if err := follow(c); err != nil {
				return fail(err)
			}
		case st.isDir():
			if err := retry(c); err != nil { // a link became a directory
				return fail(err)
			}
		default:
			return fail(f.wrapErr(op, user, m, &fs.PathError{Op: "openat", Path: t.joined(c), Err: errNotDir}))
		}
	}
	if !t.exists && len(t.dirs) > len(t.names) {
		// The walk ended on a directory it holds (the root, a trailing "..",
		// a link to a directory): its parent becomes the top again and the
		// directory the last component.
		if len(t.names) == 0 {
			if err := fstat(t.dirs[0], &t.st); err != nil {
				return fail(f.wrapErr(op, user, m, err))
			}
		} else {
			n := len(t.names)
			closeHandle(t.dirs[n])
			t.dirs = t.dirs[:n]
			if err := lstatAt(t.top(), t.names[n-1], &t.st); err != nil {
				return fail(f.wrapErr(op, user, m, &fs.PathError{Op: "fstatat", Path: t.joined(""), Err: err}))
			}
			if !t.st.isDir() {
				// Replaced since it was opened.
				return fail(fmt.Errorf("%s %s: %w", strings.TrimPrefix(op, "file-"), quote(user), errChanged))
			}
		}
		t.exists = true
	}
	t.finish()
	return t, nil
}

// missingFrom ends a walk at the missing component c: c and rest are what a
// write would create. ".." below a missing directory cannot be resolved.
func (t *target) missingFrom(c string, rest []string, user string) (*target, error) {
	for _, r := range rest {
		if r == ".." {
			t.close()
			return nil, fmt.Errorf("resolve %s: %w", quote(user), os.ErrNotExist)
		}
	}
	t.names = append(t.names, c)
	t.names = append(t.names, rest...)
	t.finish()
	return t, nil
}

// finish sets the path strings of a finished walk.
func (t *target) finish() {
	t.rel = strings.Join(t.names, "/")
	if t.rel == "" {
		t.rel = "."
	}
	t.abs = path.Join(t.m.Path, t.rel)
}

// top is the descriptor of the deepest directory the walk holds.
func (t *target) top() handle { return t.dirs[len(t.dirs)-1] }

// popTo closes the directories held below the first n components.
func (t *target) popTo(n int) {
	for len(t.dirs) > n+1 {
		closeHandle(t.dirs[len(t.dirs)-1])
		t.dirs = t.dirs[:len(t.dirs)-1]
	}
	t.names = t.names[:n]
}

// joined is the walked path with c appended, for error messages.
func (t *target) joined(c string) string {
	p := strings.Join(t.names, "/")
	if c != "" {
		if p != "" {
			p += "/"
		}
		p += c
	}
	if p == "" {
		return "."
	}
	return p
}

// close releases the descriptors the target holds (not the root's).
func (t *target) close() {
	if t == nil {
		return
	}
	for _, fd := range t.dirs[1:] {
		closeHandle(fd)
	}
	t.dirs = t.dirs[:1]
}

// leaf returns the directory holding the last component and its name ("."
// for the root itself). Valid when the target exists, or when only its
// last component is missing.
func (t *target) leaf() (dirfd handle, name string) {
	if len(t.names) == 0 {
		return t.dirs[0], "."
	}
	return t.dirs[len(t.names)-1], t.names[len(t.names)-1]
}

// firstMissing is the index in names of the first component that did not
// exist during the walk, or len(names) when the target exists.
func (t *target) firstMissing() int {
	if t.exists {
		return len(t.names)
	}
	return len(t.dirs) - 1
}

// makeParents creates the missing directories above the last component,
// each with mkdirat in its parent's descriptor, and holds them: afterwards
// leaf is valid. When all is true the last component is created too.
func (t *target) makeParents(all bool) error {
	end := len(t.names) - 1
	if all {
		end = len(t.names)
	}
	for i := len(t.dirs) - 1; i < end; i++ {
		name := t.names[i]
		if err := mkdirAt(t.top(), name); err != nil && !errors.Is(err, fs.ErrExist) {
			return &fs.PathError{Op: "mkdirat", Path: strings.Join(t.names[:i+1], "/"), Err: err}
		}
		fd, err := openDirAt(t.top(), name)
		if err != nil {
			if notDirOrLink(err) {
				err = errChanged
			}
			return &fs.PathError{Op: "openat", Path: strings.Join(t.names[:i+1], "/"), Err: err}
		}
		t.dirs = append(t.dirs, fd)
	}
	return nil
}

// isGitDirAt reports whether the directory dirfd is one that git takes for
// a git directory: it holds HEAD and either objects or a commondir file
// (gitrepository-layout(5)). Entries are looked up with fstatat on the
// descriptor without following links, and a link counts as present: git
// follows it, possibly out of the root.
//
// For protection, a directory holding HEAD is taken for one already, even
// without objects: otherwise writing its config first and its objects
// after would make a git directory with a planted config (see also
// becomesGitDir).
func isGitDirAt(dirfd handle) bool {
	var st sysStat
	return lstatAt(dirfd, "HEAD", &st) == nil && !st.isDir()
}

// gitMarkers are the entries that, added to a directory, make git take it
// for a git directory.
// Its keys are folded (fold): "head" is HEAD where case is ignored.
var gitMarkers = map[string]bool{fold("HEAD"): true, "objects": true, "commondir": true}

// becomesGitDir reports whether creating name in the directory dirfd would
// turn a directory that already holds git configuration or hooks into a
// git directory (the other order of writes than isGitDirAt guards).
func becomesGitDir(dirfd handle, name string) bool {
	if !gitMarkers[fold(name)] || isGitDirAt(dirfd) {
		return false
	}
	var st sysStat
	for _, e := range policy.GitDirProtected {
		if lstatAt(dirfd, strings.TrimSuffix(e, "/"), &st) == nil {
			return true
		}
	}
	return false
}

// isGitDirBelow is isGitDirAt for the directory of components parts below
// m's root, opened component by component with O_NOFOLLOW. It serves the
// directories above a nested root (a workspace inside a writable home),
// which the walk of a path in that nested root does not hold.
func isGitDirBelow(m *mount, parts []string) bool {
	fd := m.fd
	for _, c := range parts {
		cfd, err := openDirAt(fd, c)
		if fd != m.fd {
			closeHandle(fd)
		}
		if err != nil {
			return false
		}
		fd = cfd
	}
	ok := isGitDirAt(fd)
	if fd != m.fd {
		closeHandle(fd)
	}
	return ok
}

// fileStat is an fs.FileInfo from lstatAt or fstat.
type fileStat struct {
	name string
	st   sysStat
}

func (s *fileStat) Name() string       { return s.name }
func (s *fileStat) Size() int64        { return s.st.size() }
func (s *fileStat) IsDir() bool        { return s.st.isDir() }
func (s *fileStat) Sys() any           { return s.st.sys() }
func (s *fileStat) ModTime() time.Time { return s.st.modTime() }
func (s *fileStat) Mode() fs.FileMode  { return s.st.mode() }
