package launch

import (
	"fmt"
	"runtime"

	"github.com/cordon-sandbox/cordon/plan"
)

// unenforcedLimits names the limits of pl that a run without a helper or
// a Job Object (macOS) does not enforce, one sentence each.
func unenforcedLimits(pl *plan.Plan) []string {
	var out []string
	say := func(what string, v int) {
		if v > 0 {
			out = append(out, fmt.Sprintf("%s (%d): not enforced on %s, which has no cordon helper to set it", what, v, runtime.GOOS))
		}
	}
	say("max processes", pl.Limits.MaxProcesses)
	say("max memory MiB", pl.Limits.MaxMemoryMB)
	say("max CPU seconds", pl.Limits.MaxCPUSeconds)
	return out
}
