package launch

import (
	"encoding/json"
	"fmt"
	"github.com/cordon-sandbox/cordon/subpath"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/globscan"
	"github.com/cordon-sandbox/cordon/plan"
	"github.com/cordon-sandbox/cordon/planted"
	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
)

// guard is the check, after the run, for what the command planted in its
// writable trees to run later on the host (see package planted).
type guard struct {
	before  *planted.Before
	roots   []string
	opts    planted.Options
	journal string // this run's journal file, removed by finish
	// workspace: findings below it are named relative to it, others
	// (another write path, the sandbox cache) by their whole path.
	workspace string
	// cache holds what the checks after earlier runs found (see
	// WalkCache); finish saves it.
	cache *globscan.Cache
}

// startGuard takes the snapshot of pl.Guard just before the command
// starts: the git directories and protected names the plan's walk found
// in the writable roots. It returns nil when the command writes no root
// that is checked. While the run lasts, a journal in the state directory
// names its roots, so that if cordon is killed before its check (kill -9),
// the next run reports what it may have planted (see sweepJournals).
func startGuard(pl *plan.Plan) *guard {
	g := pl.Guard
	if len(g.Roots) == 0 {
		return nil
	}
	// cordon's own files (masks, locks, journals) are not the run's.
	ignore := append(pl.PlaceholderPaths(), pl.StateDir)
	cache := WalkCache(pl.StateDir)
	opts := planted.Options{KeepArmed: g.KeepArmed, Ignore: ignore, TrustKnown: g.KnownReadOnly, Cache: cache}
	gd := &guard{cache: cache, before: planted.Snapshot(g.GitDirs, g.Names), roots: g.Roots, opts: opts, workspace: pl.Workspace}
	gd.journal = writeJournal(pl.StateDir, g.Roots)
	return gd
}

// WalkCache is the cache of the walks for deny globs, protected paths and
// planted files (see globscan.Cache) in cordon's state directory
// stateDir, which no sandbox can read or write; nil without one.
func WalkCache(stateDir string) *globscan.Cache {
	if stateDir == "" {
		return nil
	}
	return globscan.OpenCache(filepath.Join(stateDir, "walk"))
}

// journal is what a run in progress records of itself.
type journal struct {
	Pid   int      `json:"pid"`
	Start int64    `json:"start_unix_nano"`
	Roots []string `json:"roots"`
}

// journalDir holds the journals of runs in progress.
func journalDir(stateDir string) string { return filepath.Join(stateDir, "runs") }

// writeJournal records a run in progress and returns its file, or "" if
// it could not (the run goes on; only a kill -9 would then go unchecked).
func writeJournal(stateDir string, roots []string) string {
	if stateDir == "" {
		return ""
	}
	dir := journalDir(stateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	j := journal{Pid: os.Getpid(), Start: time.Now().UnixNano(), Roots: roots}
	b, err := json.Marshal(j)
	if err != nil {
		return ""
	}
	f, err := os.CreateTemp(dir, fmt.Sprintf("%d-*.json", j.Pid))
	if err != nil {
		return ""
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err != nil || cerr != nil {
		os.Remove(f.Name())
		return ""
	}
	return f.Name()
}

// maxJournals bounds how many journals of killed runs one run examines.
const maxJournals = 16

// sweepJournals checks, for each run whose journal remains although its
// cordon is gone (killed before its own check), the trees it could write
// for what was created or changed since it started, and returns one
// warning line per finding. It only reports (the user may have changed
// things there since, and those are theirs), and removes the journal.
// placeholders are this run's, which the killed run may have left too.
func sweepJournals(stateDir string, placeholders []string) []string {
	if stateDir == "" {
		return nil
	}
	ents, err := os.ReadDir(journalDir(stateDir))
	if err != nil {
		return nil
	}
	var lines []string
	seen := 0
	for _, e := range ents {
		if seen >= maxJournals || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(journalDir(stateDir), e.Name())
		b, err := os.ReadFile(p)
		var j journal
		if err != nil || json.Unmarshal(b, &j) != nil || j.Pid <= 0 {
			os.Remove(p)
			continue
		}
		if j.Pid == os.Getpid() || unix.Kill(j.Pid, 0) != unix.ESRCH {
			continue // still running (or its pid taken again): not ours to judge
		}
		seen++
		os.Remove(p)
		start := time.Unix(0, j.Start)
		rep, err := planted.Since(start).Check(j.Roots, planted.Options{KeepArmed: true, KeptHow: "left in place (that run was killed; what changed since may be yours): review it", Ignore: append(slices.Clone(placeholders), stateDir)})
		if err != nil {
			continue
		}
		for _, f := range rep.Findings {
			lines = append(lines, fmt.Sprintf("cordon: warning: a run killed before its check (started %s) may have planted: %s", start.Format(time.DateTime), f.Warning()))
		}
		if rep.Incomplete != "" {
			lines = append(lines, "cordon: warning: a run killed before its check: "+rep.Incomplete)
		}
	}
	return lines
}

// finish runs the check after the command ended, records the findings in
// res and returns one "cordon: warning:" line per finding (and one for what
// it could not check), for the caller to print once the terminal is its
// own again.
func (g *guard) finish(res *result.Result) (lines []string) {
	if g == nil {
		return nil
	}
	defer g.done()
	rep, err := g.before.Check(g.roots, g.opts)
	// A cache that cannot be written only makes the next check read
	// every directory.
	_ = g.cache.Save()
	incomplete := rep.Incomplete
	if err != nil {
		incomplete = fmt.Sprintf("the check for planted files failed: %v", err)
	}
	for _, f := range rep.Findings {
		// A name such as "..x" in the workspace is inside it.
		if rel, ok := subpath.Rel(g.workspace, f.Path); g.workspace != "" && ok {
			f.Rel = rel
		} else {
			f.Rel = f.Path
		}
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

// done removes the run's journal: its check has run (or the command never
// started).
func (g *guard) done() {
	if g != nil && g.journal != "" {
		os.Remove(g.journal)
		g.journal = ""
	}
}
