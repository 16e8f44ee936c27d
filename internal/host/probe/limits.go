package probe

import (
	"errors"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
)

// The mechanisms LimitsInfo names.
const (
	// MechanismCgroup2 is a delegated cgroup v2 subtree.
	MechanismCgroup2 = string(limits.KindCgroup2)
	// MechanismCgroup1 is the cgroup v1 pids and memory hierarchies.
	MechanismCgroup1 = string(limits.KindCgroup1)
	// MechanismRlimits is the helper's rlimits alone: no usable cgroup.
	MechanismRlimits = "rlimits"
)

// LimitsInfo says how `cordon run` enforces process and memory limits on
// this host: Detect creates (and removes) a cgroup exactly as a run does.
type LimitsInfo struct {
	// Mechanism is MechanismCgroup2, MechanismCgroup1 or
	// MechanismRlimits. CPU seconds and file size are rlimits with any.
	Mechanism string `json:"mechanism"`
	// Reason says why no cgroup could be used (MechanismRlimits).
	Reason string `json:"reason,omitempty"`
}

// detectLimits creates a cgroup the way cordon run does, and removes it.
func detectLimits() LimitsInfo {
	g, err := limits.New("status", limits.Limits{MaxProcesses: 1 << 20, MaxMemoryMB: 1 << 20})
	if g != nil {
		defer g.Close()
	}
	if err == nil && g.Kind() != limits.KindNone {
		return LimitsInfo{Mechanism: string(g.Kind())}
	}
	var ue *limits.UnavailableError
	reason := "no usable cgroup"
	switch {
	case errors.As(err, &ue):
		reason += ": " + strings.Join(ue.Reasons, "; ")
	case err != nil:
		reason += ": " + err.Error()
	}
	return LimitsInfo{Mechanism: MechanismRlimits, Reason: reason}
}
