package policy

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/cordon-sandbox/cordon/internal/gitconfig"
)

// GitLooks are the paths outside the fixed entries of a git directory
// (GitDirProtected) through which git runs code for some repositories:
// the hooks directories that core.hooksPath names, and the config files
// that include.path and includeIf.*.path name, recursively (see
// gitconfig.Locate). Paths are absolute and clean; some may not exist
// (created, git would use them).
type GitLooks struct {
	// Hooks are hooks directories other than a git directory's hooks.
	Hooks []string `json:"hooks,omitempty"`
	// Configs are included config files.
	Configs []string `json:"configs,omitempty"`
}

// GitLooks returns where git looks for the repositories of gitDirs (git
// directories), gitlinks (.git files naming one) and the workspace's
// repository (p.Repo), with the system and global config that p.GitEnv
// names. It is the one place the backends (which protect these paths
// during a run and check them after it) and the file API (which refuses
// to write them) learn them from. It reads a few small files per
// repository and never runs git.
func (p *Policy) GitLooks(gitDirs, gitlinks []string) GitLooks {
	var repos []gitconfig.Repo
	if r := p.Repo; r != nil && r.Refused == "" && r.GitDir != "" {
		repos = append(repos, gitconfig.Repo{GitDir: r.GitDir, CommonDir: r.CommonDir, WorkTree: r.WorkTree})
	}
	repos, locs := gitconfig.LocateFound(repos, gitDirs, gitlinks, p.GitEnv)
	own := map[string]bool{} // what GitDirProtected covers
	for _, r := range repos {
		for _, d := range []string{r.GitDir, r.CommonDir} {
			if d != "" {
				for _, e := range GitDirProtected {
					own[filepath.Join(d, e)] = true
				}
			}
		}
	}
	var out GitLooks
	for _, l := range locs {
		if l.HooksPath && !own[l.HooksDir] && !slices.Contains(out.Hooks, l.HooksDir) {
			out.Hooks = append(out.Hooks, l.HooksDir)
		}
		for _, c := range l.Included {
			if !own[c] && !slices.Contains(out.Configs, c) {
				out.Configs = append(out.Configs, c)
			}
		}
	}
	slices.Sort(out.Hooks)
	slices.Sort(out.Configs)
	return out
}

// workspaceGitLooks is GitLooks for the workspace's repository alone: its
// .git (a directory or a gitlink) and p.Repo.
func (p *Policy) workspaceGitLooks() GitLooks {
	if p.Mode == ModeOff || p.Workspace == "" {
		return GitLooks{}
	}
	var dirs, links []string
	dotGit := filepath.Join(p.Workspace, ".git")
	if fi, err := os.Lstat(dotGit); err == nil {
		switch {
		case fi.IsDir():
			dirs = append(dirs, dotGit)
		case fi.Mode().IsRegular():
			links = append(links, dotGit)
		}
	}
	return p.GitLooks(dirs, links)
}

// rule returns the rule under which git runs code from path (a hooks
// directory's entry, an included config file), as a Decision's rule; or "".
func (g GitLooks) rule(path string) string {
	for _, h := range g.Hooks {
		if Within(path, h) {
			return "git config: core.hooksPath names " + h
		}
	}
	for _, c := range g.Configs {
		if path == c {
			return "git config: include.path names " + c
		}
	}
	return ""
}
