package plan

import (
	"github.com/cordon-sandbox/cordon/backend"
	"path/filepath"
	"slices"
	"strings"
)

// GitInitHint explains, in one line, why command failed when it is a
// `git init` of a repository whose .git the bubblewrap plan pl keeps
// read-only: a missing .git is a read-only placeholder, so that no command
// can create hooks or config that run later on the host; an existing one
// has its config re-bound read-only, which git init rewrites. It returns ""
// for any other command, and for a git init elsewhere (a new directory is
// not protected) or with --bare.
func GitInitHint(pl *Plan, command []string) string {
	if pl == nil || pl.Backend != backend.Bwrap {
		return ""
	}
	dir, ok := gitInitDir(command, pl.Dir)
	if !ok {
		return ""
	}
	gitDir := filepath.Join(dir, ".git")
	switch {
	case slices.Contains(pl.PlaceholderPaths(), gitDir):
		return "git init: " + gitDir + " cannot be created inside the sandbox: cordon keeps it a read-only placeholder there, so that no command can plant git hooks or config that run later on your host; run git init outside cordon once, then run the command again"
	case slices.Contains(pl.Guard.GitDirs, gitDir) && !slices.Contains(pl.GitConfigs, filepath.Join(gitDir, "config")) && pl.Supervise == nil:
		// (With a private copy of its config, git init rewrites the
		// copy, and nothing of it needs writing back.)
		return "git init: " + dir + " is already a git repository, and git init rewrites its .git/config, which cordon keeps read-only inside the sandbox (so that no command can plant config that runs later on your host); the repository needs no git init"
	}
	return ""
}

// gitInitDir returns the directory a `git [-C DIR] init [OPTIONS] [DIR]`
// command initialises, relative paths taken from cwd; ok is false for any
// other command, for --bare, and when --git-dir or GIT_DIR-like options
// put the repository elsewhere.
func gitInitDir(command []string, cwd string) (dir string, ok bool) {
	if len(command) < 2 || filepath.Base(command[0]) != "git" {
		return "", false
	}
	dir = cwd
	args := command[1:]
	// Global options up to the subcommand.
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch a := args[0]; {
		case a == "-C" && len(args) > 1:
			dir = joinDir(dir, args[1])
			args = args[2:]
			continue
		case a == "-c" && len(args) > 1:
			args = args[2:]
			continue
		case a == "--git-dir" || strings.HasPrefix(a, "--git-dir=") || a == "--work-tree" || strings.HasPrefix(a, "--work-tree="):
			return "", false
		}
		args = args[1:]
	}
	if len(args) == 0 || args[0] != "init" {
		return "", false
	}
	args = args[1:]
	target := ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--bare":
			return "", false
		case a == "--":
			if i+1 < len(args) {
				target = args[i+1]
			}
			i = len(args)
		case a == "-b" || a == "--initial-branch" || a == "--template" || a == "--separate-git-dir" || a == "--object-format" || a == "--ref-format":
			i++ // takes a value
		case strings.HasPrefix(a, "-"):
		case target == "":
			target = a
		}
	}
	if target != "" {
		dir = joinDir(dir, target)
	}
	return dir, true
}

// joinDir resolves p against dir unless it is absolute.
func joinDir(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}
