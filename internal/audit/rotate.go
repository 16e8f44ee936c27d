package audit

import (
	"errors"
	"fmt"
	"os"

	"github.com/cordon-sandbox/cordon/internal/filelock"
)

// Rotated is the suffix of the previous generation of a rotated log.
const Rotated = ".1"

// errNoRotation: rotation needs an advisory file lock (filelock.Lock).
var errNoRotation = errors.New("the audit log is rotated only on Linux and macOS; it grows without bound here: set audit.max_size_mb: 0 to say so")

// rotate, with l.mu held, moves the file to path+".1" (replacing the older
// generation) and opens a new one, when the file at path is still the one
// this Log writes and is still past the bound. Every process rotates under
// an exclusive lock of path+".lock", so two never rotate the same
// generation twice; one that finds the file already rotated by another
// just opens the new one. A process that still holds the old file open
// appends to path+".1" until its next record: records written across a
// rotation land in one file or the other, whole, never lost.
func (l *Log) rotate() error {
	unlock, err := filelock.Lock(l.path+".lock", 0)
	if err != nil {
		if errors.Is(err, filelock.ErrUnsupported) {
			l.max = 0 // said once
			return errNoRotation
		}
		return fmt.Errorf("locking the audit log to rotate it: %w", err)
	}
	defer unlock()
	mine, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("reading the log's size: %w", err)
	}
	cur, err := os.Lstat(l.path)
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	case err == nil && os.SameFile(mine, cur) && mine.Size() >= l.max:
		if err := os.Rename(l.path, l.path+Rotated); err != nil {
			return err
		}
	case err == nil && os.SameFile(mine, cur):
		return nil // rotated and written to again since: not past the bound
	}
	return l.reopen()
}

// follow, with l.mu held, reopens the log when another process rotated it
// since this Log last wrote (path is no longer the file it holds), so that
// a record goes to the current generation, not to one the next rotation
// removes. A record written between the check and another rotation lands
// in path+".1", whole.
func (l *Log) follow() error {
	mine, err := l.f.Stat()
	if err != nil {
		return err
	}
	cur, err := os.Lstat(l.path)
	if err == nil && os.SameFile(mine, cur) {
		return nil
	}
	return l.reopen()
}

// reopen, with l.mu held, opens path again and closes the file held.
func (l *Log) reopen() error {
	f, err := openAppend(l.path)
	if err != nil {
		return err
	}
	old := l.f
	l.f = f
	return old.Close()
}
