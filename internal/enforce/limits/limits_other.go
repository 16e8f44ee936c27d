//go:build !linux

package limits

import (
	"errors"
	"time"
)

// v1Controllers is empty: cgroups exist only on Linux.
var v1Controllers []string

// New returns a Group of KindNone and an *UnavailableError: cgroups exist
// only on Linux.
func New(name string, l Limits) (*Group, error) {
	if l.MaxProcesses < 0 || l.MaxMemoryMB < 0 || l.MaxCPUSeconds < 0 {
		return nil, errors.New("limits: negative limit")
	}
	r := []string{"cgroups exist only on Linux"}
	return &Group{kind: KindNone, limits: l, fd: -1, reasons: r}, &UnavailableError{Reasons: r}
}

// FD reports false: there is no cgroup.
func (g *Group) FD() (int, bool) { return -1, false }

// SetMaxProcesses fails: there is no cgroup.
func (g *Group) SetMaxProcesses(n int) error {
	return errors.New("limits: cgroups exist only on Linux")
}

// Reuse reports false: there is no cgroup.
func (g *Group) Reuse() bool { return false }

// Add does nothing: there is no cgroup.
func (g *Group) Add(pid int) error { return nil }

// Contains reports false: there is no cgroup.
func (g *Group) Contains(pid int) (bool, error) { return false, nil }

// Pids returns nothing: there is no cgroup.
func (g *Group) Pids() ([]int, error) { return nil, nil }

// Kill does nothing: there is no cgroup.
func (g *Group) Kill() error { return nil }

// Close does nothing: there is no cgroup.
func (g *Group) Close() error { return nil }

// Usage reports nothing: there is no cgroup.
func (g *Group) Usage() (Usage, error) {
	return Usage{Missing: []string{"all (no cgroup)"}}, nil
}

// Cleanup does nothing: there is no cgroup.
func Cleanup(olderThan time.Duration) (int, error) { return 0, nil }
