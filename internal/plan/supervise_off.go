//go:build cordon_unsupervised

package plan

// superviseLandlock is false in a benchmark's binary only (see
// supervise_on.go): its Landlock-only runs say so on a degraded line.
const superviseLandlock = false
