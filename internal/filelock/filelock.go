// Package filelock owns cordon's advisory locks between processes: an
// exclusive flock(2) of a lock file (Lock) or of a directory (LockDir),
// held until its release, waited for at most a bound. The audit log's
// rotation and the saving of an answer into the user config take one.
//
// It must not decide what a lock protects: the caller names the file or
// directory, and holds the lock across everything that must not
// interleave with another process doing the same.
package filelock

import "errors"

// ErrUnsupported is returned where the system has no flock (outside Unix).
var ErrUnsupported = errors.New("file locks are built for Linux and macOS only")

// ErrTimeout is wrapped by the error of a lock not taken within its wait.
var ErrTimeout = errors.New("still locked by another process")
