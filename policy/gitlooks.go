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
	// The system and global configs are among every repository's:
	// each path is looked at once (600 lstats a run with 200
	// repositories otherwise).
	targets := map[string]string{}
	target := func(path string) (string, bool) {
		t, done := targets[path]
		if !done {
			t, _ = linkTarget(path)
			targets[path] = t
		}
		return t, t != ""
	}
	add := func(list *[]string, x string) {
		if !own[x] && !slices.Contains(*list, x) {
			*list = append(*list, x)
		}
	}
	for _, l := range locs {
		if l.HooksPath {
			add(&out.Hooks, l.HooksDir)
		}
		// A hooks directory or an included file that is a symbolic
		// link (.git/hooks -> ../scripts/hooks) is read through it: what
		// it names is where git looks too, and is checked as such.
		if t, ok := target(l.HooksDir); ok {
			add(&out.Hooks, t)
		}
		for _, c := range l.Included {
			add(&out.Configs, c)
		}
		// Every config file git reads, ~/.gitconfig linked into a
		// dotfiles repository included.
		for _, c := range l.Configs {
			if t, ok := target(c); ok {
				add(&out.Configs, t)
			}
		}
	}
	slices.Sort(out.Hooks)
	slices.Sort(out.Configs)
	return out
}

// linkTarget is what path names when it is a symbolic link.
func linkTarget(path string) (string, bool) {
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return "", false
	}
	t, err := filepath.EvalSymlinks(path)
	return t, err == nil && t != path
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
