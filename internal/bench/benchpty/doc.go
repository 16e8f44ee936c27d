// Package benchpty runs a benchmark's command on a pseudo-terminal of its
// own (cordon run --ask asks only there) and times it: the one pty helper
// of internal/bench (Linux).
package benchpty
