//go:build !linux

package seccomp

import (
	"fmt"
	"runtime"
)

// Install always fails: seccomp exists only on Linux.
func Install(strict bool) error {
	return fmt.Errorf("seccomp: not supported on %s/%s (only linux/amd64 and linux/arm64)", runtime.GOOS, runtime.GOARCH)
}

// Describe returns nil: seccomp exists only on Linux.
func Describe(strict bool) []string {
	return nil
}
