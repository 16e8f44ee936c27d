package planted

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/internal/parallel"
	"github.com/cordon-sandbox/cordon/policy"
)

// Bounds of a Snapshot.
const (
	// MaxSnapshotDirs is the most git directories a Snapshot records;
	// the others are remembered by path only and not checked after the
	// run (Report.Incomplete says so).
	MaxSnapshotDirs = 4096
	// MaxConfigSize is the largest config file recorded or examined.
	MaxConfigSize = 1 << 20
	// maxHooks is the most entries of one hooks directory recorded.
	maxHooks = 4096
	// maxSmall bounds commondir and gitlink files.
	maxSmall = 4096
)

// Before is what existed before the run: the git directories given to
// Snapshot with their config files, commondir and hooks, and the
// protected names.
type Before struct {
	at    time.Time
	dirs  map[string]*dirState // recorded git directories
	known map[string]bool      // every git directory given, recorded or not
	names map[string]bool
	// nameFiles are the files of the protected names (a name itself, or
	// the files below a protected directory, at most maxNameEntries each).
	nameFiles map[string]fileState
	// gitHooks and gitConfigs are where else git looks (see Git): the
	// hooks directories and the included config files (nil: absent).
	gitHooks   map[string]*dirState
	gitConfigs map[string]*fileState
	// gitKnown are those of them that existed, other than links.
	gitKnown map[string]bool
	// gitIDs are their stat fields (nil: absent), by which Check trusts
	// one kept read-only, or a placeholder of the run's, only while it is
	// the same file (see gitLookSame).
	gitIDs map[string]*fileState
	// since: made by Since, knowing nothing but its time.
	since bool
	// venvs and venvFiles are the virtual environments WithVenvs found
	// and their watched files (nil: not recorded).
	venvs     map[string]bool
	venvFiles map[string]fileState
	// ids are the inodes of the git directories and names given to
	// Snapshot (see replaced).
	ids map[string]uint64
	// nameDirs are the directories recordName listed; venvRootsGiven the
	// roots WithVenvs searched; partial says that a bound left something
	// unrecorded (see Reads).
	nameDirs       []string
	venvRootsGiven []string
	partial        bool
}

// dirState is one git directory as Snapshot found it.
type dirState struct {
	configs   map[string]*fileState // "config", "config.worktree"
	commondir *fileState
	hooks     map[string]fileState  // by name; nil when not recorded
	hooksLink *fileState            // hooks itself is a symbolic link
	todos     map[string]*fileState // the to-do lists (todoFiles) that exist
	// keptOnly: the run's mounts keep the directory's config, hooks and
	// commondir read-only (SnapshotKeeping): Check looks only at its to-do
	// lists while each of those paths is what it was (entries).
	keptOnly bool
	// entries are the stat fields of each entry of
	// policy.GitDirProtected, by name; an absent one is not in the map;
	// self is the directory's own (see keptEntriesChanged).
	entries map[string]fileState
	self    *fileState
}

// fileState identifies a version of a file: its stat fields and, for
// small files, its content (nil when too large or unreadable).
type fileState struct {
	mode    fs.FileMode
	size    int64
	mtime   time.Time
	ctime   time.Time
	ino     uint64
	content []byte
}

// statOf records fi's identifying fields.
func statOf(fi fs.FileInfo) fileState {
	s := fileState{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime()}
	s.ino, s.ctime = inodeCtime(fi)
	return s
}

// same reports whether fi is, as far as stat tells, this version.
func (s *fileState) same(fi fs.FileInfo) bool {
	o := statOf(fi)
	return s.mode == o.mode && s.size == o.size && s.mtime.Equal(o.mtime) && s.ctime.Equal(o.ctime) && s.ino == o.ino
}

// Since is a Before that knows nothing but a time: Check then takes every
// git directory, hook, key and name changed after t for the run's. It is
// for a run that was killed before it could check (see the launcher's
// journal), where the user may have changed things too since: report what
// it finds, with KeepArmed.
func Since(t time.Time) *Before {
	b := newBefore(t)
	b.since = true
	return b
}

func newBefore(t time.Time) *Before {
	return &Before{at: t, dirs: map[string]*dirState{}, known: map[string]bool{}, names: map[string]bool{}, nameFiles: map[string]fileState{},
		gitHooks: map[string]*dirState{}, gitConfigs: map[string]*fileState{}, gitKnown: map[string]bool{}, gitIDs: map[string]*fileState{}}
}

// recordName records the files of the protected name n.
func (b *Before) recordName(n string) {
	count := 0
	_ = filepath.WalkDir(n, func(p string, d fs.DirEntry, err error) error {
		if err != nil || count >= maxNameEntries {
			b.partial = true
			return fs.SkipDir
		}
		if d.IsDir() {
			b.nameDirs = append(b.nameDirs, p)
			return nil
		}
		if fi, err := d.Info(); err == nil {
			b.nameFiles[p] = statOf(fi)
			count++
		}
		return nil
	})
}

// Snapshot records, just before the command starts, the git directories
// that exist (gitDirs, absolute) and the existing protected names (names,
// absolute), so that Check reports only what the run planted. It records
// each git directory's config and config.worktree (up to MaxConfigSize),
// commondir, and hooks (name, mode, size, times, inode); at most
// MaxSnapshotDirs directories are recorded. It never fails: what it cannot
// read is recorded as absent or unreadable.
func Snapshot(gitDirs, names []string) *Before {
	return SnapshotKeeping(gitDirs, names, nil)
}

// SnapshotKeeping is Snapshot for a run whose mounts keep the git
// directories in kept read-only (the git directories of
// Options.KeptReadOnly): Check looks in such a directory only at its to-do
// lists while its config, hooks and commondir are the files they were
// (recordKept): a mount goes away when another process removes or
// renames the path it stands on, and what the run then wrote there is
// found by comparing with the configs recorded, and by when the hooks
// changed. A kept directory that Check finds replaced (another inode at
// its path) is examined whole, everything in it counted as the run's, as
// in a directory that became a git directory during the run.
func SnapshotKeeping(gitDirs, names, kept []string) *Before {
	b := newBefore(time.Now())
	keep := make(map[string]bool, len(kept))
	for _, k := range kept {
		keep[filepath.Clean(k)] = true
	}
	for _, n := range names {
		n = filepath.Clean(n)
		b.names[n] = true
		b.recordName(n)
	}
	b.recordIDs(names)
	b.recordIDs(gitDirs)
	// The directories to record, in order, each read on its own: from
	// parallel.From of them (nested repositories) in two goroutines.
	var todo []string
	for _, d := range gitDirs {
		d = filepath.Clean(d)
		if b.known[d] {
			continue
		}
		b.known[d] = true
		if len(todo) < MaxSnapshotDirs {
			todo = append(todo, d)
		}
	}
	states := make([]*dirState, len(todo))
	parallel.Each(len(todo), func(i int) {
		if keep[todo[i]] {
			states[i] = recordKept(todo[i])
		} else {
			states[i] = recordDir(todo[i])
		}
	})
	for i, d := range todo {
		b.dirs[d] = states[i]
	}
	return b
}

// recordKept reads what Check needs of a git directory the run's mounts
// keep read-only: its to-do lists, and, should one of its kept files be
// replaced during the run (keptEntriesChanged), its configs and commondir
// to compare with; not its hooks (a listing and a stat each): a replaced
// hooks directory's hooks are judged by when they changed.
func recordKept(d string) *dirState {
	s := &dirState{keptOnly: true, configs: map[string]*fileState{}}
	s.recordTodos(d)
	s.self = statPath(d)
	r, err := os.OpenRoot(d)
	if err != nil {
		return s // no entries: trusted as kept (a directory gone is found replaced)
	}
	defer r.Close()
	s.entries = map[string]fileState{}
	for _, e := range policy.GitDirProtected {
		name := strings.TrimSuffix(e, "/")
		fi, err := r.Lstat(name)
		if err != nil {
			continue
		}
		st := statOf(fi)
		s.entries[name] = st
		max := int64(MaxConfigSize)
		switch name {
		case "commondir":
			max = maxSmall
		case "config", "config.worktree":
		default:
			continue
		}
		f := st
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if t, err := r.Readlink(name); err == nil {
				f.content = []byte(t)
			}
		case fi.Mode().IsRegular() && fi.Size() <= max:
			if b, err := readSmall(r, name, max+1); err == nil && int64(len(b)) <= max {
				f.content = b
			}
		}
		if name == "commondir" {
			s.commondir = &f
		} else {
			s.configs[name] = &f
		}
	}
	return s
}

// recordDir reads one git directory's state.
func recordDir(d string) *dirState {
	s := &dirState{configs: map[string]*fileState{}}
	for _, name := range configFiles {
		if f := recordFile(filepath.Join(d, name), MaxConfigSize); f != nil {
			s.configs[name] = f
		}
	}
	s.commondir = recordFile(filepath.Join(d, "commondir"), maxSmall)
	s.recordHooks(filepath.Join(d, "hooks"))
	s.recordTodos(d)
	return s
}

// recordHooks records the hooks directory hooks in s: its entries, or
// the link it is (hooks stays nil when there are too many entries).
func (s *dirState) recordHooks(hooks string) {
	fi, err := os.Lstat(hooks)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		s.hooksLink = recordFile(hooks, maxSmall)
		s.hooks = map[string]fileState{}
	case err == nil && fi.IsDir():
		ents, err := readDirNames(hooks, maxHooks+1)
		if err != nil || len(ents) > maxHooks {
			return // hooks not recorded: Check says so
		}
		s.hooks = map[string]fileState{}
		for _, n := range ents {
			if hi, err := os.Lstat(filepath.Join(hooks, n)); err == nil {
				s.hooks[n] = statOf(hi)
			}
		}
	default:
		s.hooks = map[string]fileState{}
	}
}

// Git records, as Snapshot records a git directory's hooks and config,
// the hooks directories and included config files where git also looks
// (see policy.Policy.GitLooks): Check examines them as it does a git
// directory's. A Before made by Since records nothing of them: what
// changed there after its time counts. It returns b.
func (b *Before) Git(g policy.GitLooks) *Before {
	for _, h := range g.Hooks {
		h = filepath.Clean(h)
		s := &dirState{}
		if b.since {
			b.gitHooks[h] = s
			continue
		}
		s.recordHooks(h)
		b.gitHooks[h] = s
		b.gitKnown[h] = mountable(h)
		b.gitIDs[h] = statPath(h)
	}
	for _, c := range g.Configs {
		c = filepath.Clean(c)
		if b.since {
			b.gitConfigs[c] = nil
			continue
		}
		b.gitConfigs[c] = recordFile(c, MaxConfigSize)
		b.gitKnown[c] = mountable(c)
		b.gitIDs[c] = statPath(c)
	}
	return b
}

// statPath returns the stat fields of p, or nil when it does not exist.
func statPath(p string) *fileState {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil
	}
	s := statOf(fi)
	return &s
}

// mountable reports whether p exists and is no symbolic link: what a mount
// keeps read-only itself (a link is kept only through its target, when
// that is visible inside, so Options.KeptReadOnly does not cover it).
func mountable(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&fs.ModeSymlink == 0
}

// configFiles are the configuration files of a git directory.
var configFiles = []string{"config", "config.worktree"}

// recordFile returns the state of path (a symbolic link is recorded with
// its target as content), or nil if it does not exist.
func recordFile(path string, max int64) *fileState {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	s := statOf(fi)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if t, err := os.Readlink(path); err == nil {
			s.content = []byte(t)
		}
	case fi.Mode().IsRegular() && fi.Size() <= max:
		if f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow|oNonblock, 0); err == nil {
			s.content, _ = io.ReadAll(io.LimitReader(f, max+1))
			f.Close()
			if int64(len(s.content)) > max {
				s.content = nil
			}
		}
	}
	return &s
}

// readDirNames lists up to n names of dir, without following a symbolic
// link at dir itself.
func readDirNames(dir string, n int) ([]string, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|oNoFollow|oDirectory, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(n)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return names, err
}
