//go:build !linux

package globscan

// cpuStarved: only Linux reports CPU pressure here; the deadline is
// wall-clock time.
func cpuStarved() bool { return false }
