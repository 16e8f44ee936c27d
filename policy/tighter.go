package policy

import (
	"fmt"
	"slices"
	"strings"
)

// netRank orders network modes from the tightest.
var netRank = map[string]int{string(NetDeny): 0, string(NetLoopback): 1, string(NetFiltered): 2, string(NetOpen): 3}

// AtLeastAsTight reports whether the built-in profile a allows nothing that
// the built-in profile b does not: reads and writes a subset, denies a
// superset, a network mode, limits, enforcement mode, environment and audit
// settings no looser. A file that may only tighten a policy (a workspace
// .cordon.yaml) may pick such a profile: every other layer applies on top
// of a profile the same way, so the resulting policy is no looser either.
// Unknown names are never as tight.
func AtLeastAsTight(a, b string) bool {
	pa, errA := Profile(a)
	pb, errB := Profile(b)
	if errA != nil || errB != nil {
		return false
	}
	subset := func(x, y []string) bool {
		for _, s := range x {
			if !slices.Contains(y, s) {
				return false
			}
		}
		return true
	}
	// limit reports whether x is no looser than y; 0 is unlimited.
	limit := func(x, y *int) bool { return *y == 0 || (*x != 0 && *x <= *y) }
	fa, fb := pa.Filesystem, pb.Filesystem
	ra, rb := pa.Resources, pb.Resources
	return modeRank[Mode(*pa.Mode)] >= modeRank[Mode(*pb.Mode)] &&
		subset(fa.Read, fb.Read) && subset(fa.Write, fb.Write) &&
		subset(fb.Deny, fa.Deny) && subset(fb.DenyWrite, fa.DenyWrite) &&
		netRank[*pa.Network.Mode] <= netRank[*pb.Network.Mode] &&
		subset(pa.Network.Allow, pb.Network.Allow) && subset(pb.Network.Deny, pa.Network.Deny) &&
		len(pa.Network.ForwardPorts) <= len(pb.Network.ForwardPorts) && subset(pa.UnixSockets, pb.UnixSockets) &&
		limit(ra.MaxProcesses, rb.MaxProcesses) && limit(ra.MaxMemoryMB, rb.MaxMemoryMB) &&
		limit(ra.MaxCPUSeconds, rb.MaxCPUSeconds) && limit(ra.MaxFileSizeMB, rb.MaxFileSizeMB) &&
		subset(pa.Env, pb.Env) &&
		violationRank[*pa.OnViolation] >= violationRank[*pb.OnViolation] &&
		(*pa.Audit.Enabled || !*pb.Audit.Enabled) && (*pa.Audit.LogDenied || !*pb.Audit.LogDenied) &&
		*pa.Backend == *pb.Backend
}

// notAsTight explains the refusal of a profile that is not at least as
// tight as current, naming the ones that are.
func notAsTight(current string) string {
	var ok []string
	for _, n := range Profiles() {
		if n != current && AtLeastAsTight(n, current) {
			ok = append(ok, n)
		}
	}
	if len(ok) == 0 {
		return fmt.Sprintf("not as tight as the current %s, and no other profile is", current)
	}
	return fmt.Sprintf("not as tight as the current %s; %s would be", current, strings.Join(ok, " or "))
}
