package plan

import (
	"os"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

// gitLooksIn returns where git looks for the repositories of gitDirs and
// gitlinks (and the workspace's, see policy.Policy.GitLooks) that lies in
// one of roots: what a command there could change.
func gitLooksIn(p *policy.Policy, gitDirs, gitlinks, roots []string) policy.GitLooks {
	all := p.GitLooks(gitDirs, gitlinks)
	in := func(paths []string) []string {
		var out []string
		for _, x := range paths {
			if policy.CoveredBy(x, roots) {
				out = append(out, x)
			}
		}
		return out
	}
	return policy.GitLooks{Hooks: in(all.Hooks), Configs: in(all.Configs)}
}

// gitLooksOutside returns where git looks for the repositories of the
// guard g (and the workspace's), hooks directories and included config
// files alike, that lies outside every one of roots and is not a guarded
// path already: mode permissive leaves the host writable there (a
// core.hooksPath = ~/.githooks, an include of ~/.gitconfig.local), so
// these are kept as the guarded paths are.
func gitLooksOutside(p *policy.Policy, g Guard, roots []string) []string {
	all := p.GitLooks(g.GitDirs, nil)
	var out []string
	for _, x := range append(all.Hooks, all.Configs...) {
		if !policy.CoveredBy(x, roots) && !slices.Contains(p.Guarded, x) {
			out = append(out, x)
		}
	}
	return out
}

// protectGitLooks keeps read-only the hooks directories and included
// config files of the guard (Guard.Git) that lie in a writable root, as
// protectGitDir does a git directory's hooks and config: an existing one
// is re-bound read-only, a missing one gets a placeholder (an empty
// directory or file), and the directories between the root and it are
// pinned, so none can be renamed away and made anew without it. The
// paths are the guard's, so that what is kept read-only is what is
// checked after the run; a builder that made no guard (yet) computes them
// the same way from trees.
func (b *bwrapBuilder) protectGitLooks(trees map[string]*tree) error {
	g := b.plan.Guard.Git
	if len(b.plan.Guard.Roots) == 0 {
		g = guardFrom(b.p, b.writableRoots(), trees, false).Git
	}
	var kept []string
	for _, set := range []struct {
		paths []string
		kind  int
		what  string
	}{{g.Hooks, phDir, "the hooks directory core.hooksPath names"}, {g.Configs, phFile, "the config file include.path names"}} {
		for _, path := range set.paths {
			root := b.writableRootOf(path)
			if root == "" || b.deniedBy(path) != "" {
				continue
			}
			kept = append(kept, path+" ("+set.what+")")
			if path == root {
				// Fail closed, and say why nothing there can be written.
				b.plan.RunNotes = append(b.plan.RunNotes, path+" is read-only in this run: it is "+set.what+", and git runs hooks from every file there")
			}
			b.pinBetween(root, path, false)
			if _, err := os.Lstat(path); err == nil {
				if err := b.protectExisting(path); err != nil {
					return err
				}
				continue
			}
			b.placeholder(root, path, set.kind)
		}
	}
	if len(kept) > 0 {
		b.plan.Notes = append(b.plan.Notes, "read-only because git runs code from them: "+strings.Join(kept, ", "))
	}
	return nil
}
