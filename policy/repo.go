package policy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/host/gitrepo"
)

// Repo is what a Policy adds for the git repository the workspace belongs
// to, when git inside the sandbox needs paths outside the workspace: the
// workspace is a sub-directory of a repository (git needs the whole work
// tree, or it takes every file outside the workspace for deleted, and the
// git directory above), a linked worktree (its git directory lies in the
// main repository's .git/worktrees, beside the objects and refs it
// shares), or a submodule checkout (its git directory lies in the
// superproject's .git/modules). See grantRepo.
type Repo struct {
	// Kind says what the workspace is: "sub-directory", "linked
	// worktree", "submodule checkout", or a sub-directory of one of these.
	Kind string `yaml:"kind" json:"kind"`
	// WorkTree is the top of the repository's work tree.
	WorkTree string `yaml:"work_tree" json:"work_tree"`
	// GitDir is the repository's git directory.
	GitDir string `yaml:"git_dir" json:"git_dir"`
	// CommonDir is the common directory (objects, refs, config, hooks)
	// when it is not GitDir: a linked worktree's main .git.
	CommonDir string `yaml:"common_dir,omitempty" json:"common_dir,omitempty"`
	// Read are the paths added to Policy.Read: the work tree above the
	// workspace, read-only.
	Read []string `yaml:"read,omitempty" json:"read,omitempty"`
	// Write are the paths added to Policy.Write: the git directory and
	// the common directory. Every backend keeps their config and hooks
	// read-only as it does a .git inside the workspace.
	Write []string `yaml:"write,omitempty" json:"write,omitempty"`
	// Refused, when set, says why nothing was added although git inside
	// would need it; Read and Write are then empty.
	Refused string `yaml:"refused,omitempty" json:"refused,omitempty"`
	// Worktree is set for a linked worktree, whose git directory lies in
	// CommonDir/worktrees: a backend that cannot keep CommonDir's config
	// and hooks read-only inside a writable CommonDir may grant only what
	// git writes there (see WorktreeWrites).
	Worktree bool `yaml:"-" json:"-"`
}

// Summary says, in a sentence, what the workspace is and what was added
// or refused. When git directories were made writable, they come last, so
// that a backend can add what stays read-only in them.
func (r *Repo) Summary() string {
	if r.Refused != "" {
		return r.Refused
	}
	repo := r.GitDir
	if r.CommonDir != "" {
		repo = r.CommonDir
	}
	var what string
	switch k := r.Kind; {
	case k == "sub-directory":
		what = "a sub-directory of the git repository at " + r.WorkTree
	case strings.HasPrefix(k, "sub-directory of a "):
		what = fmt.Sprintf("a sub-directory of the %s %s of the git repository %s", strings.TrimPrefix(k, "sub-directory of a "), r.WorkTree, repo)
	default:
		what = fmt.Sprintf("a %s of the git repository %s", k, repo)
	}
	var parts, gitRead []string
	for _, d := range r.Read {
		if d == r.WorkTree {
			parts = append(parts, d+" is readable (not writable), so that git sees the whole work tree")
		} else {
			gitRead = append(gitRead, d)
		}
	}
	if len(gitRead) > 0 {
		parts = append(parts, strings.Join(gitRead, " and ")+are(gitRead)+" readable, as the workspace is")
	}
	if len(r.Write) > 0 {
		parts = append(parts, strings.Join(r.Write, " and ")+are(r.Write)+" writable")
	}
	return fmt.Sprintf("the workspace is %s: %s", what, strings.Join(parts, "; "))
}

// are is the verb for a list of paths.
func are(paths []string) string {
	if len(paths) > 1 {
		return " are"
	}
	return " is"
}

// WorktreeWrites are the directories of a linked worktree's repository
// that git writes for status, add, commit, and the like: the worktree's
// own git directory, and the objects, refs and logs of the common
// directory. Its config, hooks, packed-refs and the other worktrees'
// directories are not among them.
func (r *Repo) WorktreeWrites() []string {
	c := r.CommonDir
	if c == "" {
		c = r.GitDir
	}
	return []string{r.GitDir, filepath.Join(c, "objects"), filepath.Join(c, "refs"), filepath.Join(c, "logs")}
}

// grantRepo finds the git repository the workspace of p belongs to (see
// package gitrepo) and adds to p what git inside needs outside the
// workspace: the work tree above a sub-directory workspace, read-only;
// the git directory (and common directory) with the workspace's own
// access, writable when the workspace is. It adds nothing when mode is
// off or nothing is needed, and refuses (Repo.Refused, nothing added)
// when the git directory is not tied back to the work tree (a .git file
// that a command could have planted, naming another repository), or
// when a path to add is denied, the root directory, the home directory
// or one of its ancestors.
func grantRepo(p *Policy, h Host) {
	if p.Mode == ModeOff || runtime.GOOS == "windows" {
		// Windows: the Job Object confines no file, so nothing needs to be
		// made visible for git (and gitrepo.Find is not built there).
		return
	}
	ws := p.Workspace
	r, err := gitrepo.Find(ws)
	if err != nil {
		p.Repo = &Repo{Refused: fmt.Sprintf("the workspace's git repository: %v; nothing outside the workspace was made visible for git", err)}
		return
	}
	if r == nil {
		return
	}
	p.GitCommonDir = r.CommonDir
	writes := p.HostWrites()
	visible := append(slices.Clone(p.Read), writes...)
	g := &Repo{Kind: repoKind(r, ws), WorkTree: r.Top, GitDir: r.GitDir, Worktree: r.Link == gitrepo.LinkWorktree}
	if r.CommonDir != r.GitDir {
		g.CommonDir = r.CommonDir
	}
	if r.Top != ws && !CoveredBy(r.Top, visible) {
		g.Read = append(g.Read, r.Top)
	}
	gitRoots := []string{r.CommonDir}
	if !Within(r.GitDir, r.CommonDir) {
		gitRoots = []string{r.GitDir, r.CommonDir}
	}
	gitGrant := false
	wsWritable := CoveredBy(ws, writes)
	for _, d := range gitRoots {
		switch {
		case wsWritable && !CoveredBy(d, writes):
			g.Write = append(g.Write, d)
		case !wsWritable && !CoveredBy(d, visible) && !CoveredBy(d, g.Read):
			g.Read = append(g.Read, d)
		default:
			continue
		}
		gitGrant = true
	}
	if len(g.Read)+len(g.Write) == 0 {
		return
	}
	if why := refuseRepo(p, h, r, g, gitGrant); why != "" {
		g.Read, g.Write, g.Refused = nil, nil, why
		p.Repo = g
		return
	}
	p.Repo = g
	p.Read = dedup(append(p.Read, g.Read...))
	p.Write = dedup(append(p.Write, g.Write...))
}

// refuseRepo says why the paths g would add for repository r must not be
// added, or "".
func refuseRepo(p *Policy, h Host, r *gitrepo.Repo, g *Repo, gitGrant bool) string {
	const nothing = "nothing outside the workspace was made visible for git, so git inside will not find this repository"
	if gitGrant && r.Link == gitrepo.LinkNone {
		var flags []string
		for _, d := range g.Read {
			flags = append(flags, "--allow-read "+d)
		}
		for _, d := range g.Write {
			flags = append(flags, "--allow-write "+d)
		}
		return fmt.Sprintf("%s names the git directory %s, which does not name it back (%s): a .git a command could have written is not trusted, so %s; if that git directory is yours, pass %s", r.DotGit, r.GitDir, r.Unlinked, nothing, strings.Join(flags, " "))
	}
	homes := []string{h.Home}
	if real, err := filepath.EvalSymlinks(h.Home); err == nil && real != h.Home {
		homes = append(homes, real)
	}
	for _, d := range slices.Concat(g.Read, g.Write) {
		if d == "/" {
			return fmt.Sprintf("the workspace's git repository needs the root directory (work tree %s); %s", r.Top, nothing)
		}
		for _, home := range homes {
			if Within(home, d) {
				return fmt.Sprintf("the workspace's git repository needs %s, which is your home directory or contains it (work tree %s): cordon does not open it to the sandbox; %s", d, r.Top, nothing)
			}
		}
		if rule := DeniedBy(p.Deny, d); rule != "" {
			return fmt.Sprintf("the workspace's git repository needs %s, which the policy denies (%s); %s", d, rule, nothing)
		}
		if d != r.Top && Within(p.Workspace, d) {
			return fmt.Sprintf("the workspace's git directory %s contains the workspace; %s", d, nothing)
		}
	}
	return ""
}

// repoKind names what the workspace ws is in repository r.
func repoKind(r *gitrepo.Repo, ws string) string {
	k := ""
	switch r.Link {
	case gitrepo.LinkWorktree:
		k = "linked worktree"
	case gitrepo.LinkSubmodule:
		k = "submodule checkout"
	case gitrepo.LinkNone:
		k = "checkout with a .git file"
	}
	switch {
	case r.Top == ws:
		return k
	case k == "":
		return "sub-directory"
	}
	return "sub-directory of a " + k
}

// grantGitLooks adds to p.Read (and p.GitReads) where git looks for the
// workspace's repository that no read or write path shows: the hooks
// directory core.hooksPath names and the config files include.path and
// includeIf.*.path name (GitLooks), in the home (~/.githooks,
// ~/.gitconfig.local) or elsewhere. Without them git inside read another
// configuration than outside (a commit failed for want of the user.email
// an included file sets) and skipped the user's own hooks (a pre-commit
// secret scanner) without a word. They are read-only inside, as every
// read path, and relative deny globs are searched in them.
//
// Only where the policy reads the home's git configuration (the
// development and ci profiles: ~/.gitconfig, ~/.config/git), which names
// most of them; a profile that hides it hides what it includes too. A
// path is not added when it is missing, a symbolic link (GitLooks lists
// what it names too), denied, the root or the home directory or one of
// its ancestors, or when it holds the workspace.
func grantGitLooks(p *Policy, h Host) {
	if p.Mode == ModeOff || p.Mode == ModePermissive || runtime.GOOS == "windows" || p.Repo != nil && p.Repo.Refused != "" {
		return
	}
	global := []string{filepath.Join(h.Home, ".gitconfig"), filepath.Join(h.Home, ".config", "git")}
	if xdg := p.GitEnv.XDGConfigHome; xdg != "" {
		global = append(global, filepath.Join(xdg, "git"))
	}
	if g := p.GitEnv.ConfigGlobal; g != "" {
		global = append(global, g)
	}
	if !slices.ContainsFunc(global, func(g string) bool { return CoveredBy(g, p.Read) }) {
		return
	}
	homes := []string{h.Home}
	if real, err := filepath.EvalSymlinks(h.Home); err == nil && real != h.Home {
		homes = append(homes, real)
	}
	visible := append(slices.Clone(p.Read), p.HostWrites()...)
	looks := p.workspaceGitLooks()
	for _, path := range slices.Concat(looks.Hooks, looks.Configs) {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 || CoveredBy(path, visible) || slices.Contains(p.GitReads, path) {
			continue
		}
		if path == "/" || Within(p.Workspace, path) || slices.ContainsFunc(homes, func(home string) bool { return Within(home, path) }) {
			continue
		}
		if deniedBy(p.Deny, path) != "" {
			continue
		}
		p.GitReads = append(p.GitReads, path)
	}
	p.Read = dedup(append(p.Read, p.GitReads...))
}
