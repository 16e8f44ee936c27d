// Package gitrepo finds the git repository a directory belongs to, the
// way git itself does (gitrepository-layout(5); git's discovery walks up
// from the current directory for a .git, reads a .git file's "gitdir:"
// line and a git directory's commondir file), and says how the git
// directory it found is tied back to that directory.
//
// A sandbox uses it to grant git what it needs when the workspace is not
// the top of a repository (a sub-directory, a linked worktree, a
// submodule checkout), and nothing else: a .git file is only text, and
// one planted in the workspace can name any directory ("gitdir:
// /home/u/.ssh"). Find therefore checks that what a .git file names really
// is a git directory, and reports whether that git directory names the
// work tree back (a linked worktree's gitdir file, a submodule's
// core.worktree); the caller decides what to grant.
//
// Find works on descriptors: each directory on the way up is opened
// relative to the one below it, a .git file and the small files of a git
// directory are opened relative to their directory without following a
// symbolic link, and what a path names is compared by device and inode,
// never as a string. Every read is bounded in size, the walk in depth,
// and the walk stops where git stops: at the root, or at a file system
// boundary.
package gitrepo

// Link says how a repository's git directory is tied to its work tree.
type Link string

// Links, from the strongest tie to none.
const (
	// LinkDir: the work tree's .git is the git directory itself, a real
	// directory (not a symbolic link), with no commondir naming another.
	LinkDir Link = "dir"
	// LinkWorktree: the work tree's .git is a file naming
	// COMMON/worktrees/NAME, whose commondir names COMMON and whose
	// gitdir file names that .git file back (git worktree add).
	LinkWorktree Link = "worktree"
	// LinkSubmodule: the work tree's .git is a file naming a git
	// directory whose core.worktree names the work tree back (a
	// submodule's git directory under the superproject's .git/modules).
	LinkSubmodule Link = "submodule"
	// LinkNone: nothing ties the git directory to the work tree: a
	// --separate-git-dir, a .git that is a symbolic link, or a .git file
	// someone planted. Repo.Unlinked says what was checked.
	LinkNone Link = "none"
)

// Bounds of Find.
const (
	// MaxDepth is the most directories Find looks at on the way up.
	MaxDepth = 4096
	// MaxSmallFile bounds a .git file, a commondir and a gitdir file.
	MaxSmallFile = 8192
	// MaxConfig bounds the config file read for core.worktree.
	MaxConfig = 1 << 20
)

// Repo is the repository a directory belongs to. Its paths are absolute,
// with symbolic links resolved.
type Repo struct {
	// Top is the top of the work tree: the directory holding .git.
	Top string
	// DotGit is Top/.git.
	DotGit string
	// Gitfile is set when DotGit is not the git directory itself but a
	// file (or a symbolic link) naming it.
	Gitfile bool
	// GitDir is the git directory.
	GitDir string
	// CommonDir is the common directory (objects, refs, config, hooks):
	// GitDir itself unless GitDir holds a commondir file.
	CommonDir string
	// Link is how GitDir is tied to Top.
	Link Link
	// Unlinked says, for LinkNone, why no tie was found.
	Unlinked string

	viaLink bool // DotGit is a symbolic link
}
