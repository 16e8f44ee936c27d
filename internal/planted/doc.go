// Package planted finds and disarms what a confined run planted in its
// writable trees to run later on the host: executable git hooks, git
// config keys that run a program (core.fsmonitor, aliases with "!", diff
// and merge drivers, ...), commondir files that redirect a git directory,
// and protected names such as .envrc, .vscode/ or a tool's file
// (.npmrc, .cargo/config.toml: policy.ToolFiles); and, in the Python
// virtual environments near the top of each root, a .pth file or
// sitecustomize.py that no installed distribution's RECORD lists, and an
// activate script the run changed.
//
// The launcher takes a Snapshot of the git directories and protected names
// that exist just before the command starts, and calls Check after it
// ended. Check walks the writable roots again (bounded in entries and
// time), compares every git directory with the snapshot, and reports and
// disarms only what appeared or changed during the run: a hook loses its
// execute bits, a config key is commented out, a commondir or a protected
// name is renamed aside. What the user had before the run is never
// touched. After a run that created nothing and changed no permission
// (Options.TreeUnchanged) it
// walks nothing, and checks what the snapshot holds.
//
// The package owns the comparison and the disarming, the table of git
// config keys that run programs and the list of safe ones, and
// MergeConfig, which takes into a host's config only the safe keys a run
// changed in its private copy (git's format is package gitconfig's). It must not decide policy (what
// is writable, which paths are protected: that is package policy and
// package plan), print anything, or write the audit log: it returns a
// Report and the caller tells the user. It never follows a symbolic link
// out of a checked root.
package planted
