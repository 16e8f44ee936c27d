//go:build !linux

package main

import (
	"errors"
	"time"
)

// childrenCPU is not measured here: cordon run's sandboxes are Linux's.
func childrenCPU() time.Duration { return 0 }

func becomeSubreaper() error {
	return errors.New("-cpu measures Linux's sandboxes only")
}

func reapOrphans() error { return nil }
