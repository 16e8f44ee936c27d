package launch

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/cordon-sandbox/cordon/subpath"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/plan"
	"golang.org/x/sys/unix"
)

// workspaceLock coordinates the placeholders that bwrap creates on the host
// for missing protected paths. Every run holds a shared lock on a file per
// workspace (per repository when the workspace belongs to one: see
// plan.Plan.LockKey); only a run that can take the lock exclusively (no other
// sandbox is using that workspace) removes placeholders, because removing
// a mount point on the host would detach the read-only mount inside a
// sandbox still running. A record file remembers placeholders, so a run
// that was killed with SIGKILL is cleaned up by the next one.
type workspaceLock struct {
	f      *os.File
	record string
}

func lockWorkspace(pl *plan.Plan) (*workspaceLock, error) {
	if pl.StateDir == "" || pl.Workspace == "" {
		return &workspaceLock{}, nil
	}
	dir := filepath.Join(pl.StateDir, "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating lock directory: %w", err)
	}
	key := pl.Workspace
	if pl.LockKey != "" {
		key = pl.LockKey // runs in one repository's worktrees share it
	}
	sum := sha256.Sum256([]byte(key))
	base := filepath.Join(dir, hex.EncodeToString(sum[:12]))
	f, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening workspace lock: %w", err)
	}
	l := &workspaceLock{f: f, record: base + ".placeholders"}
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
		// Placeholders a killed run left behind. pl was built while they
		// existed, so the ones it mounts stay (recorded again, removed
		// when this run ends); removing them now would make bwrap fail.
		l.cleanup(func(p string) bool { return mentions(pl.Argv, p) })
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking workspace: %w", err)
	}
	if len(pl.Placeholders) > 0 {
		rf, err := os.OpenFile(l.record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			l.release()
			return nil, fmt.Errorf("recording placeholders: %w", err)
		}
		_, err = rf.WriteString(strings.Join(pl.PlaceholderPaths(), "\n") + "\n")
		rf.Close()
		if err != nil {
			l.release()
			return nil, fmt.Errorf("recording placeholders: %w", err)
		}
	}
	if err := createPlaceholders(pl); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// createPlaceholders creates the plan's missing protected paths as empty
// directories or files, as the user running cordon, before bwrap mounts
// over them. bwrap would create them too, but inside its user namespace
// root cannot write to a directory that another user owns (sudo cordon in
// a user's checkout). The last component is created with mkdirat or
// openat(O_EXCL) under an os.Root of its parent, which never follows a
// symlink there.
func createPlaceholders(pl *plan.Plan) error {
	for _, ph := range pl.Placeholders {
		p := ph.Path
		var dir bool
		var content []byte
		switch ph.Kind {
		case plan.PlaceholderDir:
			dir = true
		case plan.PlaceholderFile:
		case plan.PlaceholderCommondir:
			// A commondir placeholder names its git directory (".") on
			// the host too: git run there meanwhile must read what it
			// reads inside. Nothing else is copied.
			content = []byte(".\n")
		default:
			return fmt.Errorf("creating placeholder %s for a missing protected path: unknown kind %q", p, ph.Kind)
		}
		r, err := os.OpenRoot(filepath.Dir(p))
		if err != nil {
			return fmt.Errorf("creating placeholder %s for a missing protected path: %w", p, err)
		}
		name := filepath.Base(p)
		if dir {
			err = r.Mkdir(name, 0o755)
		} else {
			var f *os.File
			if f, err = r.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
				if len(content) > 0 {
					_, err = f.Write(content)
				}
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
		}
		r.Close()
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating placeholder %s for a missing protected path: %w", p, err)
		}
	}
	return nil
}

// release removes placeholders if no other sandbox uses the workspace, and
// drops the lock.
func (l *workspaceLock) release() {
	if l == nil || l.f == nil {
		return
	}
	if unix.Flock(int(l.f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
		l.cleanup(nil)
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
	// Deepest first, so nested placeholders go before their parents.
	var kept []string
	for i := len(paths) - 1; i >= 0; i-- {
		if keep != nil && keep(paths[i]) {
			kept = append([]string{paths[i]}, kept...)
			continue
		}
		removeIfEmpty(paths[i])
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
// commondir placeholder that still holds only ".".
func removeIfEmpty(p string) {
	fi, err := os.Lstat(p)
	if err != nil {
		return
	}
	switch {
	case fi.IsDir():
		_ = os.Remove(p) // fails unless empty
	case fi.Mode().IsRegular() && fi.Size() == 0:
		_ = os.Remove(p)
	case fi.Mode().IsRegular() && filepath.Base(p) == "commondir" && fi.Size() == 2:
		if b, err := os.ReadFile(p); err == nil && string(b) == ".\n" {
			_ = os.Remove(p)
		}
	}
}
