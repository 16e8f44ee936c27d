package plan

import (
	"fmt"
	"github.com/cordon-sandbox/cordon/backend"
	"os"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

// What the backends do with policy.Repo, the paths a policy adds for the
// workspace's git repository (a sub-directory of a repository, a linked
// worktree, a submodule checkout):
//
//   - The work tree above the workspace is a read root like any other,
//     and it is walked for deny globs like the workspace (**/.env there
//     is masked too).
//   - The git directories added are writable roots like any other, so
//     the walk finds each of them as a git directory and protects its
//     config, hooks and the rest exactly as a .git inside the workspace;
//     only the placeholders for .envrc, .vscode and the like at their top
//     are left out (see protect).
//   - The Landlock-only backend cannot carve config and hooks out of a
//     writable directory. For a linked worktree it grants only what git
//     writes (policy.Repo.WorktreeWrites), so those stay read-only there
//     too; for a sub-directory or a submodule, git needs to create files
//     at the top of the git directory, so the whole of it is writable,
//     which is said as degraded, and the check after the run disarms what
//     was planted there as it does in the workspace's own .git.

// repoGitRoot reports whether the writable root r is a git directory that
// the policy made writable for the workspace's git repository.
func repoGitRoot(p *policy.Policy, r string) bool {
	return p.Repo != nil && slices.Contains(p.Repo.Write, r)
}

// landlockRepoWrites returns writes with a linked worktree's common
// directory replaced by what git writes there (policy.Repo.WorktreeWrites),
// and the directories that then stay readable only; nil, nil when writes
// are kept as they are.
func landlockRepoWrites(p *policy.Policy, writes []string) (narrowed, readOnly []string) {
	r := p.Repo
	if r == nil || !r.Worktree || r.CommonDir == "" || !slices.Contains(r.Write, r.CommonDir) || !slices.Contains(writes, r.CommonDir) {
		return nil, nil
	}
	narrowed = slices.DeleteFunc(slices.Clone(writes), func(w string) bool { return w == r.CommonDir })
	for _, d := range r.WorktreeWrites() {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && !policy.CoveredBy(d, narrowed) {
			narrowed = append(narrowed, d)
		}
	}
	return narrowed, []string{r.CommonDir}
}

// repoNotes adds to pl what it must say about p.Repo: a note printed once
// at run time (and by --explain), and on the Landlock-only backend
// without its supervisor (mode permissive) what stays writable in a git
// directory outside the workspace.
func repoNotes(pl *Plan, p *policy.Policy) {
	r := p.Repo
	if r == nil || r.Refused != "" {
		return
	}
	note := r.Summary()
	switch {
	case len(r.Write) == 0:
	case pl.Backend == backend.Bwrap || pl.Backend == backend.Landlock && pl.Supervise != nil && !r.Worktree:
		// On the Landlock-only backend its supervisor refuses them.
		note += " except the config, hooks and other files git runs code from, as a .git inside the workspace is"
	case pl.Backend == backend.Landlock && r.Worktree:
		w := r.WorktreeWrites()
		note += fmt.Sprintf(" in part: without bubblewrap only %s and %s are, so that its config, hooks and packed-refs stay read-only (what rewrites packed-refs fails, such as deleting a branch)", strings.Join(w[:len(w)-1], ", "), w[len(w)-1])
	case pl.Backend == backend.Landlock:
		pl.Degraded = append(pl.Degraded, fmt.Sprintf("the git directory %s outside the workspace is writable as a whole without bubblewrap, its config and hooks too (git must create files at its top); what the command plants there is disarmed after the run", strings.Join(r.Write, " and ")))
	}
	pl.RunNotes = append(pl.RunNotes, note)
}
