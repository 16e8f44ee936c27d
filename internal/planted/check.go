package planted

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/internal/parallel"
	"github.com/cordon-sandbox/cordon/policy"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// Kinds of Finding.
const (
	// KindHook is an executable hook, or a hooks directory that is a link.
	KindHook = "hook"
	// KindConfig is a config key that runs a program.
	KindConfig = "config"
	// KindCommondir is a commondir file that redirects a git directory.
	KindCommondir = "commondir"
	// KindName is a protected name (.envrc, .vscode/, ...).
	KindName = "name"
)

// DisarmedSuffix is appended to the name of what Check renames, and names
// the note written beside a hook whose execute bits it removed.
const DisarmedSuffix = ".cordon-disarmed"

// Default bounds of Check, used for zero fields of Limits.
const (
	// DefaultMaxEntries bounds the directory entries Check reads.
	DefaultMaxEntries = 1_000_000
	// DefaultDeadline bounds the time Check takes.
	DefaultDeadline = 3 * time.Second
)

// ctimeSlack is how long before Snapshot a file's change time may lie and
// the file still count as the run's: file systems stamp times from a
// coarse clock.
const ctimeSlack = time.Second

// maxValue bounds Finding.Value.
const maxValue = 120

// Limits bounds Check's walk. Zero fields mean the defaults.
type Limits struct {
	// MaxEntries is the most directory entries the walk may read.
	MaxEntries int
	// Deadline is the most time Check may take.
	Deadline time.Duration
}

// Options control Check.
type Options struct {
	// KeepArmed reports what was planted but leaves it in place.
	KeepArmed bool
	// Limits bound the walk.
	Limits Limits
	// Ignore are paths that are cordon's own (the plan's placeholders):
	// nothing at or below them is reported.
	Ignore []string
	// KeptHow, when set, says why KeepArmed left a finding in place
	// (default: --no-disarm).
	KeptHow string
	// KeptReadOnly are the git directories and protected names of the
	// snapshot that were read-only during the run (bubblewrap's mounts:
	// plan.Guard.KeptReadOnly): a change there came from the host (an
	// editor rewriting .idea, the user's own git config), not from the
	// run, and is not reported, unless the path now holds another file or
	// directory than the one recorded (a parent renamed, and the path
	// made anew: see replaced). Nothing else is trusted: what the run
	// could write is checked.
	KeptReadOnly []string
	// Cache, when not nil, holds what earlier walks found: the walk
	// reads again only the directories changed since (see
	// globscan.Cache), and records itself in it for the caller to save.
	Cache *globscan.Cache
	// TreeUnchanged says that the run added no name to any directory
	// and changed no file's permissions (the caller counted every call
	// that could, from a filter installed before the command started:
	// monitor.Stats.TreeChanges), and that the Snapshot was given every
	// git directory and protected name the roots held before the run
	// (plan.Guard.Complete). Nothing new can then be in the roots, and
	// nothing known hidden, so Check walks none of them: it checks the
	// git directories and protected names of the Snapshot (a run can
	// rewrite an existing file without creating one), where else git
	// looks and the virtual environments, as after a walk. A caller
	// that cannot tell leaves it unset.
	TreeUnchanged bool
}

// Report is what Check found.
type Report struct {
	// Findings are what the run planted, in path order.
	Findings []Finding
	// Incomplete, when set, says what was not checked and why (a bound
	// was hit, a file was too large).
	Incomplete string
	// Restored says, one line each, which directories the run had made
	// unreadable were given their owner's read and search permission back
	// so that they could be checked (see Before.unreadable).
	Restored []string
}

// Finding is one thing the run planted.
type Finding struct {
	// Path is the absolute path of the hook, config file, commondir or name.
	Path string `json:"path"`
	// Rel is Path relative to the checked root it was found under.
	Rel string `json:"rel"`
	// Kind is KindHook, KindConfig, KindCommondir, KindName, KindToolFile or KindTodo.
	Kind string `json:"kind"`
	// Key is the config key ("core.fsmonitor"), the hook's name, or
	// the protected name.
	Key string `json:"key"`
	// Value is the key's value or the link's target, truncated.
	Value string `json:"value,omitempty"`
	// Rule names what matched: "planted:core.fsmonitor",
	// "planted:diff.*.command", "planted:hook", "planted:commondir",
	// "planted:.envrc".
	Rule string `json:"rule"`
	// Disarmed reports that Check disarmed it.
	Disarmed bool `json:"disarmed"`
	// How says what was done, e.g. "commented out".
	How string `json:"how"`
}

// Warning is the finding as one line for the user, without a prefix.
func (f Finding) Warning() string {
	var what string
	switch f.Kind {
	case KindHook:
		what = "planted git hook " + safe(f.Rel)
	case KindConfig:
		what = fmt.Sprintf("planted git config %s: %s", safe(f.Rel), safe(f.Key))
		if f.Value != "" {
			what += " = " + strconv.Quote(f.Value)
		}
	case KindCommondir:
		what = fmt.Sprintf("planted git commondir %s (-> %s)", safe(f.Rel), strconv.Quote(f.Value))
	case KindToolFile:
		return venvWarning(f)
	case KindTodo:
		what = "planted git to-do " + safe(f.Rel) + " (`git rebase --continue` would run it)"
		if f.Value != "" {
			what += ": " + strconv.Quote(f.Value)
		}
	default:
		what = "planted " + safe(f.Rel) + " (it may run code when a tool opens this directory)"
		if f.Value != "" {
			what += ": " + strconv.Quote(f.Value)
		}
	}
	if f.Disarmed {
		return what + ": disarmed (" + f.How + ")"
	}
	return what + ": " + f.How
}

// safe quotes s if it holds anything a terminal might interpret.
func safe(s string) string {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '"' {
			return strconv.Quote(s)
		}
	}
	return s
}

func (l Limits) withDefaults() Limits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.Deadline <= 0 {
		l.Deadline = DefaultDeadline
	}
	return l
}

// checker is the state of one Check.
type checker struct {
	b        *Before
	opts     Options
	ignore   subpath.Set
	kept     map[string]bool // Options.KeptReadOnly
	notes    []string
	findings []Finding
	now      time.Time
}

// gitDirRef is a git directory found under a root.
type gitDirRef struct {
	root *os.Root
	base string // the root's path
	rel  string // the directory relative to the root
}

// nameRule is a protected name Check looks for: rename says whether
// Check renames a planted one or only warns.
type nameRule struct {
	glob   string
	rename bool
	tool   bool // a tool file (policy.ToolFiles): its finding shows its first setting
}

// nameRules are built from policy.ProtectedNames: shell start-up files and
// fish's configuration are only reported (renaming a user's shell files
// would surprise more than it protects: nothing in a project runs them);
// tool files (policy.ToolFiles: .cargo/config.toml, .mvn/jvm.config, ...)
// are renamed.
func nameRules() []nameRule {
	var out []nameRule
	for _, n := range policy.ProtectedNames {
		n = strings.TrimSuffix(n, "/")
		rename := !policy.ShellStartup(n) && (!strings.Contains(n, "/") || policy.ToolFileName(n))
		out = append(out, nameRule{glob: "**/" + n, rename: rename, tool: policy.ToolFileName(n)})
	}
	return out
}

// Check walks roots (absolute directories the command could write) after
// the run, finds every git directory and protected name, and reports what
// is new or changed since b: executable hooks, config keys that run a
// program (see dangerousKeys), commondir files, and protected names.
// Unless opts.KeepArmed, it disarms each: a hook loses its execute bits
// (a note NAME.cordon-disarmed beside it says how to re-arm it) or, if a
// symbolic link, is renamed; config keys are commented out; commondir and
// names are renamed to NAME.cordon-disarmed. Every file operation goes
// through an os.Root of its root, never following a symbolic link out of
// it, and the last component with O_NOFOLLOW. The walk is bounded by
// opts.Limits; what it could not check is said in Report.Incomplete. The
// error is reserved for a broken call (a nil Before).
func (b *Before) Check(roots []string, opts Options) (Report, error) {
	if b == nil {
		return Report{}, errors.New("planted: Check without a Snapshot")
	}
	lim := opts.Limits.withDefaults()
	start := time.Now()
	c := &checker{b: b, opts: opts, ignore: subpath.NewSet(opts.Ignore), kept: map[string]bool{}, now: start}
	for _, p := range opts.KeptReadOnly {
		c.kept[filepath.Clean(p)] = true
	}
	var w *walkResult
	if opts.TreeUnchanged {
		w = b.recorded(roots)
	} else {
		w = b.find(roots, lim, start, c.ignored, opts.Ignore, opts.KeepArmed, opts.Cache)
	}
	defer w.close()
	c.notes = w.notes
	restored := w.restored
	dirs, nameHits := w.dirs, w.names
	keys := make([]string, 0, len(dirs))
	for d := range dirs {
		keys = append(keys, d)
	}
	slices.Sort(keys)
	keys = slices.DeleteFunc(keys, c.ignored)
	c.checkDirs(keys, dirs, start.Add(lim.Deadline+lim.Deadline/2))
	c.checkGitLooks(w)
	var renamed []string
	for _, h := range nameHits {
		p := filepath.Join(h.ref.base, h.ref.rel)
		if c.ignored(p) || inAny(p, renamed) {
			continue
		}
		if b.names[p] {
			// It existed: what the run changed in it (possible only
			// where no mount kept it read-only, as on the Landlock-only
			// backend) is planted.
			if !c.kept[p] || c.replaced(p, h.ref) {
				c.changedName(h, &renamed)
			}
			continue
		}
		fi, err := h.ref.root.Lstat(h.ref.rel)
		if err != nil || !c.recent(fi) || emptyEntry(h.ref.root, h.ref.rel, fi) {
			continue
		}
		f := Finding{Path: p, Rel: h.ref.rel, Kind: KindName, Key: filepath.Base(p), Rule: "planted:" + filepath.Base(p)}
		if h.tool {
			f.Value = toolFileValue(h.ref.root, h.ref.rel)
		}
		switch {
		case !h.rename:
			f.How = "left in place (review it)"
		case c.opts.KeepArmed:
			f.How = c.keptHow()
		default:
			if to, err := renameAside(h.ref.root, h.ref.rel); err != nil {
				f.How = "could not disarm: " + err.Error()
			} else {
				f.Disarmed, f.How = true, "renamed to "+filepath.Base(to)
				renamed = append(renamed, p)
			}
		}
		c.findings = append(c.findings, f)
	}
	c.checkVenvs(roots)
	slices.SortStableFunc(c.findings, func(x, y Finding) int { return strings.Compare(x.Path, y.Path) })
	rep := Report{Findings: c.findings, Restored: restored}
	if len(c.notes) > 0 {
		rep.Incomplete = "not everything the run may have planted was checked: " + strings.Join(c.notes, "; ")
	}
	return rep, nil
}

// checkDirs checks the git directories keys (checkDir), from
// parallel.From of them in two goroutines, each directory by a checker of
// its own whose findings and notes join c's in the order of keys. Those
// not begun by end are named in a note.
func (c *checker) checkDirs(keys []string, dirs map[string]gitDirRef, end time.Time) {
	type checked struct {
		findings []Finding
		notes    []string
		done     bool
	}
	out := make([]checked, len(keys))
	parallel.Each(len(keys), func(i int) {
		if time.Now().After(end) {
			return
		}
		one := &checker{b: c.b, opts: c.opts, ignore: c.ignore, kept: c.kept, now: c.now}
		one.checkDir(keys[i], dirs[keys[i]])
		out[i] = checked{one.findings, one.notes, true}
	})
	late := 0
	for _, o := range out {
		if !o.done {
			late++
			continue
		}
		c.findings = append(c.findings, o.findings...)
		c.notes = append(c.notes, o.notes...)
	}
	if late > 0 {
		c.note(fmt.Sprintf("%d git directories were not checked: the check ran out of time", late))
	}
}

// maxNameEntries bounds the entries of one existing protected directory
// (.vscode, .claude, ...) that Check compares.
const maxNameEntries = 1000

// changedName reports, and unless KeepArmed renames aside, each file of
// the existing protected name h (the name itself, or the entries of a
// protected directory) that the run created or changed.
func (c *checker) changedName(h nameHit, renamed *[]string) {
	var rels []string
	fi, err := h.ref.root.Lstat(h.ref.rel)
	if err != nil {
		return
	}
	if fi.IsDir() {
		_ = fs.WalkDir(h.ref.root.FS(), filepath.ToSlash(h.ref.rel), func(p string, d fs.DirEntry, err error) error {
			if err != nil || len(rels) >= maxNameEntries {
				return fs.SkipDir
			}
			if !d.IsDir() {
				rels = append(rels, filepath.FromSlash(p))
			}
			return nil
		})
	} else {
		rels = []string{h.ref.rel}
	}
	if len(rels) >= maxNameEntries {
		c.note(fmt.Sprintf("%s has more than %d entries: only the first were compared", filepath.Join(h.ref.base, h.ref.rel), maxNameEntries))
	}
	for _, rel := range rels {
		fi, err := h.ref.root.Lstat(rel)
		if err != nil {
			continue
		}
		p := filepath.Join(h.ref.base, rel)
		if was, ok := c.b.nameFiles[p]; ok && was.same(fi) {
			continue
		}
		f := Finding{Path: p, Rel: rel, Kind: KindName, Key: filepath.Base(h.ref.rel), Rule: "planted:" + filepath.Base(h.ref.rel)}
		if h.tool {
			f.Value = toolFileValue(h.ref.root, rel)
		}
		switch {
		case !h.rename:
			f.How = "changed during the run; left in place (review it)"
		case c.opts.KeepArmed:
			f.How = c.keptHow()
		default:
			if to, err := renameAside(h.ref.root, rel); err != nil {
				f.How = "could not disarm: " + err.Error()
			} else {
				f.Disarmed, f.How = true, "changed during the run; renamed to "+filepath.Base(to)
				*renamed = append(*renamed, p)
			}
		}
		c.findings = append(c.findings, f)
	}
}

// walkResult is what find found under the roots.
type walkResult struct {
	roots []*os.Root
	bases []string             // the roots' paths
	dirs  map[string]gitDirRef // git directories by absolute path
	names []nameHit            // protected names, in path order per root
	notes []string             // what was not searched, and why
	// restored are the directories made readable again (Report.Restored).
	restored []string
}

// nameHit is a protected name found by find.
type nameHit struct {
	ref    gitDirRef
	rename bool
	tool   bool
}

func (w *walkResult) close() {
	for _, r := range w.roots {
		r.Close()
	}
}

// find walks roots for git directories and protected names, bounded by
// lim, taking from cache what has not changed since an earlier walk, or,
// when nothing changed since but at or below the paths of ignore (which
// ignored says are ignored: cordon's placeholders), that walk's result.
// Where a walk stops at its bound, the git directories b knows are still
// returned.
func (b *Before) find(roots []string, lim Limits, start time.Time, ignored func(string) bool, ignore []string, keep bool, cache *globscan.Cache) *walkResult {
	w := &walkResult{dirs: map[string]gitDirRef{}}
	names := nameRules()
	pats := []globscan.Pattern{{Glob: "**/HEAD", Descend: true}, {Glob: "**/.git", Descend: true}}
	for _, n := range names {
		pats = append(pats, globscan.Pattern{Glob: n.glob, Descend: true})
	}
	for _, root := range roots {
		root = filepath.Clean(root)
		r, err := os.OpenRoot(root)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				w.notes = append(w.notes, fmt.Sprintf("%s could not be opened (%v)", root, err))
			}
			continue
		}
		w.roots = append(w.roots, r)
		w.bases = append(w.bases, root)
		walked := false
		left := lim.Deadline - time.Since(start)
		if left <= 0 {
			w.notes = append(w.notes, fmt.Sprintf("%s was not searched: the %s bound was used up", root, lim.Deadline))
		} else {
			matches, st, err := cache.ScanPatternsIgnoring(root, pats, globscan.Limits{MaxEntries: lim.MaxEntries, MaxMatches: 1 << 20, Deadline: left}, ignore)
			for pass := 0; ; pass++ {
				notes, restored := b.unreadable(r, root, st.SkippedPaths, ignored, keep || pass >= maxRestorePasses)
				w.restored = append(w.restored, restored...)
				if len(restored) == 0 || err != nil {
					w.notes = append(w.notes, notes...)
					break
				}
				// What was made readable again is searched too (and
				// what lies unreadable below it, a level a pass).
				left = lim.Deadline - time.Since(start)
				matches, st, err = cache.ScanPatternsIgnoring(root, pats, globscan.Limits{MaxEntries: lim.MaxEntries, MaxMatches: 1 << 20, Deadline: max(left, time.Millisecond)}, ignore)
			}
			var le *globscan.LimitError
			switch {
			case errors.As(err, &le):
				w.notes = append(w.notes, fmt.Sprintf("the search of %s stopped at its bound (%s %s, after %d entries): git directories and protected names created there were not checked, except those that existed before the run",
					root, le.Bound, le.Limit, le.Entries))
			case err != nil:
				w.notes = append(w.notes, fmt.Sprintf("%s could not be searched (%v)", root, err))
			default:
				walked = true
			}
			// Whether each HEAD's directory is a git directory: a few
			// lstats apiece, from parallel.From of them in two goroutines.
			var heads []string
			for _, m := range matches {
				// A HEAD in a directory named .git: that directory is
				// matched itself, below.
				if d := filepath.Dir(filepath.FromSlash(m.Rel)); m.Pattern == "**/HEAD" && filepath.Base(d) != ".git" {
					heads = append(heads, d)
				}
			}
			isGit := make([]bool, len(heads))
			parallel.Each(len(heads), func(i int) { isGit[i] = isGitDir(r, heads[i]) })
			for i, rel := range heads {
				if isGit[i] {
					w.dirs[filepath.Join(root, rel)] = gitDirRef{r, root, rel}
				}
			}
			for _, m := range matches {
				switch m.Pattern {
				case "**/HEAD":
				case "**/.git":
					if m.IsSymlink {
						continue
					}
					if m.IsDir {
						// Any directory named .git is checked as a git
						// directory, as the plan protects it, even one git
						// would not accept yet: what the run put in it
						// runs once git does (a git init there keeps the
						// hooks it finds), and a later run that completes
						// it finds it recorded.
						rel := filepath.FromSlash(m.Rel)
						w.dirs[filepath.Join(root, rel)] = gitDirRef{r, root, rel}
						continue
					}
					if rel, ok := gitlinkTarget(r, root, filepath.FromSlash(m.Rel)); ok && isGitDir(r, rel) {
						w.dirs[filepath.Join(root, rel)] = gitDirRef{r, root, rel}
					}
				default:
					for _, n := range names {
						if n.tool && policy.ToolFileSkipped(m.Rel) {
							continue // an installed package's (see policy.ToolFileSkipDirs)
						}
						if n.glob == m.Pattern {
							w.names = append(w.names, nameHit{gitDirRef{r, root, filepath.FromSlash(m.Rel)}, n.rename, n.tool})
						}
					}
				}
			}
		}
		if !walked {
			// The git directories that existed are still checked.
			for d := range b.known {
				if rel, ok := under(root, d); ok {
					if _, seen := w.dirs[d]; !seen && gitDirLike(r, rel) {
						w.dirs[d] = gitDirRef{r, root, rel}
					}
				}
			}
		}
	}
	return w
}

// recorded is what find would find in roots after a run that created
// nothing (Options.TreeUnchanged), without a walk: the git directories
// and protected names given to Snapshot that lie in a root, and are
// still there.
func (b *Before) recorded(roots []string) *walkResult {
	w := &walkResult{dirs: map[string]gitDirRef{}}
	names := nameRules()
	var hits []string
	for p := range b.names {
		hits = append(hits, p)
	}
	slices.Sort(hits)
	for _, root := range roots {
		root = filepath.Clean(root)
		r, err := os.OpenRoot(root)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				w.notes = append(w.notes, fmt.Sprintf("%s could not be opened (%v)", root, err))
			}
			continue
		}
		w.roots = append(w.roots, r)
		w.bases = append(w.bases, root)
		for d := range b.known {
			if rel, ok := under(root, d); ok {
				if _, seen := w.dirs[d]; !seen && gitDirLike(r, rel) {
					w.dirs[d] = gitDirRef{r, root, rel}
				}
			}
		}
		for _, p := range hits {
			rel, ok := under(root, p)
			if !ok || rel == "." {
				continue
			}
			slash := filepath.ToSlash(rel)
			for _, n := range names {
				name := strings.TrimPrefix(n.glob, "**/")
				if slash != name && !strings.HasSuffix(slash, "/"+name) || n.tool && policy.ToolFileSkipped(slash) {
					continue
				}
				w.names = append(w.names, nameHit{gitDirRef{r, root, rel}, n.rename, n.tool})
				break
			}
		}
	}
	return w
}

// discover walks roots as Check does and returns the git directories and
// protected names that exist (what a plan's walk gives Snapshot; the tests
// use it in its place); incomplete says what a walk that stopped at its
// bound left out.
func discover(roots []string, lim Limits) (gitDirs, names []string, incomplete string) {
	w := Snapshot(nil, nil).find(roots, lim.withDefaults(), time.Now(), nil, nil, true, nil)
	defer w.close()
	for d := range w.dirs {
		gitDirs = append(gitDirs, d)
	}
	slices.Sort(gitDirs)
	for _, h := range w.names {
		names = append(names, filepath.Join(h.ref.base, h.ref.rel))
	}
	return gitDirs, names, strings.Join(w.notes, "; ")
}

// emptyEntry reports whether the entry rel (with its Lstat fi) is an empty
// file or an empty directory: nothing there can run, and an empty directory
// is what cordon's own placeholders are.
func emptyEntry(r *os.Root, rel string, fi fs.FileInfo) bool {
	switch {
	case fi.Mode().IsRegular():
		return fi.Size() == 0
	case fi.IsDir():
		d, err := r.Open(rel)
		if err != nil {
			return false
		}
		defer d.Close()
		names, err := d.Readdirnames(1)
		return len(names) == 0 && err != nil
	}
	return false
}

// keptHow returns Finding.How for what KeepArmed left in place.
func (c *checker) keptHow() string {
	if c.opts.KeptHow != "" {
		return c.opts.KeptHow
	}
	return keptHow
}

// keptHow is Finding.How when KeepArmed left it in place.
const keptHow = "left armed (--no-disarm): review it before running git or opening the directory"

func (c *checker) note(s string) { c.notes = append(c.notes, s) }

// ignored reports whether p is one of Options.Ignore or below one.
func (c *checker) ignored(p string) bool { return c.ignore.Holds(p) }

// recent reports whether fi changed after (or just before) the snapshot:
// for what the snapshot does not know, this is what tells the run's files
// from the user's (a change time cannot be set back without privilege).
func (c *checker) recent(fi fs.FileInfo) bool {
	return !statOf(fi).ctime.Before(c.b.at.Add(-ctimeSlack))
}

// under returns p relative to root if p is root or below it.
func under(root, p string) (string, bool) {
	return subpath.Rel(filepath.Clean(root), filepath.Clean(p))
}

// inAny reports whether p is below one of dirs.
func inAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if subpath.Below(p, d) {
			return true
		}
	}
	return false
}

// isGitDir reports whether rel (under r) is a git directory
// (policy.GitDirBy). rel is looked up once (a workspace of many
// repositories asks of each), and the names in it.
func isGitDir(r *os.Root, rel string) bool {
	d, err := r.OpenRoot(rel)
	if err != nil {
		return false
	}
	defer d.Close()
	return policy.GitDirBy(d.Lstat)
}

// gitDirLike reports whether rel is checked as a git directory: one git
// accepts (isGitDir), or any directory named .git (see find).
func gitDirLike(r *os.Root, rel string) bool {
	if filepath.Base(rel) == ".git" {
		fi, err := r.Lstat(rel)
		return err == nil && fi.IsDir()
	}
	return isGitDir(r, rel)
}

// gitlinkTarget reads a .git file ("gitdir: PATH") and returns its target
// relative to the root, if it lies inside it.
func gitlinkTarget(r *os.Root, root, rel string) (string, bool) {
	data, err := readSmall(r, rel, maxSmall)
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	t, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", false
	}
	t = strings.TrimSpace(t)
	if !filepath.IsAbs(t) {
		t = filepath.Join(root, filepath.Dir(rel), t)
	}
	return under(root, filepath.Clean(t))
}

// readSmall reads up to max bytes of rel, never through a symbolic link at
// its last component.
func readSmall(r *os.Root, rel string, max int64) ([]byte, error) {
	f, err := r.OpenFile(rel, os.O_RDONLY|oNoFollow|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	return io.ReadAll(io.LimitReader(f, max))
}
