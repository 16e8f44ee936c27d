package launch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of a gitWrites watch.
const (
	// maxGitWatches bounds the git directories watched (a monorepo with
	// hundreds of submodules): the rest are not.
	maxGitWatches = 256
	// gitWritesEvery is how often the queue of events is read during the
	// run, well before the kernel's queue (16384 events by default) can
	// fill with a git directory's own lock files.
	gitWritesEvery = 200 * time.Millisecond
)

// gitLocks are the lock files git writes a git directory's config
// through: "config.lock" renamed onto "config" (git config, git remote
// add, git branch -u, git submodule init and add), and the same for
// config.worktree (git config --worktree).
var gitLocks = map[string]string{"config.lock": "config", "config.worktree.lock": "config.worktree"}

// gitWrites watches the git directories whose config the sandbox keeps
// read-only for a git command's write of it that was refused: git writes
// the new file as config.lock and renames it onto config, which fails on
// a read-only config (bubblewrap's mount: EBUSY; the Landlock-only
// backend's supervisor: EACCES); git then removes config.lock, and some
// of its commands (git branch -u, git submodule add) exit 0 all the same.
// A lock file removed rather than renamed is such a write. The watch is
// inotify's, on the host: it sees the sandbox's changes to the host's
// directory and reads nothing the command wrote.
type gitWrites struct {
	mu      sync.Mutex
	fd      int
	dirs    map[int32]string // watch descriptor -> git directory
	refused map[string]bool  // config file -> a write of it was refused
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	out     []string // what finish returns
}

// inotifyInit starts a gitWrites watch's inotify instance (a variable
// for the tests: a user whose instances are used up).
var inotifyInit = func() (int, error) { return unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK) }

// watchGitWrites starts watching dirs; nil when there is nothing to
// watch. The error says that inotify refused an instance (the user's
// fs.inotify.max_user_instances used up, say): then nothing is watched,
// and the caller says so, since a refused write goes unreported.
func watchGitWrites(dirs []string) (*gitWrites, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	fd, err := inotifyInit()
	if err != nil {
		return nil, fmt.Errorf("starting an inotify instance: %w", err)
	}
	w := &gitWrites{fd: fd, dirs: map[int32]string{}, refused: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, d := range dirs[:min(len(dirs), maxGitWatches)] {
		// IN_DONT_FOLLOW|IN_ONLYDIR: the git directory itself, never
		// what a link in its place names.
		wd, err := unix.InotifyAddWatch(fd, d, unix.IN_DELETE|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW|unix.IN_EXCL_UNLINK)
		if err == nil {
			w.dirs[int32(wd)] = d
		}
	}
	if len(w.dirs) == 0 {
		unix.Close(fd)
		return nil, nil
	}
	go func() {
		defer close(w.done)
		t := time.NewTicker(gitWritesEvery)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.drain()
			}
		}
	}()
	return w, nil
}

// drain reads the events queued so far.
func (w *gitWrites) drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if err != nil || n <= 0 {
			return
		}
		for b := buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
			wd := int32(binary.NativeEndian.Uint32(b[0:4]))
			mask := binary.NativeEndian.Uint32(b[4:8])
			l := int(binary.NativeEndian.Uint32(b[12:16]))
			if len(b) < unix.SizeofInotifyEvent+l {
				break
			}
			name := bytes.TrimRight(b[unix.SizeofInotifyEvent:unix.SizeofInotifyEvent+l], "\x00")
			b = b[unix.SizeofInotifyEvent+l:]
			if mask&unix.IN_DELETE == 0 || mask&unix.IN_ISDIR != 0 {
				continue
			}
			if d, ok := w.dirs[wd]; ok && gitLocks[string(name)] != "" {
				w.refused[filepath.Join(d, gitLocks[string(name)])] = true
			}
		}
	}
}

// finish stops the watch and returns the config files a write of which was
// refused, sorted. The events of the run are all queued when it ended:
// the last read sees them. It may be called again (deferred on a path
// that returns early) and returns the same.
func (w *gitWrites) finish() []string {
	if w == nil {
		return nil
	}
	w.once.Do(func() {
		close(w.stop)
		<-w.done
		w.drain()
		// Closing an inotify instance that has watches waits for an
		// SRCU grace period (about 10 ms): what it queued is read, so
		// the close need not hold the run's end (a session's command).
		go unix.Close(w.fd)
		for f := range w.refused {
			w.out = append(w.out, f)
		}
		slices.Sort(w.out)
	})
	return w.out
}
