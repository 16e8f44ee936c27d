//go:build unix

package gitrepo

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/gitconfig"
	"golang.org/x/sys/unix"
)

// Find returns the repository that git, started in the absolute directory
// dir, would use: the first ancestor (dir itself included) holding a
// .git that is a git directory or a file naming one. A .git directory
// that is not a git directory is passed over, as git does. It returns
// nil, nil when there is none up to the root or a file system boundary.
// An error means git would refuse what it found (a .git file that does
// not name a git directory, a commondir that names none) or that it
// could not be read; its text never quotes a file's content beyond the
// path a .git file or commondir names.
func Find(dir string) (*Repo, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("gitrepo: %q is not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	fd, err := openDir(unix.AT_FDCWD, dir, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	dev := st.Dev
	for range MaxDepth {
		r, found, err := atLevel(fd, dir)
		if err != nil || found {
			unix.Close(fd)
			return r, err
		}
		if dir == "/" {
			unix.Close(fd)
			return nil, nil
		}
		parent, err := openDir(fd, "..", 0)
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", filepath.Dir(dir), err)
		}
		fd, dir = parent, filepath.Dir(dir)
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		if st.Dev != dev {
			// git stops here too (GIT_DISCOVERY_ACROSS_FILESYSTEM unset).
			unix.Close(fd)
			return nil, nil
		}
	}
	unix.Close(fd)
	return nil, fmt.Errorf("%s: more than %d directories deep", dir, MaxDepth)
}

// atLevel looks at dfd/.git (dfd is the directory path): found is set when
// git would stop here, with the repository or the error it would give.
func atLevel(dfd int, path string) (*Repo, bool, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dfd, ".git", &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return nil, false, nil
	case err != nil:
		return nil, true, fmt.Errorf("%s/.git: %w", path, err)
	}
	dotGit := filepath.Join(path, ".git")
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		g, err := openDir(dfd, ".git", unix.O_NOFOLLOW)
		if err != nil {
			return nil, true, fmt.Errorf("%s: %w", dotGit, err)
		}
		defer unix.Close(g)
		if !isGitDir(g) {
			return nil, false, nil // git goes on upward (an empty placeholder, say)
		}
		r := &Repo{Top: path, DotGit: dotGit}
		if r.GitDir, err = fdPath(g, dotGit); err != nil {
			return nil, true, err
		}
		return r, true, r.finish(dfd, g, st)
	case unix.S_IFREG:
		target, err := readGitfile(dfd, dotGit)
		if err != nil {
			return nil, true, err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(path, target)
		}
		r := &Repo{Top: path, DotGit: dotGit, Gitfile: true}
		return r, true, r.open(dfd, target, st, fmt.Sprintf("%s names %s", dotGit, strconv.Quote(target)))
	case unix.S_IFLNK:
		// git follows it; a link is no tie, whatever it names.
		r := &Repo{Top: path, DotGit: dotGit, Gitfile: true, viaLink: true}
		if err := unix.Fstatat(dfd, ".git", &st, 0); err != nil {
			return nil, true, fmt.Errorf("%s: a symbolic link git cannot follow: %w", dotGit, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return nil, true, fmt.Errorf("%s is a symbolic link to a file: cordon reads a .git file only when it is one", dotGit)
		}
		return r, true, r.open(dfd, dotGit, st, dotGit+" (a symbolic link)")
	}
	return nil, false, nil // not a file nor a directory: git passes it over
}

// open opens the git directory target (what .git names, described by
// what) and fills r from it. st is .git's own stat.
func (r *Repo) open(dfd int, target string, st unix.Stat_t, what string) error {
	g, err := openDir(unix.AT_FDCWD, target, 0)
	if err != nil {
		return fmt.Errorf("%s, which cannot be opened as a directory: %w", what, err)
	}
	defer unix.Close(g)
	if !isGitDir(g) {
		return fmt.Errorf("%s, which is not a git directory (no HEAD with objects/ or commondir)", what)
	}
	if r.GitDir, err = fdPath(g, target); err != nil {
		return err
	}
	return r.finish(dfd, g, st)
}

// finish finds the common directory of the git directory g and how it is
// tied to the work tree (dfd is Top, dotGit .git's stat).
func (r *Repo) finish(dfd, g int, dotGit unix.Stat_t) error {
	r.CommonDir = r.GitDir
	cd, err := readSmall(g, "commondir", MaxSmallFile)
	switch {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return fmt.Errorf("%s/commondir: %w", r.GitDir, err)
	default:
		name := strings.TrimRight(string(cd), "\r\n")
		if name == "" || strings.ContainsRune(name, 0) {
			return fmt.Errorf("%s/commondir is empty or not a path", r.GitDir)
		}
		if !filepath.IsAbs(name) {
			name = filepath.Join(r.GitDir, name)
		}
		c, err := openDir(unix.AT_FDCWD, name, 0)
		if err != nil {
			return fmt.Errorf("%s/commondir names %s, which cannot be opened: %w", r.GitDir, strconv.Quote(name), err)
		}
		defer unix.Close(c)
		var ost unix.Stat_t
		if unix.Fstatat(c, "objects", &ost, 0) != nil || ost.Mode&unix.S_IFMT != unix.S_IFDIR {
			return fmt.Errorf("%s/commondir names %s, which has no objects/", r.GitDir, strconv.Quote(name))
		}
		if r.CommonDir, err = fdPath(c, name); err != nil {
			return err
		}
	}
	r.Link, r.Unlinked = r.link(dfd, g, dotGit)
	return nil
}

// link decides how the git directory g is tied to the work tree dfd.
func (r *Repo) link(dfd, g int, dotGit unix.Stat_t) (Link, string) {
	if r.viaLink {
		return LinkNone, fmt.Sprintf("%s is a symbolic link to %s", r.DotGit, r.GitDir)
	}
	if !r.Gitfile {
		if r.CommonDir == r.GitDir {
			return LinkDir, ""
		}
		return LinkNone, fmt.Sprintf("%s has a commondir naming %s, which a .git directory of a work tree does not have", r.DotGit, r.CommonDir)
	}
	if r.CommonDir != r.GitDir {
		// A linked worktree: COMMON/worktrees/NAME, whose gitdir file
		// names this .git.
		if filepath.Dir(r.GitDir) != filepath.Join(r.CommonDir, "worktrees") {
			return LinkNone, fmt.Sprintf("%s has a commondir but is not in %s/worktrees", r.GitDir, r.CommonDir)
		}
		back, err := readSmall(g, "gitdir", MaxSmallFile)
		if err != nil {
			return LinkNone, fmt.Sprintf("%s/gitdir cannot be read (%v)", r.GitDir, unwrap(err))
		}
		name := strings.TrimRight(string(back), "\r\n")
		if !filepath.IsAbs(name) {
			name = filepath.Join(r.GitDir, name)
		}
		if !sameFile(name, dotGit) {
			return LinkNone, fmt.Sprintf("%s/gitdir names %s, not %s", r.GitDir, strconv.Quote(name), r.DotGit)
		}
		return LinkWorktree, ""
	}
	// A submodule's git directory: its core.worktree names the work tree.
	wt, ok, err := coreWorktree(g)
	switch {
	case err != nil:
		return LinkNone, fmt.Sprintf("%s/config cannot be read (%v)", r.GitDir, unwrap(err))
	case !ok:
		return LinkNone, fmt.Sprintf("%s names no work tree (no core.worktree, not a linked worktree)", r.GitDir)
	}
	if !filepath.IsAbs(wt) {
		wt = filepath.Join(r.GitDir, wt)
	}
	var top unix.Stat_t
	if unix.Fstat(dfd, &top) != nil || !sameFile(wt, top) {
		return LinkNone, fmt.Sprintf("the core.worktree of %s names %s, not %s", r.GitDir, strconv.Quote(wt), r.Top)
	}
	return LinkSubmodule, ""
}

// isGitDir reports whether the directory g is a git directory as git
// decides: it holds HEAD (a file, or a link as old gits made it) and an
// object store or a commondir file. Git follows links here.
func isGitDir(g int) bool {
	var st unix.Stat_t
	if unix.Fstatat(g, "HEAD", &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	if m := st.Mode & unix.S_IFMT; m != unix.S_IFREG && m != unix.S_IFLNK {
		return false
	}
	if unix.Fstatat(g, "objects", &st, 0) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return true
	}
	return unix.Fstatat(g, "commondir", &st, 0) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
}

// readGitfile reads the .git file in dfd and returns the path its
// "gitdir: " line names, as git reads it.
func readGitfile(dfd int, dotGit string) (string, error) {
	b, err := readSmall(dfd, ".git", MaxSmallFile)
	if err != nil {
		return "", fmt.Errorf("%s: %w", dotGit, err)
	}
	s := strings.TrimRight(string(b), "\r\n")
	rest, ok := strings.CutPrefix(s, "gitdir: ")
	if !ok || rest == "" || strings.ContainsAny(rest, "\x00\n") {
		return "", fmt.Errorf("%s is not a gitfile (no \"gitdir: PATH\" line)", dotGit)
	}
	return rest, nil
}

// coreWorktree returns core.worktree from the config file of the git
// directory g (the last one, as git takes it); ok is false when unset.
func coreWorktree(g int) (string, bool, error) {
	b, err := readSmall(g, "config", MaxConfig)
	if errors.Is(err, unix.ENOENT) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	v, ok := worktreeValue(b)
	return v, ok, nil
}

// worktreeValue returns the last core.worktree of a config file, read as
// git reads it; a file git refuses (a bad line) sets nothing, as git
// then runs nothing there.
func worktreeValue(data []byte) (string, bool) {
	es, err := gitconfig.Parse(data)
	if err != nil {
		return "", false
	}
	v, found := "", false
	for _, e := range es {
		if e.Is("core", "worktree") {
			// A bare key has no path: git refuses it.
			v, found = e.Value, !e.Bare
		}
	}
	return v, found
}

// readSmall reads the regular file name in the directory dfd, not
// following a symbolic link and without blocking on a FIFO, up to max
// bytes (a larger one is an error).
func readSmall(dfd int, name string, max int64) ([]byte, error) {
	fd, err := retry(func() (int, error) {
		return unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, errors.New("a symbolic link, not followed")
		}
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return b, nil
}

// openDir opens name (relative to dfd) as a directory, for looking up
// entries only.
func openDir(dfd int, name string, flags int) (int, error) {
	return retry(func() (int, error) {
		return unix.Openat(dfd, name, dirOpenFlags|flags, 0)
	})
}

// fdPath returns the path of the open directory fd, with symbolic links
// resolved: the directory that was checked, not what name resolves to
// now. name is what was opened, for messages.
func fdPath(fd int, name string) (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !filepath.IsAbs(p) {
		// No /proc: resolve the name, and check it is still the same.
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		if p, err = filepath.EvalSymlinks(name); err != nil || !sameFile(p, st) {
			return "", fmt.Errorf("%s: cannot tell where it is", name)
		}
	}
	return p, nil
}

// sameFile reports whether path names the file st describes.
func sameFile(path string, st unix.Stat_t) bool {
	var o unix.Stat_t
	return unix.Stat(path, &o) == nil && o.Dev == st.Dev && o.Ino == st.Ino
}

// unwrap drops the *PathError around a syscall error, for messages that
// already name the path.
func unwrap(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// retry runs an open until it is not interrupted (a bounded number of
// times).
func retry(open func() (int, error)) (int, error) {
	for range 100 {
		fd, err := open()
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
	return -1, unix.EINTR
}
