package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Protected are the rules for paths that stay read-only in every profile,
// relative to each writable root, because code placed there runs later on
// the host. A leading "**/" matches at any depth; a trailing "/" marks a
// directory (everything below it is protected too).
//
// Git finds configuration and hooks through more files than .git/config and
// .git/hooks (see gitrepository-layout(5)): commondir redirects the whole
// common directory, config.worktree adds configuration, a worktree's
// commondir and gitdir tie it to its repository, and every submodule has a
// git directory of its own under .git/modules. GitDirProtected lists those
// entries for any git directory (a .git, a submodule's, a bare or separate
// one); the "**/.git/..." rules below are the same entries by path, as the
// file tools match them. A ".git" that is a file (a gitlink: a worktree or a
// submodule checkout) is protected so it cannot be pointed elsewhere; a .git
// directory is pinned instead, so it cannot be renamed away from its
// read-only entries. The read-only rows of ToolFiles (.npmrc,
// .cargo/config.toml, .mvn/jvm.config, ...) are added to it at start-up.
var Protected = []string{
	"**/.git/config",
	"**/.git/config.worktree",
	"**/.git/commondir",
	"**/.git/hooks/",
	"**/.git/worktrees/*/commondir",
	"**/.git/worktrees/*/gitdir",
	"**/.git/worktrees/*/config.worktree",
	"**/.git/modules/**/config",
	"**/.git/modules/**/config.worktree",
	"**/.git/modules/**/commondir",
	"**/.git/modules/**/gitdir",
	"**/.git/modules/**/hooks/",
	"**/.git",
	"**/.envrc",
	"**/.vscode/",
	"**/.idea/",
	"**/.claude/",
	"**/.mcp.json",
	"**/.cursor/",
	"**/.codex/",
	"**/.gemini/",
	"**/.bashrc",
	"**/.bash_profile",
	"**/.bash_login",
	"**/.bash_logout",
	"**/.profile",
	"**/.zshrc",
	"**/.zshenv",
	"**/.zprofile",
	"**/.zlogin",
	"**/.config/fish/",
	".cordon.yaml",
}

// GitDirProtected are the entries of a git directory through which git
// finds configuration or hooks; entries ending in "/" are directories.
var GitDirProtected = []string{"config", "config.worktree", "commondir", "hooks/", "gitdir"}

// ProtectedNames are the names protected wherever they appear in a
// writable tree (ProtectedAnyDepth), except the git entries; a name ending
// in "/" is a directory. ".config/fish/" is two components. The read-only
// rows of ToolFiles are added to it at start-up.
var ProtectedNames = []string{
	".envrc", ".vscode/", ".idea/", ".claude/", ".mcp.json", ".cursor/", ".codex/", ".gemini/",
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".config/fish/",
}

// HomeProtected are paths in the home directory that stay read-only, and
// are kept from being created, whenever the home directory lies inside a
// writable root (a workspace that is the home directory, --allow-write ~):
// directories on the user's PATH, services and autostart entries, git's
// global configuration, and cordon's own configuration and state. They are
// deny_write entries of every profile.
var HomeProtected = []string{
	// Directories on PATH.
	"${HOME}/.local/bin",
	"${HOME}/bin",
	"${HOME}/.cargo/bin",
	// Services, autostart and session start-up.
	"${HOME}/.config/systemd",
	"${HOME}/.config/autostart",
	"${HOME}/.config/environment.d",
	"${HOME}/.local/share/applications",
	"${HOME}/.pam_environment",
	"${HOME}/.xprofile",
	"${HOME}/.xsessionrc",
	"${HOME}/.xinitrc",
	"${HOME}/.bash_aliases",
	"${HOME}/.inputrc",
	// More directories on PATH (language and version managers' bins and
	// shims), and scripts the shell start-up files source.
	"${HOME}/go/bin",
	"${HOME}/.bun/bin",
	"${HOME}/.deno/bin",
	"${HOME}/.yarn/bin",
	"${HOME}/.volta/bin",
	"${HOME}/.local/share/pnpm",
	"${HOME}/.pyenv/shims",
	"${HOME}/.asdf/shims",
	"${HOME}/.asdf/plugins",
	"${HOME}/.local/share/mise",
	"${HOME}/.nvm/nvm.sh",
	"${HOME}/.sdkman/bin",
	"${HOME}/.rustup",
	// Tools whose configuration runs programs.
	"${HOME}/.gitconfig",
	"${HOME}/.config/git",
	"${HOME}/.config/direnv",
	"${HOME}/.vimrc",
	"${HOME}/.vim",
	"${HOME}/.gvimrc",
	"${HOME}/.exrc",
	"${HOME}/.nvimrc",
	"${HOME}/.config/vim",
	"${HOME}/.config/nvim",
	"${HOME}/.local/share/nvim",
	"${HOME}/.config/zed",
	"${HOME}/.config/helix",
	"${HOME}/.emacs",
	"${HOME}/.emacs.d",
	"${HOME}/.tmux.conf",
	"${HOME}/.config/tmux",
	"${HOME}/.config/Code/User",
	"${HOME}/.cargo/config.toml",
	"${HOME}/.cargo/config",
	"${HOME}/.gradle/init.d",
	"${HOME}/.gradle/init.gradle",
	"${HOME}/.gradle/init.gradle.kts",
	"${HOME}/.gradle/gradle.properties",
	"${HOME}/.mavenrc",
	"${HOME}/.m2/settings.xml",
	"${HOME}/.m2/toolchains.xml",
	"${HOME}/.m2/extensions.xml",
	"${HOME}/.sbt",
	"${HOME}/.bazelrc",
	// The home's files of the tools in ToolFiles.
	"${HOME}/.npmrc",
	"${HOME}/.yarnrc",
	"${HOME}/.yarnrc.yml",
	"${HOME}/.bunfig.toml",
	"${HOME}/.config/.bunfig.toml",
	"${HOME}/.config/mise",
	"${HOME}/.tool-versions",
	"${HOME}/.pre-commit",
	"${HOME}/.pdbrc",
	"${HOME}/.irbrc",
	"${HOME}/.pryrc",
	"${HOME}/.gdbinit",
	"${HOME}/.lldbinit",
	// Programs that other configuration names: ssh's ProxyCommand and
	// LocalCommand, docker's credential helpers and CLI plugins,
	// kubectl's exec plugins, gh's "!" aliases and extensions. Most lie
	// in denied directories too; these hold when a policy lifts the deny.
	"${HOME}/.ssh/config",
	"${HOME}/.docker/config.json",
	"${HOME}/.docker/cli-plugins",
	"${HOME}/.kube/config",
	"${HOME}/.config/gh/config.yml",
	"${HOME}/.local/share/gh/extensions",
	"${HOME}/.config/pip",
	"${HOME}/.pip",
	// The go command's own settings (go env -w): GOFLAGS=-toolexec=...
	// or CC there run a program at the next build on the host.
	"${HOME}/.config/go/env",
	// Python's user site: a .pth file or sitecustomize.py there runs at
	// every start of the host's Python; IPython's start-up scripts.
	"${HOME}/.local/lib",
	"${HOME}/.ipython",
}

// AskFirst are the protected names whose tool asks the user before it
// trusts a new one, each with the tool and how it asks: missing, they get
// no placeholder (an empty directory in the agent's listing, where a file
// belongs, hides nothing and only confuses), and one the run creates is
// renamed aside after it (package planted). The other protected names
// missing at the top of a writable root keep their placeholder where a
// tool on the host reads them without asking: the editors' and agents'
// directories, and the shell start-up files in the home directory (at the
// top of any other root no shell reads them: they get none either, and
// one the run creates is reported). Where the user's settings make the
// tool trust a new one without asking (package autotrust), the name keeps
// a placeholder after all. docs/configuration.md lists each name.
var AskFirst = map[string]string{
	".envrc":    "direnv loads a new or changed .envrc only after `direnv allow`",
	".mcp.json": "Claude Code asks before it starts a server that a project's .mcp.json names (unless your settings approve them all: enableAllProjectMcpServers)",
}

// ShellStartup reports whether name is a shell start-up file, which every
// shell reads (so its placeholder in the home directory is an empty file).
func ShellStartup(name string) bool {
	switch name {
	case ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
		".zshrc", ".zshenv", ".zprofile", ".zlogin":
		return true
	}
	return false
}

// ProtectedBy returns the rule of rules (see Protected) that protects the
// slash-separated path rel, relative to a writable root, or "". A rule
// protects the path it matches; a directory rule also everything below
// it. rel itself need not exist: creating a protected path is refused like
// writing it.
func ProtectedBy(rules []string, rel string) string {
	rel = strings.Trim(rel, "/")
	if rel == "" || rel == "." {
		return ""
	}
	parts := strings.Split(rel, "/")
	for _, r := range rules {
		pat := strings.TrimSuffix(r, "/")
		dir := strings.HasSuffix(r, "/")
		n := len(parts)
		if dir {
			// The rule's own path, or any ancestor of rel that it matches.
			n = 1
		}
		for i := len(parts); i >= n; i-- {
			if ok, _ := doublestar.Match(pat, strings.Join(parts[:i], "/")); ok {
				return r
			}
		}
	}
	return ""
}

// IsGitDir reports whether d is a git directory as git itself decides, or
// could (see GitDirBy).
func IsGitDir(d string) bool {
	return GitDirBy(func(name string) (fs.FileInfo, error) { return os.Lstat(filepath.Join(d, name)) })
}

// GitDirBy reports whether the directory whose entries lstat looks up is
// a git directory, as git decides or more: it holds HEAD (not a
// directory) and either an objects entry or a commondir file (a
// worktree's). Git tests objects (and refs) with access(2), which follows
// a link and takes an executable file as readily as a directory: so does
// this (a sandbox made a repository whose objects and refs were
// executable files; git ran the core.fsmonitor of its config). It is the
// one test of the tree, for the plan, the check after a run and the
// policy's decisions alike.
func GitDirBy(lstat func(name string) (fs.FileInfo, error)) bool {
	if fi, err := lstat("HEAD"); err != nil || fi.IsDir() {
		return false
	}
	if _, err := lstat("objects"); err == nil {
		return true
	}
	fi, err := lstat("commondir")
	return err == nil && (fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0)
}
