package launch

import (
	"fmt"
	"strings"

	"github.com/cordon-sandbox/cordon/plan"
	"github.com/cordon-sandbox/cordon/planted"
	"github.com/cordon-sandbox/cordon/result"
)

// guard is the check, after the run, for what the command planted in its
// writable trees to run later on the host (see package planted).
type guard struct {
	before *planted.Before
	roots  []string
	opts   planted.Options
}

// startGuard takes the snapshot of pl.Guard just before the command
// starts: the git directories and protected names the plan's walk found
// in the writable roots. It returns nil when the command writes no root
// that is checked.
func startGuard(pl *plan.Plan) *guard {
	g := pl.Guard
	if len(g.Roots) == 0 {
		return nil
	}
	opts := planted.Options{KeepArmed: g.KeepArmed, Ignore: pl.Placeholders}
	return &guard{before: planted.Snapshot(g.GitDirs, g.Names), roots: g.Roots, opts: opts}
}

// finish runs the check after the command ended, records the findings in
// res and returns one "cordon: warning:" line per finding (and one for what
// it could not check), for the caller to print once the terminal is its
// own again.
func (g *guard) finish(res *result.Result) (lines []string) {
	if g == nil {
		return nil
	}
	rep, err := g.before.Check(g.roots, g.opts)
	incomplete := rep.Incomplete
	if err != nil {
		incomplete = fmt.Sprintf("the check for planted files failed: %v", err)
	}
	for _, f := range rep.Findings {
		w := f.Warning()
		res.Planted = append(res.Planted, result.Planted{Path: f.Path, Kind: f.Kind, Key: f.Key, Rule: f.Rule, Disarmed: f.Disarmed, Warning: w})
		lines = append(lines, "cordon: warning: "+w)
	}
	res.PlantedIncomplete = strings.TrimPrefix(incomplete, "; ")
	if res.PlantedIncomplete != "" {
		lines = append(lines, "cordon: warning: "+res.PlantedIncomplete)
	}
	return lines
}
