//go:build !linux

package seccomp

import (
	"fmt"
	"runtime"
)

// Install always fails: seccomp exists only on Linux.
func Install(o Options) error {
	return fmt.Errorf("seccomp: not supported on %s/%s (only linux/amd64 and linux/arm64)", runtime.GOOS, runtime.GOARCH)
}

// Options select the filter's extra rules (see the Linux build).
type Options struct {
	// Strict adds the strict-mode list.
	Strict bool `json:"strict,omitempty"`
	// DenyNetwork refuses internet and packet sockets.
	DenyNetwork bool `json:"deny_network,omitempty"`
	// DenyUnix refuses unix sockets other than socketpair.
	DenyUnix bool `json:"deny_unix,omitempty"`
	// StreamOnly allows internet sockets of type SOCK_STREAM only.
	StreamOnly bool `json:"stream_only,omitempty"`
	// DenyOtherFamilies refuses sockets of families other than unix,
	// internet and netlink.
	DenyOtherFamilies bool `json:"deny_other_families,omitempty"`
}

// Describe returns nil: seccomp exists only on Linux.
func Describe(o Options) []string { return nil }

// WatchAvailable reports whether the violation monitor's filter exists
// here: never outside Linux.
func WatchAvailable() error {
	return fmt.Errorf("seccomp: the violation monitor runs only on Linux, not on %s", runtime.GOOS)
}
