package launch

import (
	"fmt"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/subpath"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/result"
)

// gitConfigDirs are the git directories whose config the sandbox keeps
// read-only and a git command inside may try to write: those the plan's
// walk found in the writable roots, and the workspace repository's git
// and common directories when they lie outside the workspace.
func gitConfigDirs(p *policy.Policy, pl *plan.Plan) []string {
	dirs := append([]string(nil), pl.Guard.GitDirs...)
	if r := p.Repo; r != nil && r.Refused == "" {
		dirs = append(dirs, r.GitDir, r.CommonDir)
	}
	seen := map[string]bool{"": true}
	out := dirs[:0]
	for _, d := range dirs {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// gitConfigRefusedLine is the one line a run says about the config files
// (gitWrites.finish) a git command could not write; exited0 says that the
// command exited 0 all the same, and cordon with status 1.
func gitConfigRefusedLine(files []string, workspace string, exited0 bool) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f
		if rel, ok := subpath.Rel(workspace, f); ok {
			names[i] = rel
		}
	}
	s := fmt.Sprintf("a git command could not write %s: cordon keeps a git directory's config read-only in the sandbox, as keys there run programs on the host (core.fsmonitor, core.hooksPath, ...); run what changes it (git config, git remote add, git branch -u, git submodule add, init or update) outside the sandbox",
		strings.Join(names, ", "))
	if exited0 {
		s += fmt.Sprintf("; exit status %d, though the command exited 0", result.ExitGitConfigRefused)
	}
	return s
}
