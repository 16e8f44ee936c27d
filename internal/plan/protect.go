package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/internal/host/autotrust"
	"github.com/cordon-sandbox/cordon/internal/parallel"
	"github.com/cordon-sandbox/cordon/policy"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// Kinds of placeholder for a missing path: what is bound over the mount
// point cordon creates on the host.
const (
	phDir       = iota // an empty read-only directory (git ignores it)
	phFile             // an empty read-only file (shell start-up files, git config)
	phCommondir        // a read-only commondir naming the git directory itself
	phMaskDir          // an unreadable directory (a denied path)
	phMaskFile         // an unreadable file (a denied path)
)

// placeholderSource is the state-directory file bound over a placeholder of
// kind k.
func (b *bwrapBuilder) placeholderSource(k int) string {
	name := map[int]string{phDir: emptyDir, phFile: emptyFile, phCommondir: commondirFile, phMaskDir: maskDir, phMaskFile: maskFile}[k]
	return filepath.Join(b.opts.StateDir, name)
}

// homeFiles are names in the home directory that are files, so a
// placeholder for one is a file (git reads ~/.gitconfig even during a run).
var homeFiles = map[string]bool{
	".gitconfig": true, ".netrc": true, ".npmrc": true, ".pypirc": true, ".git-credentials": true,
	".pam_environment": true, ".xprofile": true, ".xsessionrc": true, ".xinitrc": true, ".bash_aliases": true,
	".vimrc": true, ".emacs": true, ".tmux.conf": true, "config.toml": true, "gradle.properties": true, "settings.xml": true,
	".mavenrc": true, ".exrc": true, ".nvimrc": true, ".gvimrc": true, ".yarnrc": true, ".yarnrc.yml": true, ".bunfig.toml": true,
	".tool-versions": true, "init.gradle": true, "init.gradle.kts": true, "config": true, "config.json": true, "config.yml": true,
	".inputrc": true, ".pythonrc": true, ".pythonrc.py": true, ".pdbrc": true, ".irbrc": true, ".gemrc": true, ".curlrc": true,
	".wgetrc": true, ".screenrc": true, ".lldbinit": true, ".gdbinit": true, ".sbtopts": true, ".jvmopts": true, ".bazelrc": true,
	"mise.toml": true, "toolchains.xml": true, "extensions.xml": true, ".pryrc": true, "nvm.sh": true, "env": true,
}

// writableRoots are the writable trees that are protected and checked after
// the run: every write root but the private /tmp and the sandbox cache
// (only sandboxes use it, and nothing there runs on the host).
func (b *bwrapBuilder) writableRoots() []string {
	if b.writable != nil {
		return b.writable
	}
	out := []string{}
	for _, r := range b.roots {
		if r.writable && r.path != privateTmp && r.path != b.p.SandboxCache && !slices.Contains(out, r.path) {
			if fi, err := os.Stat(r.path); err == nil && fi.IsDir() {
				out = append(out, r.path)
			}
		}
	}
	b.writable = out
	return out
}

// protect keeps read-only, in every writable root, what makes code run
// later on the host: every git directory's configuration and hooks at any
// depth (each git directory is pinned, so it cannot be renamed away from
// them), gitlinks, where else git looks for hooks and configuration
// (Guard.Git), the protected names wherever they exist, and the
// deny_write paths; and it keeps absent ones from being created, with
// placeholders.
func (b *bwrapBuilder) protect(trees map[string]*tree) error {
	p := b.p
	pr := parseProtected(p.Protected)
	for _, r := range b.writableRoots() {
		// The top of a git directory added for the workspace's repository
		// (see policy.Repo) is no place a tool looks for .envrc or
		// .vscode, and a placeholder there would be a mount point in the
		// user's own repository: only its git entries are protected.
		if !repoGitRoot(p, r) {
			if err := b.protectTop(r, pr); err != nil {
				return err
			}
		}
		t := trees[r]
		if t == nil {
			continue
		}
		listed := listGitDirs(t.gitDirs)
		for i, g := range t.gitDirs {
			if err := b.protectGitDir(r, g, listed[i]); err != nil {
				return err
			}
		}
		for _, l := range t.gitlinks {
			if b.deniedBy(l) == "" {
				b.add(opReadOnly, l, l)
			}
		}
		for _, m := range t.names {
			if b.deniedBy(m.path) == "" {
				if err := b.protectExisting(m.path); err != nil {
					return err
				}
			}
		}
	}
	if err := b.protectGitLooks(trees); err != nil {
		return err
	}
	for _, d := range p.DenyWrite {
		if !filepath.IsAbs(d) || policy.IsGlob(d) {
			continue
		}
		if b.permissive && !slices.Contains(p.Guarded, d) {
			continue // mode permissive enforces only the guard
		}
		root := b.writableRootOf(d)
		if root == "" || b.deniedBy(d) != "" {
			continue // not writable inside (most of the home's): nothing to protect
		}
		b.pinBetween(root, d, false)
		if _, err := os.Lstat(d); err == nil {
			if err := b.protectExisting(d); err != nil {
				return err
			}
			continue
		}
		kind := phDir
		if homeFiles[filepath.Base(d)] {
			kind = phFile
		}
		b.placeholder(root, d, kind)
	}
	b.protectHomeLinks()
	// Absent denied paths inside a writable root stay absent; and no
	// denied path there can be moved away from its mask. Mode permissive
	// hides the denied paths only for cordon learn.
	if b.permissive && !b.opts.HideDenied {
		return nil
	}
	for _, d := range p.Deny {
		if !filepath.IsAbs(d) || policy.IsGlob(d) {
			continue
		}
		root := b.writableRootOf(d)
		if root == "" || root == d {
			continue
		}
		b.pinBetween(root, d, false)
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			continue // existing ones are masked
		}
		kind := phMaskDir
		if homeFiles[filepath.Base(d)] {
			kind = phMaskFile
		}
		b.placeholder(root, d, kind)
	}
	return nil
}

// protectHomeLinks keeps read-only what a start-up file of the home (a
// protected name at its top, a deny_write entry) names when it is a
// symbolic link into a writable root while the home itself is not
// writable: a dotfiles repository whose files the home links to
// (~/.bashrc -> ~/dotfiles/bashrc), edited through its own name.
func (b *bwrapBuilder) protectHomeLinks() {
	h := b.opts.Home
	if h == "" || h == "/" || b.writableRootOf(h) != "" {
		return
	}
	for _, t := range policy.LinkTargets(b.p.ProtectedAt(h), b.writableRoots()) {
		root := b.writableRootOf(t)
		if root == "" || b.deniedBy(t) != "" {
			continue
		}
		b.pinBetween(root, t, false)
		b.add(opReadOnly, t, t)
	}
}

// protectTop keeps read-only, at the top of the writable root r, the
// protected names that exist there and keeps the missing ones (and a
// .git, where there is no repository) from being created.
func (b *bwrapBuilder) protectTop(r string, pr protRules) error {
	inHome := r == b.opts.Home
	// One listing of the root answers whether each top-level name
	// exists; a missing one there gets its placeholder directly.
	top, listed := listNames(r)
	canCreate := !unwritable(r)
	exists := func(full string) bool {
		if listed && filepath.Dir(full) == r {
			return top[filepath.Base(full)]
		}
		_, err := os.Lstat(full)
		return err == nil
	}
	missingAtTop := func(full string, kind int) {
		if listed && filepath.Dir(full) == r {
			if canCreate {
				b.addPlaceholder(full, kind)
			}
			return
		}
		b.placeholder(r, full, kind)
	}
	if pr.git && !exists(filepath.Join(r, ".git")) {
		// No repository here: git init inside would plant one.
		missingAtTop(filepath.Join(r, ".git"), phDir)
	}
	for _, n := range append(slices.Clone(pr.anyDepth), pr.rootOnly...) {
		if policy.ToolFileName(n.rel) {
			// A tool's file gets no placeholder: an empty file would show
			// in git status and change what the tool does; an existing
			// one was found by the walk (it is protected at any depth),
			// and a new one is renamed aside after the run (see
			// policy.ToolFiles).
			continue
		}
		full := filepath.Join(r, n.rel)
		if b.deniedBy(full) != "" {
			continue
		}
		if exists(full) {
			if !slices.Contains(pr.anyDepth, n) {
				// Root-only rules are not walked for.
				if err := b.protectExisting(full); err != nil {
					return err
				}
			}
			continue
		}
		if n.rel == policy.WorkspaceConfigName {
			// A new one can only add restrictions; a placeholder would
			// make a concurrent cordon in this workspace fail to read it.
			continue
		}
		trusted := ""
		if policy.AskFirst[n.rel] != "" {
			trusted = b.autoTrusted(r)[n.rel]
		}
		if policy.AskFirst[n.rel] != "" && trusted == "" || !inHome && policy.ShellStartup(n.rel) {
			// Its tool asks before trusting a new one, or it is a shell
			// start-up file outside the home, which no shell reads: no
			// placeholder (an empty directory where a file belongs), and
			// the check after the run finds a new one (policy.AskFirst).
			continue
		}
		if !inHome && strings.Contains(n.rel, "/") {
			if _, err := os.Lstat(filepath.Dir(full)); err != nil {
				// .config/fish where there is no .config: nothing reads
				// it, and a placeholder would take .config away.
				continue
			}
		}
		kind := phDir
		if inHome && !n.dir && policy.ShellStartup(n.rel) {
			kind = phFile // every shell inside reads it
		}
		if trusted != "" {
			// The user's settings make its tool trust a new one at once:
			// an empty read-only file keeps one from being created.
			kind = phFile
			b.plan.Notes = append(b.plan.Notes, fmt.Sprintf("%s gets a read-only placeholder (an empty file): %s", filepath.Join(r, n.rel), trusted))
		}
		missingAtTop(full, kind)
	}
	return nil
}

// pinBetween binds every existing directory strictly between root and
// path onto itself: a mount point cannot be renamed, so none of them can be
// moved away (taking path's read-only mount or mask along) and made anew
// without it. With planned, the missing ones are bound too: the launcher
// creates them (path is cordon's state directory, see Plan.Prepare).
func (b *bwrapBuilder) pinBetween(root, path string, planned bool) {
	for d := filepath.Dir(path); d != root && policy.Within(d, root) && d != "/"; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err == nil && fi.IsDir() || planned && errors.Is(err, fs.ErrNotExist) {
			b.add(opPin, d, d)
		}
	}
}

// listNames returns the names in directory dir; ok is false when it could
// not be listed (the caller then looks each name up).
func listNames(dir string) (names map[string]bool, ok bool) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	all, err := f.Readdirnames(-1)
	if err != nil {
		return nil, false
	}
	names = make(map[string]bool, len(all))
	for _, n := range all {
		names[n] = true
	}
	return names, true
}

// writableRootOf returns the writable root that path lies in, or "".
func (b *bwrapBuilder) writableRootOf(path string) string {
	for _, r := range b.writableRoots() {
		if policy.Within(path, r) {
			return r
		}
	}
	return ""
}

// gitDirListing is what protectGitDir needs to know of a git directory:
// its entries (one directory read tells what is there; a git directory is
// small), and whether placeholders can be created in it.
type gitDirListing struct {
	ents      []fs.DirEntry
	err       error
	canCreate bool
}

// listGitDir reads the git directory g for protectGitDir.
func listGitDir(g string) gitDirListing {
	ents, err := os.ReadDir(g)
	return gitDirListing{ents: ents, err: err, canCreate: err == nil && !unwritable(g)}
}

// listGitDirs is listGitDir of each of gitDirs, from parallel.From of them
// (a workspace of nested repositories) in two goroutines: a few system
// calls apiece, which two cores share.
func listGitDirs(gitDirs []string) []gitDirListing {
	out := make([]gitDirListing, len(gitDirs))
	parallel.Each(len(gitDirs), func(i int) { out[i] = listGitDir(gitDirs[i]) })
	return out
}

// protectGitDir keeps read-only the entries of git directory g (in root,
// listed by listGitDir) through which git finds configuration or hooks,
// creates placeholders for the absent ones, and pins g and every directory
// between an enclosing .git and g (a submodule's .git/modules/a/b), so
// none of them can be renamed away from its read-only entries.
func (b *bwrapBuilder) protectGitDir(root, g string, listed gitDirListing) error {
	if b.deniedBy(g) != "" {
		return nil
	}
	pin := []string{g}
	if i := strings.LastIndex(g, "/.git/"); i >= 0 && policy.Within(g, root) {
		for d := filepath.Dir(g); len(d) >= i+len("/.git") && policy.Within(d, root); d = filepath.Dir(d) {
			pin = append(pin, d)
		}
	}
	for _, d := range pin {
		b.add(opPin, d, d)
	}
	if listed.err != nil {
		return nil // gone or unreadable: nothing the sandbox can write either
	}
	types := make(map[string]fs.FileMode, len(listed.ents))
	for _, e := range listed.ents {
		types[e.Name()] = e.Type()
	}
	objects, hasObjects := types["objects"]
	cd, hasCommondir := types["commondir"]
	worktree := (!hasObjects || !objects.IsDir()) && hasCommondir && cd.IsRegular()
	canCreate := listed.canCreate
	b.gitProtected[g] = true // see keptReadOnly
	for _, e := range policy.GitDirProtected {
		name := strings.TrimSuffix(e, "/")
		full := filepath.Join(g, name)
		if typ, ok := types[name]; ok {
			if typ&fs.ModeSymlink != 0 {
				if err := b.protectExisting(full); err != nil {
					return err
				}
			} else {
				b.add(opReadOnly, full, full)
			}
			continue
		}
		kind := -1
		switch {
		case name == "gitdir":
			// Only a worktree's: git writes it with the worktree.
		case worktree && (name == "config" || name == "hooks" || name == "commondir"):
			// A worktree takes these from its common directory.
		case name == "hooks":
			kind = phDir
		case name == "config", name == "config.worktree":
			kind = phFile
		case name == "commondir":
			kind = phCommondir
		}
		if kind >= 0 && canCreate {
			b.addPlaceholder(full, kind)
		}
	}
	return nil
}

// protectExisting re-binds an existing path read-only. A path that is a
// symlink (or lies under one) protects what it points to, if that is
// visible; else it dangles inside.
func (b *bwrapBuilder) protectExisting(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		b.add(opReadOnly, path, path)
		return nil
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil
	}
	if b.permissive || b.visible(target) {
		// (In mode permissive the host's whole tree is visible.)
		b.add(opReadOnly, target, target)
	}
	return nil
}

// placeholder keeps the missing path full (inside root) from being created:
// an empty, read-only mount at its first missing component, of the given
// kind when that is full itself. bwrap needs a mount point on the host,
// which the launcher creates before the run and removes after it.
func (b *bwrapBuilder) placeholder(root, full string, kind int) {
	rel, ok := subpath.Rel(root, full)
	if !ok || rel == "." {
		return
	}
	cur := root
	parts := strings.Split(rel, string(filepath.Separator))
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err == nil {
			if i < len(parts)-1 && !fi.IsDir() {
				return // a file or link on the way: nothing can be created below
			}
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) || unwritable(filepath.Dir(cur)) {
			// Nobody in the sandbox can create it: it runs as this user,
			// without capabilities, and cannot chmod a directory it does
			// not own. (cordon as root creates placeholders itself before
			// bwrap starts; see launch.)
			return
		}
		k := kind
		if i < len(parts)-1 {
			k = phDir
		}
		b.addPlaceholder(cur, k)
		return
	}
}

// placeholderKinds is what the launcher creates on the host for each kind
// of placeholder: a mask is created as an empty directory or file too.
var placeholderKinds = map[int]PlaceholderKind{phDir: PlaceholderDir, phFile: PlaceholderFile, phCommondir: PlaceholderCommondir, phMaskDir: PlaceholderDir, phMaskFile: PlaceholderFile}

// addPlaceholder mounts a placeholder of kind at the missing path p.
func (b *bwrapBuilder) addPlaceholder(p string, kind int) {
	b.add(opReadOnly, b.placeholderSource(kind), p)
	if b.placeholders == nil {
		b.placeholders = map[string]bool{}
	}
	if !b.placeholders[p] {
		// A set, not a search of the plan's list: a workspace of many
		// repositories has thousands.
		b.placeholders[p] = true
		b.plan.Placeholders = append(b.plan.Placeholders, Placeholder{Path: p, Kind: placeholderKinds[kind]})
	}
}

// guardFrom fills the plan's Guard from the walk: the writable roots and
// what they held before the run. The sandbox cache, when writable, is
// checked after the run too, though not walked before it (what is there
// was made by sandboxes, and is judged by when it changed): a repository
// planted there would run on the host through a gitlink or a symbolic link
// from the workspace.
func guardFrom(p *policy.Policy, roots []string, trees map[string]*tree, keep bool) Guard {
	g := Guard{Roots: slices.Clone(roots), KeepArmed: keep}
	// The sandbox cache exists by the run when the launcher creates it
	// (Plan.Prepare: Build keeps it in Write only if it can).
	if c := p.SandboxCache; c != "" && slices.Contains(p.Write, c) && !slices.Contains(g.Roots, c) {
		if fi, err := os.Stat(c); sandboxCache(p) == c || err == nil && fi.IsDir() {
			g.Roots = append(g.Roots, c)
		}
	}
	var gitlinks []string
	for _, r := range roots {
		if t := trees[r]; t != nil {
			g.GitDirs = append(g.GitDirs, t.gitDirs...)
			gitlinks = append(gitlinks, t.gitlinks...)
			for _, n := range t.names {
				g.Names = append(g.Names, n.path)
			}
		}
	}
	g.Git = gitLooksIn(p, g.GitDirs, gitlinks, g.Roots)
	return g
}

// completeGuard walks, for the git directories and protected names
// alone, each root of g that the plan's walk did not search as a writable
// root (walked: those it did; the sandbox cache is not), recording what
// it finds in g.UnwalkedGitDirs and g.UnwalkedNames, and sets g.Complete
// when every root was searched whole for all the check after the run
// looks for (see Guard.Complete). A walk that fails leaves g.Complete
// unset: the check then walks after the run, as it always did.
func completeGuard(g *Guard, p *policy.Policy, walked []string, trees map[string]*tree, lim globscan.Limits, cache *globscan.Cache) {
	pr := parseProtected(p.Protected)
	if !pr.coversChecked() {
		return
	}
	dirs := 0
	for _, r := range g.Roots {
		t := trees[r]
		if !slices.Contains(walked, r) {
			fi, err := os.Lstat(r)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue // made empty by the launcher, if at all
			case err != nil || !fi.IsDir():
				return
			}
			if t, err = walkTree(r, nil, pr, true, lim, cache); err != nil {
				return
			}
			g.UnwalkedGitDirs = append(g.UnwalkedGitDirs, t.gitDirs...)
			for _, n := range t.names {
				g.UnwalkedNames = append(g.UnwalkedNames, n.path)
			}
		}
		if t == nil || len(t.unlisted) > 0 {
			return
		}
		dirs += t.dirs
	}
	g.Complete, g.Dirs = true, dirs
}

// coversChecked reports whether the rules find, wherever they are, git
// directories and every protected name the check after the run looks
// for (policy.ProtectedNames).
func (pr protRules) coversChecked() bool {
	if !pr.git {
		return false
	}
	for _, n := range policy.ProtectedNames {
		rel := strings.TrimSuffix(n, "/")
		if !slices.ContainsFunc(pr.anyDepth, func(r nameRule) bool { return r.rel == rel }) {
			return false
		}
	}
	return true
}

// walkRoots walks each root once (see walkRoot, and there skipped);
// writable reports whether a root is protected.
func walkRoots(p *policy.Policy, roots, skipped []string, writable func(string) bool, lim globscan.Limits, cache *globscan.Cache) (map[string]*tree, error) {
	var globs []string
	for _, d := range p.Deny {
		if !filepath.IsAbs(d) {
			globs = append(globs, d)
		}
	}
	pr := parseProtected(p.Protected)
	out := map[string]*tree{}
	for _, r := range roots {
		if _, done := out[r]; done {
			continue
		}
		t, err := walkRoot(p, r, skipped, globs, pr, writable(r), lim, cache)
		if err != nil {
			return nil, fmt.Errorf("matching deny and protected paths in %s: %w", r, err)
		}
		if t != nil {
			out[r] = t
		}
	}
	return out, nil
}

// autoTrusted returns, for the writable root r, the names of
// policy.AskFirst whose tool the host's settings make trust a new one
// without asking (see package autotrust), each with why.
func (b *bwrapBuilder) autoTrusted(r string) map[string]string {
	if b.trusted == nil {
		b.trusted = map[string]map[string]string{}
	}
	if t, ok := b.trusted[r]; ok {
		return t
	}
	t := autotrust.Trusts(autotrust.Host{Home: b.opts.Home, Getenv: b.opts.Getenv}, r, slices.Sorted(maps.Keys(policy.AskFirst)))
	b.trusted[r] = t
	return t
}
