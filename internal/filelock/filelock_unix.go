//go:build unix

package filelock

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// poll is the first pause between two tries of a lock held by another
// process; each pause doubles, up to maxPoll.
const (
	poll    = time.Millisecond
	maxPoll = 50 * time.Millisecond
)

// Lock takes an exclusive lock of the file path, created (mode 0600) when
// missing, waiting at most wait for another holder to release it (wait
// <= 0: as long as it takes), and returns its release. The file is never
// removed: a lock file removed while another process waits on it would
// let two hold "the" lock at once.
func Lock(path string, wait time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the lock file: %w", err)
	}
	return lock(f, path, wait)
}

// LockDir takes an exclusive lock of the directory dir (which must
// exist), as Lock does a file's. A directory's lock outlives the renames
// of the files in it: lock it to replace a file in it by rename.
func LockDir(dir string, wait time.Duration) (func(), error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the directory to lock: %w", err)
	}
	return lock(f, dir, wait)
}

// lock takes f's exclusive lock (see Lock) and returns its release, which
// closes f; f is closed on an error.
func lock(f *os.File, path string, wait time.Duration) (func(), error) {
	how := unix.LOCK_EX
	if wait > 0 {
		how |= unix.LOCK_NB
	}
	end := time.Now().Add(wait)
	pause := poll
	for {
		err := unix.Flock(int(f.Fd()), how)
		switch {
		case err == nil:
			return func() { f.Close() }, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK) && time.Now().Before(end):
			time.Sleep(min(pause, time.Until(end)))
			pause = min(2*pause, maxPoll)
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			f.Close()
			return nil, timeoutError(path, wait)
		}
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
}

// timeoutError is the one line of a lock not taken within wait.
func timeoutError(path string, wait time.Duration) error {
	return fmt.Errorf("%w after %s: %s (another cordon holds it; retry once it is done, or end a cordon that hangs)", ErrTimeout, wait.Round(time.Millisecond), path)
}
