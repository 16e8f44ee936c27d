package launch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"unicode"

	"github.com/cordon-sandbox/cordon/internal/gitconfig"
	"github.com/cordon-sandbox/cordon/internal/monitor"
	"github.com/cordon-sandbox/cordon/internal/parallel"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/planted"
	"github.com/cordon-sandbox/cordon/internal/subpath"
	"golang.org/x/sys/unix"
)

// gitCopies are the private copies of the repositories' configs that the
// Landlock-only backend's supervisor serves a run instead of the host's
// files (monitor.Options.Redirects): git inside reads and writes its copy,
// the host's config stays as it is during the run (an editor's git status
// meanwhile sees no key the run set), and after it merge writes into the
// host's config only the safe keys the run changed (planted.MergeConfig).
type gitCopies struct {
	dir string // the copies' directory, in base
	// onTmpfs says that dir is in the user's own directory on a tmpfs
	// (copiesTmpfs), not in the state directory.
	onTmpfs bool
	list    []*gitCopy
}

// gitCopy is one config and its copy.
type gitCopy struct {
	gitDir   string // the git directory
	orig     []byte // the host's config when the run started
	file     *os.File
	dev, ino uint64 // the host's file
	// gdev and gino are the git directory's when the run started: the
	// merge writes only into that directory (a run that put another
	// repository's git directory, or a link to one, at the same path
	// would have the merge write there).
	gdev, gino uint64
	// copyDev and copyIno are the copy's: what a rename onto the config
	// reaches where bubblewrap binds the copy over it.
	copyDev, copyIno uint64
	// committed counts the monitor's writes into the copy.
	committed *atomic.Int64
}

// copyGitConfigs makes a private copy, in a new directory of the user's
// own directory on a tmpfs (copiesTmpfs) or else of stateDir, of
// the config of each of gitDirs that is a regular file (read through a
// descriptor of the git directory; a symbolic link is left read-only).
// With all (bubblewrap binds each of them: plan.Plan.GitConfigs), a
// config it cannot copy is an error. nil when there is none. tmpfsOK
// says whether the sandbox cannot reach a directory (nil: on the
// Landlock-only backend, none is taken: its rules keep only the state
// directory out of reach).
func copyGitConfigs(stateDir string, gitDirs []string, all bool, tmpfsOK func(dir string) bool) (*gitCopies, error) {
	if len(gitDirs) == 0 {
		return nil, nil
	}
	if stateDir == "" && all {
		return nil, errors.New("the private copies of the repositories' configs need a state directory")
	}
	g := &gitCopies{}
	if stateDir != "" {
		if err := g.makeDir(stateDir, tmpfsOK); err != nil {
			return nil, fmt.Errorf("a private copy of %s: %w", filepath.Join(gitDirs[0], "config"), err)
		}
	}
	// The copies are made a batch at a time, each batch's from
	// parallel.From on in two goroutines (a few system calls apiece), and
	// taken in order up to plan.MaxGitConfigs.
	for start := 0; start < len(gitDirs) && len(g.list) < plan.MaxGitConfigs; {
		batch := gitDirs[start:min(len(gitDirs), start+plan.MaxGitConfigs-len(g.list))]
		start += len(batch)
		made := make([]*gitCopy, len(batch))
		errs := make([]error, len(batch))
		parallel.Each(len(batch), func(i int) { made[i], errs[i] = g.copyOne(batch[i]) })
		for i, c := range made {
			switch {
			case c != nil:
				g.list = append(g.list, c)
			case errs[i] != nil && all:
				for _, c := range made[i+1:] {
					if c != nil {
						c.file.Close()
					}
				}
				g.close()
				return nil, fmt.Errorf("a private copy of %s: %w", filepath.Join(batch[i], "config"), errs[i])
			}
		}
	}
	if len(g.list) == 0 {
		g.close()
		return nil, nil
	}
	return g, nil
}

// copyOne copies the config of the git directory d into g's directory:
// nil and the error when d has none that is a regular file or the copy
// cannot be made, nil and no error without a directory of copies (no
// state directory, on the Landlock-only backend).
func (g *gitCopies) copyOne(d string) (*gitCopy, error) {
	data, st, err := readConfig(d)
	if err != nil || g.dir == "" {
		return nil, err
	}
	f, err := os.CreateTemp(g.dir, "config-")
	if err != nil {
		return nil, err
	}
	var cst, gst syscall.Stat_t
	if _, err = f.Write(data); err == nil {
		err = syscall.Fstat(int(f.Fd()), &cst)
	}
	if err == nil {
		err = syscall.Stat(d, &gst)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &gitCopy{gitDir: d, orig: data, file: f, dev: st.Dev, ino: st.Ino, copyDev: cst.Dev, copyIno: cst.Ino, gdev: gst.Dev, gino: gst.Ino}, nil
}

// makeDir makes the run's directory of copies, on a tmpfs when
// copiesTmpfs finds one that tmpfsOK accepts (no inode of the state
// directory's file system allocated: see docs/performance.md, "Nested
// repositories"), else in stateDir, after sweeping both of killed runs'
// directories.
func (g *gitCopies) makeDir(stateDir string, tmpfsOK func(string) bool) error {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return err
	}
	sweepGitCopies(stateDir)
	pattern := fmt.Sprintf("%s%d-", gitCopiesPrefix, os.Getpid())
	// A run that ends meanwhile removes the tmpfs directory when it is
	// empty (copiesTmpfs makes it again): bounded, then the state
	// directory.
	for range 3 {
		if tmpfsOK == nil {
			break
		}
		base := copiesTmpfs(stateDir, tmpfsOK)
		if base == "" {
			break
		}
		sweepGitCopies(base)
		dir, err := os.MkdirTemp(base, pattern)
		if err == nil {
			g.dir, g.onTmpfs = dir, true
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	dir, err := os.MkdirTemp(stateDir, pattern)
	if err != nil {
		return err
	}
	g.dir = dir
	return nil
}

// copiesTmpfs returns the user's own directory for the copies of runs
// with state directory stateDir on a tmpfs, making it, or "" when there
// is none (or none that ok accepts): cordon-UID-HASH (HASH of stateDir, so that runs with another
// state directory do not sweep these) in $XDG_RUNTIME_DIR when that is a
// tmpfs directory of the user's own that no one else may enter, else in
// /dev/shm when that is a sticky tmpfs directory (no other user can move
// or remove a directory of this user's there). The directory must be
// this user's, 0700 and no symbolic link, or it is not used (another
// user made it first). The copies never hold a secret, only the
// repositories' configs, and the sandbox reaches them only through the
// descriptors bubblewrap binds (plan.Plan.GitConfigs).
func copiesTmpfs(stateDir string, ok func(dir string) bool) string {
	uid := os.Geteuid()
	sum := sha256.Sum256([]byte(stateDir))
	name := fmt.Sprintf("cordon-%d-%s", uid, hex.EncodeToString(sum[:8]))
	var bases []string
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) && tmpfsDir(x, uid, false) {
		bases = append(bases, x)
	}
	if tmpfsDir("/dev/shm", uid, true) {
		bases = append(bases, "/dev/shm")
	}
	for _, b := range bases {
		d := filepath.Join(b, name)
		if !ok(d) {
			continue
		}
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			continue
		}
		var st unix.Stat_t
		if unix.Lstat(d, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == uid && st.Mode&0o7777 == 0o700 {
			return d
		}
	}
	return ""
}

// tmpfsDir reports whether dir is a directory (no symbolic link) on a
// tmpfs: with shared, one with the sticky bit; else the user's own,
// which no one else may enter.
func tmpfsDir(dir string, uid int, shared bool) bool {
	var fs unix.Statfs_t
	var st unix.Stat_t
	if unix.Statfs(dir, &fs) != nil || fs.Type != unix.TMPFS_MAGIC || unix.Lstat(dir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	if shared {
		return st.Mode&unix.S_ISVTX != 0
	}
	return int(st.Uid) == uid && st.Mode&0o077 == 0
}

// gitCopiesPrefix starts the name of a run's directory of copies in the
// state directory, followed by the pid of the cordon that made it.
const gitCopiesPrefix = "gitconfig-"

// sweepGitCopies removes the directories of copies that runs killed with
// SIGKILL left in dir, the state directory or the tmpfs one (a killed
// cordon cannot remove its own): those whose cordon is gone. A pid taken
// again by another process keeps its directory until that one ends too.
func sweepGitCopies(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), gitCopiesPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// readConfig reads the config of the git directory dir through a
// descriptor of dir, when it is a regular file of at most
// gitconfig.MaxFile bytes.
func readConfig(dir string) ([]byte, *syscall.Stat_t, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	fi, err := r.Lstat("config")
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, errors.New("not a regular file")
	}
	f, err := r.OpenFile("config", os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err = f.Stat()
	if err != nil {
		return nil, nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() || fi.Size() > gitconfig.MaxFile {
		return nil, nil, errors.New("not a regular file of at most 1 MiB")
	}
	data, err := io.ReadAll(io.LimitReader(f, gitconfig.MaxFile+1))
	if err != nil {
		return nil, nil, err
	}
	return data, st, nil
}

// redirects are the copies as the monitor takes them: identified by the
// host's file (the Landlock-only backend's supervisor reaches it), or with
// bound by the copy's (bubblewrap binds the copy over it), in order.
func (g *gitCopies) redirects(bound bool) []monitor.Redirect {
	if g == nil {
		return nil
	}
	out := make([]monitor.Redirect, len(g.list))
	for i, c := range g.list {
		out[i] = monitor.Redirect{Dev: c.dev, Ino: c.ino, Copy: c.file, Committed: new(atomic.Int64)}
		if bound {
			out[i].Dev, out[i].Ino = c.copyDev, c.copyIno
		}
		c.committed = out[i].Committed
	}
	return out
}

// served reports whether the config file is one with a copy that the
// monitor wrote a git commit into: the lock it removed is no refused
// write.
func (g *gitCopies) served(config string) bool {
	if g == nil {
		return false
	}
	for _, c := range g.list {
		if filepath.Join(c.gitDir, "config") == config && c.committed != nil && c.committed.Load() > 0 {
			return true
		}
	}
	return false
}

// merge writes into each host config what the run changed in its copy and
// MergeConfig takes, with git's own lock (config.lock created afresh in the
// git directory, then renamed onto config, all through a descriptor of the
// git directory), and returns what to say: one note per config whose keys
// were written, one warning per key refused and per config it could not
// write; refused counts the changes not written.
//
// unchecked says that the check for planted files did not see everything
// the run made: a repository a merged key could name may then hold hooks
// nobody looked at, so nothing is merged.
func (g *gitCopies) merge(workspace string, writable []string, unchecked bool) (notes, warnings []string, refused int) {
	if g == nil {
		return nil, nil, 0
	}
	for _, c := range g.list {
		name := filepath.Join(c.gitDir, "config")
		if rel, ok := subpath.Rel(workspace, name); ok {
			name = rel
		}
		data, err := io.ReadAll(io.NewSectionReader(c.file, 0, gitconfig.MaxFile+1))
		if err != nil || bytes.Equal(data, c.orig) {
			continue
		}
		var applied []string
		out, changes, err := func() ([]byte, []planted.ConfigChange, error) {
			if unchecked {
				return nil, nil, errors.New("the check for planted files did not see everything the run made")
			}
			var gst syscall.Stat_t
			if err := syscall.Stat(c.gitDir, &gst); err != nil {
				return nil, nil, err
			}
			if gst.Dev != c.gdev || gst.Ino != c.gino {
				return nil, nil, errors.New("its git directory is not the one the run started with (moved, or replaced by another or a link to one)")
			}
			host, _, err := readConfig(c.gitDir)
			if err != nil {
				return nil, nil, err
			}
			base := c.gitDir
			if filepath.Base(base) == ".git" {
				base = filepath.Dir(base)
			}
			out, changes, err := planted.MergeConfig(c.orig, data, host, base, func(p string) bool {
				return slices.ContainsFunc(writable, func(root string) bool { return subpath.Within(p, root) })
			})
			if err != nil || bytes.Equal(out, host) {
				return nil, changes, err
			}
			return out, changes, nil
		}()
		for _, ch := range changes {
			key := printableKey(ch.Key)
			if ch.Applied {
				applied = append(applied, key)
				continue
			}
			refused++
			what := "set " + key
			if len(ch.Values) == 0 {
				what = "removed " + key
			}
			why := "it is not among the keys cordon writes back (user, remotes, branch tracking, submodules)"
			if strings.HasPrefix(ch.Rule, "planted:") {
				why = "a key that runs a program or loads more configuration (" + ch.Rule + ")"
			}
			if strings.HasPrefix(ch.Rule, "local:") {
				why = "it names a repository the run could write, whose hooks git runs when it pushes there"
			}
			warnings = append(warnings, fmt.Sprintf("git config: the run %s in %s; not written to the host's config: %s; set it outside the sandbox if you mean it", what, name, why))
		}
		if err == nil && out != nil {
			err = writeConfig(c.gitDir, out)
		}
		if err != nil {
			refused += max(len(applied), 1)
			warnings = append(warnings, fmt.Sprintf("git config: the run's changes to %s were not written to the host's config: %v; make them outside the sandbox", name, err))
			continue
		}
		if len(applied) > 0 {
			notes = append(notes, fmt.Sprintf("git config: the run's %s written to %s on the host", strings.Join(applied, ", "), name))
		}
	}
	return notes, warnings, refused
}

// printableKey is a key as a line may show it: quoted when it holds a
// control character (a subsection the run chose could otherwise move the
// terminal's cursor and hide the lines before it).
func printableKey(k string) string {
	if strings.ContainsFunc(k, unicode.IsControl) {
		return strconv.Quote(k)
	}
	return k
}

// writeConfig replaces the config of the git directory dir with data as
// git does: config.lock created exclusively (a git on the host holding it
// makes this fail), with the config's mode, then renamed onto config.
func writeConfig(dir string, data []byte) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	mode := fs.FileMode(0o644)
	if fi, err := r.Lstat("config"); err == nil {
		mode = fi.Mode().Perm()
	}
	f, err := r.OpenFile("config.lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename("config.lock", "config")
	}
	if err != nil {
		_ = r.Remove("config.lock")
	}
	return err
}

// close closes and removes the copies, and the tmpfs directory that held
// them when no other run's copies are there (it fails unless empty).
func (g *gitCopies) close() {
	if g == nil {
		return
	}
	for _, c := range g.list {
		c.file.Close()
	}
	if g.dir != "" {
		_ = os.RemoveAll(g.dir)
		if g.onTmpfs {
			_ = os.Remove(filepath.Dir(g.dir))
		}
		g.dir = ""
	}
}
