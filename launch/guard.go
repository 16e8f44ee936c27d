package launch

import (
	"fmt"
	"path/filepath"
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
	note   string // what the snapshot could not cover
}

// startGuard takes the snapshot of pl.Guard just before the command
// starts. A plan whose Guard lists no roots still has its workspace
// checked when the command may write it; the git directories and names
// that exist are then found by a walk of their own. It returns nil when
// there is nothing to check.
func startGuard(pl *plan.Plan) *guard {
	g := pl.Guard
	opts := planted.Options{KeepArmed: g.KeepArmed, Ignore: pl.Placeholders}
	if len(g.Roots) > 0 {
		return &guard{before: planted.Snapshot(g.GitDirs, g.Names), roots: g.Roots, opts: opts}
	}
	if pl.Workspace == "" || !writesWorkspace(pl) {
		return nil
	}
	roots := []string{pl.Workspace}
	dirs, names, note := planted.Discover(roots, planted.Limits{})
	return &guard{before: planted.Snapshot(dirs, names), roots: roots, opts: opts, note: note}
}

// writesWorkspace reports whether pl lets the command write its workspace.
func writesWorkspace(pl *plan.Plan) bool {
	inside := func(dir string) bool {
		return dir == pl.Workspace || strings.HasPrefix(pl.Workspace, strings.TrimSuffix(dir, "/")+"/")
	}
	if r := pl.Spec.Landlock; r != nil {
		for _, w := range r.ReadWrite {
			if inside(filepath.Clean(w)) {
				return true
			}
		}
		return false
	}
	for i := 0; i+2 < len(pl.Argv); i++ {
		if (pl.Argv[i] == "--bind" || pl.Argv[i] == "--bind-try") && inside(pl.Argv[i+2]) {
			return true
		}
	}
	return false
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
	if g.note != "" {
		incomplete = strings.TrimSpace(incomplete + "; before the run, " + g.note)
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
