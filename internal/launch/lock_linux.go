package launch

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cordon-sandbox/cordon/internal/subpath"

	"github.com/cordon-sandbox/cordon/internal/plan"
	"golang.org/x/sys/unix"
)

// workspaceLock coordinates the placeholders that bwrap creates on the host
// for missing protected paths. Every run holds a shared lock on a file per
// workspace (per repository when the workspace belongs to one: see
// plan.Plan.LockKey) from before its plan is built (buildLocked) until it
// ends; only a run that can take the lock exclusively (no other sandbox is
// using that workspace, nor building a plan that may have seen its
// placeholders) removes placeholders, because removing a mount point on
// the host would detach the read-only mount inside a sandbox still
// running, and make bwrap fail for a plan that binds it. A record file
// remembers placeholders, so a run that was killed with SIGKILL is cleaned
// up by the next one. The last run to leave also removes the lock file.
type workspaceLock struct {
	f      *os.File
	path   string // the lock file
	record string // the placeholder record
	key    string // what is locked: the workspace or its LockKey
	state  string // the state directory
}

// lockAttempts bounds how often acquireLock opens the lock file again
// because the last run to leave removed it meanwhile.
const lockAttempts = 100

// lockKey is what a run in workspace ws locks: the repository's common git
// directory when it has one (runs in its worktrees share it), else ws.
func lockKey(ws, common string) string {
	if common != "" {
		return common
	}
	return ws
}

// lockPath is the name, without its extension, of key's lock files in
// stateDir.
func lockPath(stateDir, key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(stateDir, "locks", hex.EncodeToString(sum[:12]))
}

// acquireLock takes the shared lock of key in stateDir. When no other run
// holds it, it first removes the placeholders that killed runs left
// behind, except those keep reports (nil: all of them). A lock file that
// the last run to leave removed while this one waited is opened again.
func acquireLock(stateDir, key string, keep func(string) bool) (*workspaceLock, error) {
	dir := filepath.Join(stateDir, "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating lock directory: %w", err)
	}
	base := lockPath(stateDir, key)
	for range lockAttempts {
		f, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, fmt.Errorf("opening workspace lock: %w", err)
		}
		l := &workspaceLock{f: f, path: base + ".lock", record: base + ".placeholders", key: key, state: stateDir}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil && l.current() {
			l.cleanup(keep)
		}
		if err := flock(f, unix.LOCK_SH); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking workspace: %w", err)
		}
		if l.current() {
			return l, nil
		}
		f.Close() // removed by the last run to leave: open the new one
	}
	return nil, fmt.Errorf("locking workspace: %s was replaced %d times in a row; remove it if no cordon is running", base+".lock", lockAttempts)
}

// flock is unix.Flock, retried when a signal interrupts the wait.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// current reports whether the lock's path still names the file it locked.
// Only a run holding the lock exclusively removes the file, so once a
// shared lock is held on the current file it stays current.
func (l *workspaceLock) current() bool {
	var held, named unix.Stat_t
	if unix.Fstat(int(l.f.Fd()), &held) != nil || unix.Lstat(l.path, &named) != nil {
		return false
	}
	return held.Dev == named.Dev && held.Ino == named.Ino
}

// holds reports whether l is the lock of key in stateDir, still held.
func (l *workspaceLock) holds(stateDir, key string) bool {
	return l != nil && l.f != nil && l.state == stateDir && l.key == key
}

// lockWorkspace holds pl's workspace lock for the run, records and creates
// its placeholders (see lockForRun and createPlaceholders).
func lockWorkspace(pl *plan.Plan, held *workspaceLock) (*workspaceLock, error) {
	l, err := lockForRun(pl, held)
	if err != nil || !locksWorkspace(pl) {
		return l, err
	}
	if err := createPlaceholders(pl); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// lockForRun holds pl's workspace lock for the run and records its
// placeholders, which the caller then creates (createPlaceholders) before
// bwrap starts and before it releases the lock. held is the lock taken
// before pl was built (buildLocked), or nil: then it is taken now, and the
// placeholders of a killed run that pl mounts stay (pl was built while
// they existed; removing them now would make bwrap fail), recorded again
// and removed when the last run ends.
func lockForRun(pl *plan.Plan, held *workspaceLock) (*workspaceLock, error) {
	if !locksWorkspace(pl) {
		return &workspaceLock{}, nil
	}
	l := held
	if key := lockKey(pl.Workspace, pl.LockKey); !l.holds(pl.StateDir, key) {
		var err error
		l, err = acquireLock(pl.StateDir, key, func(p string) bool { return mentions(pl.Argv, p) })
		if err != nil {
			return nil, err
		}
	}
	if err := record(l.record, pl.PlaceholderPaths()); err != nil {
		l.release()
		return nil, fmt.Errorf("recording placeholders: %w", err)
	}
	return l, nil
}

// locksWorkspace reports whether a run of pl locks its workspace and
// creates its placeholders: it needs a state directory and a workspace.
func locksWorkspace(pl *plan.Plan) bool { return pl.StateDir != "" && pl.Workspace != "" }

// record adds to the placeholder record the paths it does not hold yet:
// while runs overlap without end (a dev server, and an agent's commands
// beside it) no run cleans up, and the record would grow by every run's
// placeholders. Runs that record at the same moment may both add a path.
func record(file string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	held := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		held[sc.Text()] = true
	}
	var add strings.Builder
	for _, p := range paths {
		if !held[p] {
			held[p] = true
			add.WriteString(p + "\n")
		}
	}
	if add.Len() == 0 {
		return nil
	}
	_, err = f.WriteString(add.String())
	return err
}

// createPlaceholders creates the plan's missing protected paths as empty
// directories or files, as the user running cordon, before bwrap mounts
// over them. bwrap would create them too, but inside its user namespace
// root cannot write to a directory that another user owns (sudo cordon in
// a user's checkout). Each parent directory is opened once (placeholders
// share a few parents: the workspace, its .git); the last component is
// created with mkdirat or openat(O_EXCL|O_NOFOLLOW) relative to that
// descriptor, or linked there with its content (keepWithContentAt), or
// linked to the first placeholder of its kind (parentDirs.link), which
// never follows a symlink there.
//
// From parallelPlaceholdersFrom placeholders on, two goroutines create
// them, each the placeholders of half the parent directories: creating a
// file is the kernel's work (an inode allocated, 0.1 to 0.3 ms each on
// this VM's ext4, which looks past the recently freed inodes of its
// group), which the two cores then share, so a workspace of many nested
// repositories (two placeholders each) waits for it about half as long,
// for the same CPU time. A plan with a placeholder below another
// (created first) is created in order, by one.
func createPlaceholders(pl *plan.Plan) error {
	lists := splitPlaceholders(pl.Placeholders)
	if len(lists) == 1 {
		return createPlaceholderList(lists[0])
	}
	errs := make([]error, len(lists))
	var wg sync.WaitGroup
	for i, l := range lists {
		wg.Go(func() { errs[i] = createPlaceholderList(l) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // one line: the first list's first failure
		}
	}
	return nil
}

// parallelPlaceholdersFrom is the fewest placeholders that
// createPlaceholders shares between two goroutines: below it, starting
// the second costs about what it saves.
const parallelPlaceholdersFrom = 32

// splitPlaceholders returns phs as one list, or, from
// parallelPlaceholdersFrom on, as two lists that share no parent
// directory, each in the plan's order (splitByParent).
func splitPlaceholders(phs []plan.Placeholder) [][]plan.Placeholder {
	idx := splitByParent(len(phs), func(i int) string { return phs[i].Path })
	lists := make([][]plan.Placeholder, len(idx))
	for k, l := range idx {
		for _, i := range l {
			lists[k] = append(lists[k], phs[i])
		}
	}
	return lists
}

// splitByParent returns the indices of n paths (path(i) the i-th) as one
// list, or, from parallelPlaceholdersFrom on, as two lists that share no
// parent directory, each in order: the paths of every other parent
// directory (in the order of its first path) in each. A path below
// another keeps them in one list (created, or removed, in order).
func splitByParent(n int, path func(int) string) [][]int {
	all := func() [][]int {
		l := make([]int, n)
		for i := range l {
			l[i] = i
		}
		return [][]int{l}
	}
	if n < parallelPlaceholdersFrom {
		return all()
	}
	paths := make(map[string]bool, n)
	for i := range n {
		paths[filepath.Clean(path(i))] = true
	}
	index := map[string]int{} // parent directory -> its list
	lists := make([][]int, 2)
	for i := range n {
		dir := filepath.Dir(filepath.Clean(path(i)))
		for d := dir; ; d = filepath.Dir(d) {
			if paths[d] {
				return all()
			}
			if d == filepath.Dir(d) {
				break
			}
		}
		k, ok := index[dir]
		if !ok {
			k = len(index) % 2
			index[dir] = k
		}
		lists[k] = append(lists[k], i)
	}
	if len(lists[1]) == 0 {
		return lists[:1]
	}
	return lists
}

// createPlaceholderList creates the placeholders phs in order, opening
// each parent directory once.
func createPlaceholderList(phs []plan.Placeholder) error {
	dirs := newParentDirs(openDirFollowing)
	defer dirs.close()
	for _, ph := range phs {
		if err := createPlaceholder(dirs, ph); err != nil {
			return fmt.Errorf("creating placeholder %s for a missing protected path: %w", ph.Path, err)
		}
	}
	return nil
}

// createPlaceholder creates one placeholder under its parent's descriptor
// from dirs; one that exists already is left as it is.
func createPlaceholder(dirs *parentDirs, ph plan.Placeholder) error {
	var content []byte
	switch ph.Kind {
	case plan.PlaceholderDir, plan.PlaceholderFile:
	case plan.PlaceholderCommondir:
		// A commondir placeholder names its git directory (".") on the
		// host too: git run there meanwhile must read what it reads
		// inside. Nothing else is copied.
		content = []byte(".\n")
	default:
		return fmt.Errorf("unknown kind %q", ph.Kind)
	}
	dir, name := filepath.Split(ph.Path)
	if name == "" || !filepath.IsAbs(dir) {
		return fmt.Errorf("not an absolute path naming a file")
	}
	dfd, err := dirs.get(dir)
	if err != nil {
		return err
	}
	if ph.Kind != plan.PlaceholderDir {
		// A file placeholder is a link to the first of its kind, when
		// it can be: on ext4 each new inode costs a search past the
		// ones recently deleted, and a run in 200 repositories made and
		// removed 400 of them.
		if done, _ := dirs.link(ph.Kind, dfd, name); done {
			return nil // linked, or there already: left as it is
		}
	}
	switch {
	case len(content) > 0:
		var f *os.File
		if f, err = keepWithContentAt(dfd, ph.Path, content, 0o644); err == nil {
			dirs.keepSource(ph.Kind, int(f.Fd()))
			f.Close()
		}
	case ph.Kind == plan.PlaceholderDir:
		err = unix.Mkdirat(dfd, name, 0o755)
		if err != nil {
			err = &fs.PathError{Op: "mkdir", Path: ph.Path, Err: err}
		}
	default:
		var fd int
		fd, err = unix.Openat(dfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err == nil {
			dirs.keepSource(ph.Kind, fd)
			err = unix.Close(fd)
		}
		if err != nil {
			err = &fs.PathError{Op: "create", Path: ph.Path, Err: err}
		}
	}
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// parentDirs holds one descriptor per directory, opened by open at first
// use and kept until close: the placeholders of a plan share a few
// parents, and each open resolves the whole path again. It keeps at most
// maxParentDirs of them, closing the one used longest ago: a plan's
// placeholders come by parent directory, and a run in 200 nested
// repositories held 200 at once, which grew the process's descriptor
// table past its first 64 entries, and growing the table of a threaded
// process waits for an RCU grace period (6 to 19 ms a run on this VM,
// seen as expand_files in the off-CPU stacks).
type parentDirs struct {
	open func(dir string) (int, error)
	fds  map[string]int
	// used holds the directories of fds, the one used last at the end.
	used []string
	// sources are, by kind, a file placeholder created before (an O_PATH
	// descriptor), which the next of its kind links to (link).
	sources map[plan.PlaceholderKind]int
}

func newParentDirs(open func(dir string) (int, error)) *parentDirs {
	return &parentDirs{open: open, fds: map[string]int{}}
}

// keepSource keeps the file placeholder open as fd (created just now,
// holding what every placeholder of its kind holds) for the next ones of
// kind to link to.
func (d *parentDirs) keepSource(kind plan.PlaceholderKind, fd int) {
	dup, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	if d.sources == nil {
		d.sources = map[plan.PlaceholderKind]int{}
	}
	if old, ok := d.sources[kind]; ok {
		unix.Close(old)
	}
	d.sources[kind] = dup
}

// link links name in the directory dfd to the placeholder of kind kept
// by keepSource, never replacing what is there. done is true when it
// linked it or name exists (err EEXIST); false, for the caller to create
// the file, when there is no source or it cannot be linked there (another
// mount, too many links, the source removed meanwhile).
func (d *parentDirs) link(kind plan.PlaceholderKind, dfd int, name string) (done bool, err error) {
	src, ok := d.sources[kind]
	if !ok {
		return false, nil
	}
	err = unix.Linkat(src, "", dfd, name, unix.AT_EMPTY_PATH)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EPERM) {
		// AT_EMPTY_PATH wants CAP_DAC_READ_SEARCH: through /proc.
		err = unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", src), dfd, name, unix.AT_SYMLINK_FOLLOW)
	}
	switch {
	case err == nil, errors.Is(err, unix.EEXIST):
		return true, err
	}
	return false, nil
}

// get returns the descriptor of dir, opening it at first use. A failed
// open is not remembered: a later placeholder may create dir.
func (d *parentDirs) get(dir string) (int, error) {
	dir = filepath.Clean(dir)
	if fd, ok := d.fds[dir]; ok {
		if i := slices.Index(d.used, dir); i >= 0 && i < len(d.used)-1 {
			d.used = append(slices.Delete(d.used, i, i+1), dir)
		}
		return fd, nil
	}
	fd, err := d.open(dir)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	if len(d.used) >= maxParentDirs {
		old := d.used[0]
		unix.Close(d.fds[old])
		delete(d.fds, old)
		d.used = slices.Delete(d.used, 0, 1)
	}
	d.fds[dir] = fd
	d.used = append(d.used, dir)
	return fd, nil
}

// maxParentDirs is the most descriptors a parentDirs keeps open: two of
// them at once (createPlaceholders, cleanup) stay well inside the 64
// entries of a process's first descriptor table.
const maxParentDirs = 8

// close closes every descriptor d opened.
func (d *parentDirs) close() {
	for _, fd := range d.fds {
		unix.Close(fd)
	}
	clear(d.fds)
	d.used = d.used[:0]
	for _, fd := range d.sources {
		unix.Close(fd)
	}
	clear(d.sources)
}

// openDirFollowing opens the directory dir for creating in it, as
// os.OpenRoot does: the path's symlinks are followed (what the plan
// resolved), the names created under it never are.
func openDirFollowing(dir string) (int, error) {
	return unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// openDirNoSymlinks opens the directory dir as a path only, failing if a
// symlink appears anywhere in it (placeholder paths are resolved
// already).
func openDirNoSymlinks(dir string) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
}

// createKeeping creates the file p of mode perm (less the umask) holding
// content, unless p exists (fs.ErrExist), so that nobody ever sees it
// without its content (a run's journal, which other runs read), and
// returns it open for writing (a session's journal is rewritten in
// place). See keepWithContentAt.
func createKeeping(p string, content []byte, perm uint32) (*os.File, error) {
	dfd, err := openDirFollowing(filepath.Dir(p))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: filepath.Dir(p), Err: err}
	}
	defer unix.Close(dfd)
	return keepWithContentAt(dfd, p, content, perm)
}

// keepWithContentAt creates p in the directory dfd, p's parent, with
// content, and returns it open for writing, unless p exists
// (fs.ErrExist), so that nobody ever sees it without its content: the
// commondir placeholder, which another run's repository discovery and git
// on the host read meanwhile (empty, it is a broken repository). The file
// is written unnamed (O_TMPFILE) there and linked into place, which never
// replaces nor follows what is there. Where the file system has no
// O_TMPFILE it is created and then written.
func keepWithContentAt(dfd int, p string, content []byte, perm uint32) (*os.File, error) {
	name := filepath.Base(p)
	fd, err := unix.Openat(dfd, ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, perm)
	if err != nil {
		// No O_TMPFILE here (EOPNOTSUPP; EISDIR before Linux 3.11).
		return createThenWrite(dfd, p, name, content, perm)
	}
	f := os.NewFile(uintptr(fd), p)
	if _, err := f.Write(content); err != nil {
		f.Close()
		return nil, err
	}
	err = unix.Linkat(fd, "", dfd, name, unix.AT_EMPTY_PATH)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EPERM) {
		// AT_EMPTY_PATH wants CAP_DAC_READ_SEARCH: through /proc.
		err = unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), dfd, name, unix.AT_SYMLINK_FOLLOW)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EEXIST) {
			return nil, fs.ErrExist
		}
		return nil, &fs.PathError{Op: "link", Path: p, Err: err}
	}
	return f, nil
}

// createThenWrite creates name in the directory dfd (never through a
// link), writes content to it and returns it open for writing.
func createThenWrite(dfd int, p, name string, content []byte, perm uint32) (*os.File, error) {
	fd, err := unix.Openat(dfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if errors.Is(err, unix.EEXIST) {
		return nil, fs.ErrExist
	}
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	if _, err := f.Write(content); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// release removes placeholders and the lock file if no other run holds
// the lock, and drops it. It may be called more than once.
func (l *workspaceLock) release() {
	if l == nil || l.f == nil {
		return
	}
	if unix.Flock(int(l.f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil && l.current() {
		l.cleanup(nil)
		// Last: a run that opened the file meanwhile waits for this
		// lock, then finds the file gone and opens a new one.
		_ = os.Remove(l.path)
	}
	l.f.Close()
	l.f = nil
}

// cleanup removes recorded placeholders that are still empty, except those
// keep reports (they stay recorded). It runs only under the exclusive lock.
func (l *workspaceLock) cleanup(keep func(string) bool) {
	f, err := os.Open(l.record)
	if err != nil {
		return
	}
	var paths []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p := sc.Text(); filepath.IsAbs(p) {
			paths = append(paths, p)
		}
	}
	f.Close()
	// Deepest first, so nested placeholders go before their parents. From
	// parallelPlaceholdersFrom on, two goroutines remove them, each those
	// of half the parent directories (splitByParent): removing a file is
	// the kernel's work, which the two cores then share.
	var keeps []bool
	if keep != nil {
		keeps = make([]bool, len(paths))
		for i, p := range paths {
			keeps[i] = keep(p)
		}
	}
	lists := splitByParent(len(paths), func(i int) string { return paths[i] })
	var wg sync.WaitGroup
	for _, list := range lists {
		remove := func() {
			dirs := newParentDirs(openDirNoSymlinks)
			defer dirs.close()
			for _, i := range slices.Backward(list) {
				if keeps == nil || !keeps[i] {
					removeIfEmptyAt(dirs, paths[i])
				}
			}
		}
		if len(lists) == 1 {
			remove()
		} else {
			wg.Go(remove)
		}
	}
	wg.Wait()
	var kept []string
	for i, p := range paths {
		if keeps != nil && keeps[i] {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		_ = os.Remove(l.record)
		return
	}
	_ = os.WriteFile(l.record, []byte(strings.Join(kept, "\n")+"\n"), 0o600)
}

// mentions reports whether argv names p or a path below it.
func mentions(argv []string, p string) bool {
	for _, a := range argv {
		if subpath.Within(a, p) {
			return true
		}
	}
	return false
}

// removeIfEmpty removes an empty directory, an empty regular file, or a
// commondir placeholder that still holds only ".". The path is resolved
// by descriptor without following a symlink anywhere (placeholder paths
// are resolved already): a command that replaced a directory on the way
// (a nested repository's parent) by a symlink must not make the host
// remove an empty .git/hooks or commondir elsewhere; such a placeholder
// is left alone.
func removeIfEmpty(p string) {
	dirs := newParentDirs(openDirNoSymlinks)
	defer dirs.close()
	removeIfEmptyAt(dirs, p)
}

// removeIfEmptyAt is removeIfEmpty with p's parent opened through dirs
// (openDirNoSymlinks), once for all the placeholders it holds.
func removeIfEmptyAt(dirs *parentDirs, p string) {
	dir, name := filepath.Split(p)
	if name == "" {
		return
	}
	dfd, err := dirs.get(dir)
	if err != nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		_ = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR) // fails unless empty
	case st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size == 0:
		_ = unix.Unlinkat(dfd, name, 0)
	case st.Mode&unix.S_IFMT == unix.S_IFREG && name == "commondir" && st.Size == 2:
		fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		var b [3]byte
		n, _ := unix.Read(fd, b[:])
		unix.Close(fd)
		if string(b[:n]) == ".\n" {
			_ = unix.Unlinkat(dfd, name, 0)
		}
	}
}
