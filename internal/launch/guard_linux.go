package launch

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/internal/subpath"

	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/planted"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
)

// guard is the check, after the run, for what the command planted in its
// writable trees to run later on the host (see package planted).
type guard struct {
	before *planted.Before
	roots  []string
	opts   planted.Options
	// workspace: findings below it are named relative to it, others
	// (another write path, the sandbox cache) by their whole path.
	workspace string
	// cache holds what the checks after earlier runs found (see
	// WalkCache); finish saves it.
	cache *globscan.Cache
	// checkLock is the file whose exclusive lock finish holds while it
	// checks and disarms, or "": runs of one workspace check one at a
	// time, so a file planted while several ran is reported (and
	// disarmed) by one of them, once.
	checkLock string
	// complete: the snapshot holds every git directory and protected
	// name of the roots (plan.Guard.Complete), so a run that created
	// nothing needs no walk after it (see created).
	complete bool
	// reuse is the session's snapshot kept between its commands, or nil.
	reuse *snapshotReuse
}

// countTreeFrom is the fewest directories in the writable roots for
// which a run under bubblewrap without the violation monitor counts its
// tree changes (helperspec.Spec.TreeChanges), so that a run with none is
// not walked after it. Each counted call waits for the host's answer
// (tens of microseconds on a loaded 2-core VM, a round trip between two
// threads), and the walk it may spare costs an lstat per directory (a
// microsecond or two each): below this, a command that creates a few
// hundred files would lose more than the walk costs.
const countTreeFrom = 2000

// countTreeChanges reports whether a run of g counts its tree changes under
// bubblewrap when nothing else does (see countTreeFrom): only when
// the check after a run with none could then skip its walk.
func countTreeChanges(g plan.Guard) bool {
	return g.Complete && len(g.Roots) > 0 && g.Dirs >= countTreeFrom
}

// treeChanges tells g what the listener counted of the command's calls
// that could add a name to a directory or change a file's permissions
// (monitor.Stats.TreeChanges), when it saw them all: with none, and a
// complete snapshot, the check after the run walks nothing
// (planted.Options.TreeUnchanged). A run whose calls were not all
// counted (no listener, or one that sends only some) never comes here,
// and is walked.
func (g *guard) treeChanges(n int64) {
	if g != nil {
		g.opts.TreeUnchanged = g.complete && n == 0
	}
}

// startGuard takes the snapshot of pl.Guard before the command starts
// (once bwrap or the helper has started, before the helper gets its spec:
// see sandboxRun.start): the git directories and protected names the
// plan's walk found in the writable roots. It returns nil when the command writes no root
// that is checked. While the run lasts, a journal in the state directory
// names its roots (see startJournal), so that if cordon is killed before
// its check (kill -9), the next run reports what it may have planted (see
// sweepJournals). cache is the walk cache to use (a session's), or nil
// for the state directory's (WalkCache). reuse is a session's kept
// snapshot (see snapshotReuse), or nil for a run's.
func startGuard(pl *plan.Plan, cache *globscan.Cache, reuse *snapshotReuse) *guard {
	g := pl.Guard
	if len(g.Roots) == 0 {
		return nil
	}
	// cordon's own files (masks, locks, journals) are not the run's.
	ignore := append(pl.PlaceholderPaths(), pl.StateDir)
	if cache == nil {
		cache = WalkCache(pl.StateDir)
	}
	opts := planted.Options{KeepArmed: g.KeepArmed, Ignore: ignore, KeptReadOnly: g.KeptReadOnly, Cache: cache}
	gitDirs, names := append(slices.Clone(g.GitDirs), g.UnwalkedGitDirs...), append(slices.Clone(g.Names), g.UnwalkedNames...)
	before := reuse.snapshot(g, cache, func() *planted.Before {
		return planted.SnapshotKeeping(gitDirs, names, g.KeptReadOnly).Git(g.Git).WithVenvs(g.Roots)
	})
	gd := &guard{cache: cache, before: before, roots: g.Roots, opts: opts, workspace: pl.Workspace, complete: g.Complete, reuse: reuse}
	if locksWorkspace(pl) {
		gd.checkLock = lockPath(pl.StateDir, lockKey(pl.Workspace, pl.LockKey)) + ".check"
	}
	return gd
}

// lockCheck takes the exclusive lock of g.checkLock and returns its
// release; without one (no state directory, or it cannot be opened) the
// check runs unlocked, and a planted file may then be reported by two
// runs.
func (g *guard) lockCheck() func() {
	if g.checkLock == "" {
		return func() {}
	}
	_ = os.MkdirAll(filepath.Dir(g.checkLock), 0o700)
	f, err := os.OpenFile(g.checkLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return func() {}
	}
	if err := flock(f, unix.LOCK_EX); err != nil {
		f.Close()
		return func() {}
	}
	return func() { f.Close() }
}

// journal is what a run in progress records of itself.
type journal struct {
	Pid   int      `json:"pid"`
	Start int64    `json:"start_unix_nano"`
	Roots []string `json:"roots"`
	// Git is where else git looked in Roots (plan.Guard.Git).
	Git policy.GitLooks `json:"git,omitzero"`
	// Pgid is the command's process group on the Landlock-only backend
	// (no pid namespace): what is left of it when cordon is killed lives
	// on, and the next run kills it (see killLeftGroup).
	Pgid int `json:"pgid,omitempty"`
	// LeaderStart and Sid are the start time (clock ticks since boot)
	// and session of the process that leads Pgid, the helper, read as it
	// starts: they tell the group from another that took its number
	// since (0: not known).
	LeaderStart uint64 `json:"leader_start_ticks,omitempty"`
	Sid         int    `json:"sid,omitempty"`
}

// journalDir holds the journals of runs in progress.
func journalDir(stateDir string) string { return filepath.Join(stateDir, "runs") }

// needsJournal reports whether a run of pl leaves something to the next
// run if cordon is killed: roots to check for planted files, or, without
// a pid namespace, processes to kill.
func needsJournal(pl *plan.Plan) bool {
	return pl.StateDir != "" && (len(pl.Guard.Roots) > 0 || !pl.PidNamespace)
}

// writeJournal records a run in progress and returns its file, or "" if
// it could not (the run goes on; only a kill -9 would then go unchecked).
func writeJournal(stateDir string, j journal) string {
	f := createJournal(stateDir, j)
	if f == nil {
		return ""
	}
	f.Close()
	return f.Name()
}

// createJournal is writeJournal, returning the journal open for writing
// (see sessionJournal), or nil.
func createJournal(stateDir string, j journal) *os.File {
	dir := journalDir(stateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil
	}
	j.Pid = os.Getpid()
	b, err := json.Marshal(j)
	if err != nil {
		return nil
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil
	}
	// Whole or not at all: other runs read it meanwhile.
	p := filepath.Join(dir, fmt.Sprintf("%d-%s.json", j.Pid, hex.EncodeToString(rnd[:])))
	f, err := createKeeping(p, b, 0o600)
	if err != nil {
		return nil
	}
	return f
}

// journalPid is the pid a journal's name begins with (PID-HEX.json).
func journalPid(name string) (int, bool) {
	s, _, ok := strings.Cut(name, "-")
	pid, err := strconv.Atoi(s)
	return pid, ok && err == nil && pid > 0
}

// maxJournals bounds how many journals of killed runs one run examines.
const maxJournals = 16

// sweepJournals checks, for each run whose journal remains although its
// cordon is gone (killed before its own check), the trees it could write
// for what was created or changed since it started, and returns one
// warning line per finding. It only reports (the user may have changed
// things there since, and those are theirs), and removes the journal.
// Before that it kills what is left of the run's process group, when the
// journal names one (the Landlock-only backend).
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
		// Its name says whose it is (writeJournal): with many runs at
		// once, those going on are passed over without being read.
		if pid, ok := journalPid(e.Name()); ok && (pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH) {
			continue // still running (or its pid taken again): not ours to judge
		}
		p := filepath.Join(journalDir(stateDir), e.Name())
		b, err := os.ReadFile(p)
		var j journal
		if err != nil || json.Unmarshal(b, &j) != nil || j.Pid <= 0 {
			os.Remove(p) // its run is gone: it stays unreadable
			continue
		}
		if j.Pid == os.Getpid() || unix.Kill(j.Pid, 0) != unix.ESRCH {
			continue
		}
		// Of the runs that find it, the one that removes it sweeps.
		if os.Remove(p) != nil {
			continue
		}
		seen++
		start := time.Unix(0, j.Start)
		if j.Pgid > 0 {
			killLeftGroup(j, start)
		}
		if len(j.Roots) == 0 {
			continue
		}
		rep, err := planted.Since(start).Git(j.Git).Check(j.Roots, planted.Options{KeepArmed: true, KeptHow: "left in place (that run was killed; what changed since may be yours): review it", Ignore: append(slices.Clone(placeholders), stateDir)})
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
	unlock := g.lockCheck()
	held := g.cache.HoldMounts() // the check's walks read the mount table once
	rep, err := g.before.Check(g.roots, g.opts)
	held()
	unlock()
	if err != nil || len(rep.Findings) > 0 || len(rep.Restored) > 0 || rep.Incomplete != "" {
		// What the check changed or could not tell is read again.
		g.reuse.drop()
	}
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
	for _, l := range rep.Restored {
		lines = append(lines, "cordon: warning: "+l)
	}
	res.PlantedIncomplete = strings.TrimPrefix(incomplete, "; ")
	if res.PlantedIncomplete != "" {
		lines = append(lines, "cordon: warning: "+res.PlantedIncomplete)
	}
	return lines
}
