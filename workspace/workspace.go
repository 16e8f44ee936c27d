// Package workspace is cordon's confined file API: read, write, edit by
// unique string or by line anchors, list, find, grep, info and mkdir over one
// or more roots (the workspace first, plus extra read-only or read-write
// roots), routed by path like a mount table.
//
// # Use
//
// It is for Go agent hosts whose own file tools must obey the same policy
// as the commands cordon runs (it is what cordon's MCP server serves). Load
// a policy with policy.Load (or take a sandbox.Sandbox's, Sandbox.Policy),
// open it with New, and call the FS's methods with paths relative to the
// workspace (or absolute inside a root):
//
//	p, err := policy.Load(policy.Options{Host: host, Workspace: dir})
//	fsys, err := workspace.New(p)
//	defer fsys.Close()
//	res, err := fsys.ReadFile("main.go", 1, 50) // lines 1-50, with anchors
//	_, err = fsys.EditFile("main.go", "old text", "new text")
//
// A refusal is a *Violation (its text starts "sandbox violation:", its Kind
// says why: a denied secret, a protected path through which code runs
// later on the host, a path outside every root, a symbolic link leaving
// one, ...); any other failure is a *PathError. Both name the path as the
// caller gave it and never hold a file's content. An FS is safe for
// concurrent use. See Example.
//
// # One resolution, by descriptor
//
// Every operation resolves its path once, by descriptor, and decides on
// what it opened; a path is never checked as a string and then resolved
// again (a check of one path and an open of another is what a concurrent
// swap of a directory with a symbolic link exploits: renameat2
// RENAME_EXCHANGE of a directory a with a link to .git, while write_file
// writes a/config). Each root is opened once, by New. The walk (walkPath)
// starts at the root's descriptor and, for each component:
//
//   - ".." pops the stack of directories the walk holds (refused at the
//     root: a KindSymlink escape); "." is dropped;
//   - a directory component is opened with openat(parent, name,
//     O_DIRECTORY|O_NOFOLLOW) and pushed, so the next component is looked
//     up in the directory that was opened, never by a path string;
//   - the last component is looked up with fstatat(parent, name,
//     AT_SYMLINK_NOFOLLOW), not opened (a device or FIFO is refused before
//     any open);
//   - a component that is a symbolic link (the open fails with ELOOP or
//     ENOTDIR and fstatat says so) is read with readlinkat on the parent's
//     descriptor, and the target's components continue the walk, each
//     opened and checked like any other; an absolute target restarts at the
//     root when it lies inside it and is refused (KindSymlink) otherwise, and
//     at most 40 links are followed;
//   - a missing component ends the walk: it and the rest are what a write
//     would create.
//
// The deny, deny_write and protected rules are matched against the names of
// the components the walk opened (joined into the path relative to the root),
// and whether a directory is a git directory (HEAD plus objects/ or
// commondir) is decided by fstatat on that directory's descriptor, held by
// the walk. The operation then acts relative to the descriptor of the last
// component's directory: a read opens the name with
// openat(O_RDONLY|O_NOFOLLOW|O_NONBLOCK) and fstat must show a regular file,
// the one the walk looked up; a write makes missing directories with mkdirat
// in their held parents, creates its temporary file with
// openat(O_CREAT|O_EXCL|O_NOFOLLOW) in the held directory, checks the entry
// it replaces with fstatat (a regular file with one link) and renameat()s
// over it there, which replaces the entry and never follows a link; a listing
// or a search opens the directory with openat(O_DIRECTORY|O_NOFOLLOW),
// describes entries with fstatat on its descriptor, and opens each entry the
// same way from its directory's descriptor after checking its name (see
// walk). A swap after the walk therefore moves nothing that was checked: a
// held directory renamed elsewhere is still the directory that was checked,
// and a link swapped in for a name makes the O_NOFOLLOW open fail. (A
// checked directory could still come to a protected place by a rename of the
// directory itself; the OS sandbox of the commands the agent runs refuses
// that for the protected and denied paths, which it keeps read-only or
// hidden.) The walk's system calls are in sys_unix.go (openat, fstatat,
// readlinkat, ...) and sys_windows.go, where each name is opened with
// NtCreateFile relative to the handle of its directory and
// FILE_OPEN_REPARSE_POINT, and a symbolic link or junction is refused, not
// followed. Paths are kept with "/" between names on every system
// ("C:/Users/you/proj" on Windows), the form the policy's matchers use;
// where file systems ignore case (Windows, macOS) the rules are matched
// without case (fold.go).
//
// A symbolic link from one root into another root is refused like any other
// escape.
//
// Writes are refused, as KindProtected, at any depth: for paths matching
// the protected rules of policy.Protected ("**/.git/config", "**/.envrc",
// "**/.git", ...) relative to each writable root, including the missing
// directories a write would create; for the entries of policy.GitDirProtected
// (config, hooks/, commondir, ...) inside any directory that git takes for a
// git directory, decided on the descriptor of that directory that the walk
// holds; and for deny_write entries. Creating a path is refused like writing it.
//
// A refused path is a *Violation whose message is one sentence naming the
// rule that decided and how the user could change it, for example
//
//	sandbox violation: path '../x' is outside the workspace '/w': the file tools only reach the workspace and the roots the user's policy allows
//	sandbox violation: path '.env' is denied by rule '**/.env' (the user's policy: filesystem.deny)
//	sandbox violation: path 'sub/.git/config' is protected by rule '**/.git/config': code placed there runs later on the host; the user can allow writes only by changing cordon's policy
//
// In mode off (--no-sandbox) there is no confinement: the FS has a single
// writable root at "/", relative paths are taken from the workspace and no
// deny, protected, read-only or hard-link rule applies. Only the refusal of
// FIFOs, devices and sockets (which would hang or stream forever) and the
// size bounds remain.
package workspace

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

// Root is one directory tree the FS may reach.
type Root struct {
	// Path is the absolute directory.
	Path string
	// Writable allows writes inside it.
	Writable bool
}

// Limits bound what the FS reads and returns.
type Limits struct {
	// MaxReadBytes is the most bytes read from one file (read, edit, grep).
	MaxReadBytes int64
	// MaxOutputBytes is the most bytes of text one result carries.
	MaxOutputBytes int
	// MaxLineBytes is the longest line shown; longer lines are cut.
	MaxLineBytes int
	// MaxReadLines is the most lines one ReadFile returns.
	MaxReadLines int
	// MaxResults is the most entries, paths or matches one List, Find or
	// Grep returns.
	MaxResults int
	// MaxVisit is the most directory entries one Find or Grep visits.
	MaxVisit int
	// MaxWriteBytes is the largest content WriteFile accepts.
	MaxWriteBytes int64
}

// DefaultLimits are the limits New uses.
var DefaultLimits = Limits{
	MaxReadBytes:   16 << 20,
	MaxOutputBytes: 256 << 10,
	MaxLineBytes:   2000,
	MaxReadLines:   2000,
	MaxResults:     1000,
	MaxVisit:       500000,
	MaxWriteBytes:  100 << 20,
}

// maxPathBytes is the longest path accepted (PATH_MAX on Linux).
const maxPathBytes = 4096

// maxLinks is the most symbolic links followed while resolving one path.
const maxLinks = 40

// FS is the confined file API over one or more roots. Its methods are safe
// for concurrent use.
type FS struct {
	// Limits bound reads and results; change them before use.
	Limits Limits

	off       bool
	workspace string
	mounts    []*mount // the workspace first
	deny      []denyRule
	denyWrite []denyRule
	// linked are the targets of protected paths that are links into a
	// writable root, refused like the links.
	linked    []linkedPath
	protected []string
	policy    *policy.Policy // for where git looks (gitLook)
}

type mount struct {
	Root
	fd    handle // the root directory, opened once by New
	parts []string
}

// New opens the workspace root (p.Workspace, writable when a write path of
// the policy covers it: read-only in the minimal and untrusted profiles) and
// the extra roots.
// Each root must be an existing directory; symbolic links in root paths are
// resolved. In mode off the FS is unconfined (see the package comment).
// Close releases the roots.
func New(p *policy.Policy, extra ...Root) (*FS, error) {
	if p == nil {
		return nil, errors.New("workspace: nil policy")
	}
	if p.Workspace == "" || !filepath.IsAbs(p.Workspace) {
		return nil, fmt.Errorf("workspace: workspace %q is not an absolute path", p.Workspace)
	}
	f := &FS{Limits: DefaultLimits, off: p.Mode == policy.ModeOff}
	ws, err := filepath.EvalSymlinks(p.Workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	f.workspace = filepath.ToSlash(ws)
	if f.off {
		m, err := openMount(Root{Path: offRoot(ws), Writable: true})
		if err != nil {
			return nil, err
		}
		f.mounts = []*mount{m}
		return f, nil
	}
	vol := filepath.VolumeName(ws)
	if f.deny, err = compileDeny(p.Deny, vol); err != nil {
		return nil, fmt.Errorf("workspace: filesystem.deny: %w", err)
	}
	if f.denyWrite, err = compileDeny(p.DenyWrite, vol); err != nil {
		return nil, fmt.Errorf("workspace: filesystem.deny_write: %w", err)
	}
	f.protected = p.Protected
	f.policy = p
	// What the home's and the workspace's protected paths name when they
	// are links into a writable root (policy.LinkTargets).
	var writable []string
	if writableBy(ws, p.Write) {
		writable = append(writable, ws)
	}
	for _, r := range extra {
		if r.Writable {
			writable = append(writable, r.Path)
		}
	}
	for _, q := range append(p.ProtectedAt(p.GitEnv.Home), p.ProtectedAt(ws)...) {
		if t := policy.LinkTargets([]string{q}, writable); len(t) == 1 {
			f.linked = append(f.linked, linkedPath{target: filepath.ToSlash(t[0]), link: filepath.ToSlash(q)})
		}
	}
	if len(f.protected) > 0 {
		// The rows of policy.ToolFiles that stay writable for the tools
		// (pip writes a .pth) are no file for an agent's file tool to
		// write either.
		f.protected = append(slices.Clone(p.Protected), policy.FileToolRefused()...)
	}
	for _, r := range append([]Root{{Path: ws, Writable: writableBy(ws, p.Write)}}, extra...) {
		m, err := openMount(r)
		if err != nil {
			f.Close()
			return nil, err
		}
		f.mounts = append(f.mounts, m)
	}
	// The workspace as its root's handle names it (rootPath: on Windows
	// through a junction, in its own case), for the relative paths.
	f.workspace = f.mounts[0].Path
	return f, nil
}

// writableBy reports whether dir is at or below one of the write paths
// (both sides with symbolic links resolved). A write path of /tmp does not
// count: it names the sandbox's private /tmp.
func writableBy(dir string, write []string) bool {
	for _, w := range write {
		if w == "/tmp" {
			continue // the sandbox's private /tmp, never the host's
		}
		if rw, err := filepath.EvalSymlinks(w); err == nil {
			w = rw
		}
		if policy.Within(filepath.ToSlash(dir), filepath.ToSlash(w)) {
			return true
		}
	}
	return false
}

// PolicyRoots are the extra roots a policy allows beside the workspace:
// each existing write path that is a directory (writable), and each read
// path that is a directory outside the system directories (read-only),
// such as a tool cache or a path given with --allow-read. /tmp is left
// out: inside the OS sandbox it is private.
func PolicyRoots(p *policy.Policy) []Root {
	var out []Root
	seen := map[string]bool{}
	add := func(path string, writable bool) {
		if !filepath.IsAbs(path) {
			return // a Unix path of a built-in profile, on Windows ("\\tmp")
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil || seen[real] || path == "/tmp" {
			return
		}
		if ws, err := filepath.EvalSymlinks(p.Workspace); err == nil && policy.Within(filepath.ToSlash(real), filepath.ToSlash(ws)) {
			return
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return
		}
		seen[real] = true
		out = append(out, Root{Path: real, Writable: writable})
	}
	for _, w := range p.Write {
		add(w, true)
	}
	for _, r := range p.Read {
		if !slices.Contains(policy.SystemReads, r) {
			add(r, false)
		}
	}
	return out
}

func openMount(r Root) (*mount, error) {
	if !filepath.IsAbs(r.Path) {
		return nil, fmt.Errorf("workspace: root %q is not an absolute path", r.Path)
	}
	real, err := filepath.EvalSymlinks(r.Path)
	if err != nil {
		return nil, fmt.Errorf("workspace: root: %w", err)
	}
	fd, err := openRootDir(real)
	if err != nil {
		return nil, fmt.Errorf("workspace: root: %w", err)
	}
	real = filepath.ToSlash(rootPath(fd, real))
	return &mount{Root: Root{Path: real, Writable: r.Writable}, fd: fd, parts: split(real)}, nil
}

// Close releases the roots.
func (f *FS) Close() error {
	var errs []error
	for _, m := range f.mounts {
		errs = append(errs, closeHandle(m.fd))
	}
	return errors.Join(errs...)
}

// Workspace returns the workspace directory (symlinks resolved).
func (f *FS) Workspace() string { return f.workspace }

// Roots returns the roots, the workspace first.
func (f *FS) Roots() []Root {
	out := make([]Root, len(f.mounts))
	for i, m := range f.mounts {
		out[i] = m.Root
	}
	return out
}

// split returns the components of a clean absolute or relative path.
func split(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// hasPrefix reports whether the path parts starts with the components
// prefix, compared as the file system does (fold).
func hasPrefix(parts, prefix []string) bool {
	if len(prefix) > len(parts) {
		return false
	}
	for i := range prefix {
		if parts[i] != prefix[i] && (!foldCase || !strings.EqualFold(parts[i], prefix[i])) {
			return false
		}
	}
	return true
}

// hasVolume reports whether p starts with a Windows drive ("C:/"), on
// Windows; CheckName has refused every other use of a colon there.
func hasVolume(p string) bool {
	return runtime.GOOS == "windows" && len(p) >= 3 && p[1] == ':' && p[2] == '/'
}

// target is a resolved path: a root, the symlink-free path inside it and
// the descriptors of the directories walked to reach it (see walkPath).
// The policy is decided on names, the components the walk opened, and
// every operation acts relative to the descriptors in dirs: dirs[i] is the
// directory of names[:i] (dirs[0] is the root's, not owned). When exists,
// dirs holds every directory above the last component and st is that
// component's lstat; otherwise names[firstMissing():] do not exist yet.
// Release a target with close.
type target struct {
	m      *mount
	rel    string // "." for the root itself
	abs    string
	user   string // as given
	names  []string
	dirs   []handle
	exists bool
	st     sysStat
}

// route finds the root containing the clean absolute path abs (longest
// prefix by components) and returns it with the components below it.
func (f *FS) route(abs string) (*mount, []string) {
	parts := split(abs)
	var best *mount
	for _, m := range f.mounts {
		if hasPrefix(parts, m.parts) && (best == nil || len(m.parts) > len(best.parts)) {
			best = m
		}
	}
	if best == nil {
		return nil, nil
	}
	return best, parts[len(best.parts):]
}

// resolve maps a user path to a root and walks it there once, by
// descriptor (see walkPath), following symbolic links inside the root. op is
// "file-read" or "file-write". The caller closes the target.
func (f *FS) resolve(op, p string) (*target, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return nil, &Violation{Op: op, Path: p, Kind: KindInvalid, Detail: "it contains a NUL byte", Workspace: f.workspace}
	}
	if len(p) > maxPathBytes {
		return nil, &Violation{Op: op, Path: p, Kind: KindInvalid, Detail: fmt.Sprintf("it is longer than %d bytes", maxPathBytes), Workspace: f.workspace}
	}
	if why := CheckName(runtime.GOOS, p); why != "" {
		return nil, &Violation{Op: op, Path: p, Kind: KindInvalid, Detail: why, Workspace: f.workspace}
	}
	if p == "" {
		p = "."
	}
	if runtime.GOOS == "windows" {
		// CheckName refused drives and UNC paths: what is left is relative,
		// and a backslash separates names as a slash does.
		p = strings.ReplaceAll(p, `\`, "/")
	}
	abs := p
	if !strings.HasPrefix(abs, "/") && !hasVolume(abs) {
		abs = path.Join(f.workspace, p)
	}
	abs = path.Clean(abs)
	m, rest := f.route(abs)
	if m == nil {
		v := &Violation{Op: op, Path: p, Resolved: abs, Kind: KindOutside, Workspace: f.workspace}
		if len(f.mounts) > 1 {
			v.Rule = "roots"
		}
		return nil, v
	}
	return f.walkPath(op, p, abs, m, rest)
}

// splitRel splits a relative link target, keeping ".." components.
func splitRel(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// wrapErr wraps an error of the operation op on the path p (as given) of m
// as a *PathError, whose message reads naturally. Escapes never get here:
// the walk refuses them as Violations itself.
func (f *FS) wrapErr(op, p string, m *mount, err error) error {
	if err == nil {
		return nil
	}
	return &PathError{Op: strings.TrimPrefix(op, "file-"), Path: p, Err: err}
}

// checkRead applies the deny rules.
func (f *FS) checkRead(op string, t *target) error {
	if f.off {
		return nil
	}
	if rule := f.denied(t); rule != "" {
		return &Violation{Op: op, Path: t.user, Resolved: t.abs, Kind: KindDenied, Rule: rule, Workspace: f.workspace}
	}
	return nil
}

// linkedPath is a protected path that is a symbolic link (link) and what
// it names in a writable root (target).
type linkedPath struct{ target, link string }

// checkWrite applies, in order, the deny rules, read-only roots, the
// deny_write entries, the protected rules and the protected entries of git
// directories (see protection). A path that does not exist yet is checked
// like an existing one: creating a denied, read-only or protected path is
// refused like writing it.
func (f *FS) checkWrite(t *target) error {
	const op = "file-write"
	if err := f.checkRead(op, t); err != nil || f.off {
		return err
	}
	v := &Violation{Op: op, Path: t.user, Resolved: t.abs, Workspace: f.workspace}
	if !t.m.Writable {
		v.Kind, v.Rule = KindReadOnly, t.m.Path
		return v
	}
	for _, d := range f.denyWrite {
		if d.Hides(fold(t.m.Path), fold(t.abs)) {
			v.Kind, v.Rule, v.Source = KindProtected, d.entry, SourceDenyWrite
			return v
		}
	}
	if rule, source, gitDir := f.protection(t); rule != "" {
		v.Kind, v.Rule, v.Source, v.Detail = KindProtected, rule, source, gitDir
		return v
	}
	for _, l := range f.linked {
		if policy.Within(fold(t.abs), fold(l.target)) {
			v.Kind, v.Rule, v.Source, v.Detail = KindProtected, l.target, SourceLink, l.link
			return v
		}
	}
	if rule, where := f.gitLook(t); rule != "" {
		v.Kind, v.Rule, v.Source, v.Detail = KindProtected, rule, SourceGitLook, where
		return v
	}
	return nil
}

// protection returns the rule protecting the write target t, its source
// (SourceProtected or SourceGitDir) and, for a git directory entry, the git
// directory's absolute path; or "" when none does. It is decided on the
// components the walk opened (t.names), in every writable root that contains
// them (a workspace inside a writable home is checked relative to both):
//
//   - a rule of policy.Protected (policy.ProtectedBy) matching the path, or
//     one of the missing directories that writing it would create (so a new
//     ".git" directory is refused however it would come about);
//   - an entry of policy.GitDirProtected (or a path below "hooks/") inside
//     an existing directory that git takes for a git directory: one holding
//     HEAD and either objects or a commondir file, looked up with fstatat on
//     the descriptor of that directory that the walk holds. This covers git
//     directories not named .git: a bare repository, a --separate-git-dir, a
//     worktree's or a submodule's.
func (f *FS) protection(t *target) (rule, source, gitDir string) {
	parts := split(t.abs)
	for _, m := range f.mounts {
		if !m.Writable || !hasPrefix(parts, m.parts) {
			continue
		}
		below := parts[len(m.parts):]
		// below[:i] is t.names[:i+d]: d < 0 when m contains t's root.
		d := len(m.parts) - len(t.m.parts)
		if r := f.protectedRule(below, t.firstMissing()-d); r != "" {
			return r, SourceProtected, ""
		}
		if r, dir := gitDirEntry(m, t, below, d); r != "" {
			return r, SourceGitDir, path.Join(m.Path, dir)
		}
	}
	// Creating HEAD, objects or commondir next to git configuration or
	// hooks would make a git directory of them.
	if n := len(t.names); n > 0 && !t.exists && t.firstMissing() == n-1 {
		if dirfd, name := t.leaf(); becomesGitDir(dirfd, name) {
			return name, SourceGitDir, path.Dir(t.abs)
		}
	}
	return "", "", ""
}

// protectedRule returns the protected rule matching the path of components
// parts (relative to a writable root), or any directory on it that does not
// exist yet: parts[missing:] are missing, and a write creates the missing
// parents.
func (f *FS) protectedRule(parts []string, missing int) string {
	if len(parts) == 0 || len(f.protected) == 0 {
		return ""
	}
	if r := policy.ProtectedBy(f.protected, fold(strings.Join(parts, "/"))); r != "" {
		return r
	}
	// parts[:j] for each directory from the first missing one to the parent.
	for j := max(missing+1, 1); j < len(parts); j++ {
		if r := policy.ProtectedBy(f.protected, fold(strings.Join(parts[:j], "/"))); r != "" {
			return r
		}
	}
	return ""
}

// gitDirEntry returns the entry of policy.GitDirProtected that the path of
// components parts below m is, or lies below, inside a git directory, with
// that directory relative to m ("." for m itself); or "", "". parts[:i] is
// t.names[:i+d]; its descriptor is the one t holds, or, for a directory
// above t's root (d < 0), one opened from m's root.
func gitDirEntry(m *mount, t *target, parts []string, d int) (entry, dir string) {
	for i := len(parts) - 1; i >= 0; i-- {
		e := gitProtectedEntry(parts[i:])
		if e == "" {
			continue
		}
		var git bool
		switch j := i + d; {
		case j < 0:
			git = isGitDirBelow(m, parts[:i])
		case j < len(t.dirs):
			git = isGitDirAt(t.dirs[j])
		}
		if git {
			if i == 0 {
				return e, "."
			}
			return e, strings.Join(parts[:i], "/")
		}
	}
	return "", ""
}

// gitProtectedEntry returns the entry of policy.GitDirProtected that rest
// (components relative to a directory) names or lies below, or "".
func gitProtectedEntry(rest []string) string {
	for _, e := range policy.GitDirProtected {
		name, isDir := strings.CutSuffix(e, "/")
		if fold(rest[0]) == name && (isDir || len(rest) == 1) {
			return e
		}
	}
	return ""
}

// denied returns the deny rule matching t or one of its parents, or "".
func (f *FS) denied(t *target) string {
	return f.deniedPath(t.m, t.rel)
}

// deniedPath returns the deny rule that hides the path rel of m (it or
// one of its directories), or "": policy.DenyRule decides as the backends
// expand the rule, relative globs matched below the root m.
func (f *FS) deniedPath(m *mount, rel string) string {
	root := fold(m.Path)
	abs := path.Join(root, fold(rel))
	for _, d := range f.deny {
		if d.Hides(root, abs) {
			return d.entry
		}
	}
	return ""
}

// deniedLeaf is deniedPath for an entry met while walking from a checked
// directory: its parents were all checked already (a denied directory is not
// entered), so only the entry's own path is matched.
func (f *FS) deniedLeaf(m *mount, rel string) string {
	if len(f.deny) == 0 {
		return ""
	}
	root := fold(m.Path)
	abs := root + "/" + fold(rel)
	if strings.HasSuffix(root, "/") { // "/", or a drive's root "C:/"
		abs = root + fold(rel)
	}
	for _, d := range f.deny {
		if d.Matches(root, abs) {
			return d.entry
		}
	}
	return ""
}
