//go:build !unix

package filelock

import "time"

// Lock: without flock here, ErrUnsupported.
func Lock(string, time.Duration) (func(), error) { return nil, ErrUnsupported }

// LockDir: without flock here, ErrUnsupported.
func LockDir(string, time.Duration) (func(), error) { return nil, ErrUnsupported }
