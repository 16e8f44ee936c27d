//go:build !cordon_unsupervised

package plan

// superviseLandlock says that the Landlock-only backend runs its seccomp
// supervisor (Supervision). Only a benchmark's binary is built without it
// (-tags cordon_unsupervised, go run ./internal/bench/monitor -landlock), to
// measure what it costs.
const superviseLandlock = true
