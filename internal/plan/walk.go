package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/policy"
)

// protRules are the policy's Protected rules sorted by how a backend finds
// them (see policy.Protected).
type protRules struct {
	// git is set when git directories are protected (a rule names .git).
	git bool
	// anyDepth are the names protected wherever they appear ("**/NAME").
	anyDepth []nameRule
	// rootOnly are the paths protected only at each writable root's top.
	rootOnly []nameRule
}

// nameRule is one protected name or root-relative path.
type nameRule struct {
	rule string // as written in the policy
	rel  string // slash-separated, without a trailing "/"
	dir  bool
}

func parseProtected(rules []string) protRules {
	var pr protRules
	for _, r := range rules {
		rel := strings.TrimSuffix(r, "/")
		any := strings.HasPrefix(rel, "**/")
		rel = strings.TrimPrefix(rel, "**/")
		if rel == ".git" || strings.HasPrefix(rel, ".git/") {
			pr.git = true
			continue
		}
		if rel == "" || policy.IsGlob(rel) {
			continue // only git rules use patterns inside
		}
		n := nameRule{rule: r, rel: rel, dir: strings.HasSuffix(r, "/")}
		if any {
			pr.anyDepth = append(pr.anyDepth, n)
		} else {
			pr.rootOnly = append(pr.rootOnly, n)
		}
	}
	return pr
}

// Walk patterns that find git directories: a directory holding HEAD (and
// objects/ or commondir) is one, whatever its name, and so is any directory
// named .git; a .git that is a file is a gitlink.
const (
	patHEAD = "**/HEAD"
	patGit  = "**/.git"
)

// tree is what the one walk of a root found.
type tree struct {
	denied   []globscan.Match // relative deny globs
	gitDirs  []string         // git directories
	gitlinks []string         // .git files
	names    []nameMatch      // existing protected names
	// unlisted are the directories the walk could not list (permission
	// denied): what they hold was not searched, so each is hidden whole
	// (see unlistedNote).
	unlisted []string
	// dirs is the number of directories the walk saw.
	dirs int
}

// nameMatch is an existing path that a protected name rule matched.
type nameMatch struct {
	path string
	rule nameRule
}

// walkTree walks root once for the relative deny globs and, when the root
// is writable, for what must be protected in it: git directories at any
// depth, gitlinks and the protected names. Going over the walk's bound is
// an error: a partial list of secrets or repositories is not safe to act on.
// The walk takes what has not changed since an earlier one from cache (see
// globscan.Cache; nil walks everything).
func walkTree(root string, denyGlobs []string, pr protRules, writable bool, lim globscan.Limits, cache *globscan.Cache) (*tree, error) {
	var pats []globscan.Pattern
	for _, g := range denyGlobs {
		pats = append(pats, globscan.Pattern{Glob: g})
	}
	byGlob := map[string]nameRule{}
	if writable {
		if pr.git {
			pats = append(pats, globscan.Pattern{Glob: patHEAD, Descend: true}, globscan.Pattern{Glob: patGit, Descend: true})
		}
		for _, n := range pr.anyDepth {
			g := "**/" + n.rel
			byGlob[g] = n
			pats = append(pats, globscan.Pattern{Glob: g, Descend: true})
		}
	}
	t := &tree{}
	if len(pats) == 0 {
		return t, nil
	}
	matches, st, err := cache.ScanPatterns(root, pats, lim)
	if err != nil {
		return nil, err
	}
	t.dirs = st.Dirs
	if st.Skipped > len(st.SkippedPaths) {
		// Not all of them are known: none can be left half-searched.
		return nil, fmt.Errorf("%d directories cannot be listed, so they cannot be searched (the first: %s): make them readable (chmod u+r) or move them out", st.Skipped, st.SkippedPaths[0])
	}
	for _, d := range st.SkippedPaths {
		// Skipped also are those gone or replaced since their parent
		// was listed: only the unreadable directories are hidden.
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			t.unlisted = append(t.unlisted, d)
		}
	}
	isDeny := map[string]bool{}
	for _, g := range denyGlobs {
		isDeny[g] = true
	}
	for _, m := range matches {
		switch {
		case isDeny[m.Pattern]:
			t.denied = append(t.denied, m)
		case m.Pattern == patHEAD:
			// A directory named .git below the root is one already
			// (patGit below: the walk follows no link, so it reached
			// HEAD through the directory itself, which it matched): only
			// the root itself, bare repositories and the like are looked
			// at (200 nested repositories: 600 lstats a run).
			d := filepath.Dir(m.Path)
			if dotGit := filepath.Base(d) == ".git" && strings.Contains(m.Rel, "/"); !m.IsDir && !dotGit && policy.IsGitDir(d) {
				t.gitDirs = append(t.gitDirs, d)
			}
		case m.Pattern == patGit:
			switch {
			case m.IsDir:
				// Any directory named .git is protected as one, even one
				// git itself would not accept yet.
				t.gitDirs = append(t.gitDirs, m.Path)
			case !m.IsSymlink:
				t.gitlinks = append(t.gitlinks, m.Path)
			}
		default:
			if n, ok := byGlob[m.Pattern]; ok {
				if policy.ToolFileName(n.rel) && policy.ToolFileSkipped(filepath.ToSlash(m.Rel)) {
					continue // an installed package's (see policy.ToolFileSkipDirs)
				}
				t.names = append(t.names, nameMatch{path: m.Path, rule: n})
			}
		}
	}
	slices.Sort(t.gitDirs)
	t.gitDirs = slices.Compact(t.gitDirs)
	return t, nil
}

// walkRoot walks root once (see walkTree), ignoring deny-glob matches
// inside the trees of skipped (policy.DenyGlobSkipped) that lie below
// root; or, when root is not a directory and not writable (a read path
// that is a file), denies root itself if policy.Policy.DenyGlobForFile
// says so.
// It returns nil for a root that is missing or not walked.
func walkRoot(p *policy.Policy, root string, skipped, denyGlobs []string, pr protRules, writable bool, lim globscan.Limits, cache *globscan.Cache) (*tree, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, nil
	}
	if fi.IsDir() {
		t, err := walkTree(root, denyGlobs, pr, writable, lim, cache)
		if err != nil {
			return nil, err
		}
		var below []string
		for _, s := range skipped {
			if s != root && policy.Within(s, root) {
				below = append(below, s)
			}
		}
		if len(below) > 0 {
			t.denied = slices.DeleteFunc(t.denied, func(m globscan.Match) bool { return policy.CoveredBy(m.Path, below) })
			t.unlisted = slices.DeleteFunc(t.unlisted, func(d string) bool { return policy.CoveredBy(d, below) })
		}
		return t, nil
	}
	if writable {
		return nil, nil
	}
	g := p.DenyGlobForFile(root)
	if g == "" {
		return nil, nil
	}
	return &tree{denied: []globscan.Match{{Path: root, Rel: filepath.Base(root), Pattern: g}}}, nil
}

// unlistedNote is the run note for the directories of trees that could
// not be listed and are hidden whole, but those hide says are not, or "".
func unlistedNote(trees map[string]*tree, hide func(string) bool) string {
	var all []string
	for _, t := range trees {
		if t != nil {
			all = append(all, slices.DeleteFunc(slices.Clone(t.unlisted), func(d string) bool { return !hide(d) })...)
		}
	}
	if len(all) == 0 {
		return ""
	}
	slices.Sort(all)
	more, it := "", "it"
	if len(all) > 1 {
		it = "them"
	}
	if len(all) > 3 {
		more = fmt.Sprintf(" and %d more", len(all)-3)
		all = all[:3]
	}
	return fmt.Sprintf("%s%s cannot be listed, so the deny rules could not search %s%s", strings.Join(all, ", "), more, it, unlistedHidden)
}

// unlistedHidden ends unlistedNote.
const unlistedHidden = ": hidden whole in this run (make a directory readable, chmod u+r, to use it)"

// denyScanNote says, for --explain, where the relative deny globs were
// searched: the roots of trees, in the order of roots; "" when the policy
// has no relative deny glob.
func denyScanNote(p *policy.Policy, roots []string, trees map[string]*tree) string {
	var globs, searched []string
	for _, d := range p.Deny {
		if !filepath.IsAbs(d) {
			globs = append(globs, d)
		}
	}
	for _, r := range roots {
		if _, ok := trees[r]; ok && !slices.Contains(searched, r) {
			searched = append(searched, r)
		}
	}
	if len(globs) == 0 {
		return ""
	}
	return fmt.Sprintf("relative deny globs (%s) are searched in %s; not in the system directories (%s) nor in the profiles' home tool caches (~/go/pkg/mod, ~/.npm, ...)",
		strings.Join(globs, " "), strings.Join(searched, " "), strings.Join(policy.SystemReads, " "))
}
