package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cordon-sandbox/cordon/globscan"
	"github.com/cordon-sandbox/cordon/landlock"
	"github.com/cordon-sandbox/cordon/limits"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/probe"
	"golang.org/x/sys/unix"
)

// Kinds of mount operation, in the order they are applied to one path: a
// later kind at the same path overrides an earlier one.
const (
	opTmpfs = iota
	opSymlink
	opRead
	opWrite
	opReadOnly // protected paths and deny_write re-bound read-only
	opMask     // denied paths hidden behind an unreadable file or directory
	opHelper
	opRemountRO
)

// mountOp is one bubblewrap mount argument.
type mountOp struct {
	kind int
	src  string
	dst  string
}

func (m mountOp) args() []string {
	switch m.kind {
	case opTmpfs:
		return []string{"--tmpfs", m.dst}
	case opSymlink:
		return []string{"--symlink", m.src, m.dst}
	case opRead, opReadOnly, opMask:
		return []string{"--ro-bind", m.src, m.dst}
	case opWrite:
		return []string{"--bind", m.src, m.dst}
	case opHelper:
		return []string{"--ro-bind-fd", fmt.Sprint(FdHelperExe), m.dst}
	case opRemountRO:
		return []string{"--remount-ro", m.dst}
	}
	panic(fmt.Sprintf("plan: unknown mount kind %d", m.kind))
}

// Mask files live in the state directory: an unreadable empty file and
// directory bound over denied paths, and readable empty ones bound over
// missing protected paths.
const (
	maskFile  = "deny-file"
	maskDir   = "deny-dir"
	emptyFile = "empty-file"
	emptyDir  = "empty-dir"
)

// privateTmp is always a fresh tmpfs; the host's /tmp is never visible.
const privateTmp = "/tmp"

type bwrapBuilder struct {
	p     *policy.Policy
	opts  Options
	ops   []mountOp
	plan  *Plan
	roots []root // visible trees, for deciding what a mask may touch
}

type root struct {
	path     string
	writable bool
}

func buildBwrap(p *policy.Policy, command []string, opts Options) (*Plan, error) {
	bw, err := probe.FindBwrap(p.BwrapPath)
	if err != nil {
		return nil, err
	}
	if opts.StateDir == "" {
		return nil, errors.New("plan: no state directory given")
	}
	if err := ensureMasks(opts.StateDir); err != nil {
		return nil, err
	}
	b := &bwrapBuilder{p: p, opts: opts, plan: &Plan{
		Backend:     BackendBwrap,
		Command:     command,
		StateDir:    opts.StateDir,
		Workspace:   p.Workspace,
		Interactive: opts.Interactive,
	}}
	if err := b.collect(); err != nil {
		return nil, err
	}
	args := []string{bw,
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--cap-drop", "ALL", "--hostname", "cordon",
	}
	if p.Network.Mode != policy.NetOpen {
		args = append(args, "--unshare-net")
	}
	if opts.Interactive {
		b.plan.Notes = append(b.plan.Notes, "--new-session omitted: the command runs on a private pseudo-terminal that cordon created, so TIOCSTI cannot reach your terminal")
	} else {
		args = append(args, "--new-session")
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev")
	b.ops = sortOps(b.ops)
	for _, m := range b.ops {
		args = append(args, m.args()...)
	}
	b.plan.Dir = b.workdir()
	args = append(args, "--chdir", b.plan.Dir, "--", HelperPath, HelperCommand, "--")
	b.plan.Argv = append(args, command...)
	b.plan.Env = buildEnv(p, opts)
	if slices.Contains(b.plan.Placeholders, filepath.Join(p.Workspace, ".git")) && !hasEnv(b.plan.Env, "GOFLAGS") {
		// The workspace is no git repository, but the placeholder makes
		// it look like one to go build, whose version stamping then fails
		// on "git status". There is nothing to stamp.
		b.plan.Env = append(b.plan.Env, "GOFLAGS=-buildvcs=false")
		sort.Strings(b.plan.Env)
	}
	b.plan.Spec = buildSpec(p)
	b.plan.Spec.Landlock = b.landlockRules()
	if p.Timeout > 0 {
		b.plan.Timeout = p.Timeout.String()
	}
	b.plan.Limits = limits.Limits{MaxProcesses: p.Resources.MaxProcesses, MaxMemoryMB: p.Resources.MaxMemoryMB, MaxCPUSeconds: p.Resources.MaxCPUSeconds}
	b.plan.Strict = p.Mode == policy.ModeStrict
	return b.plan, nil
}

// collect computes every mount operation.
func (b *bwrapBuilder) collect() error {
	p := b.p
	denied := func(path string) bool { return deniedBy(p.Deny, path) != "" }

	// Private /tmp and an empty home, so tools find the directories they
	// expect while the host's /tmp and home stay invisible.
	b.add(opTmpfs, "", privateTmp)
	b.add(opTmpfs, "", "/dev/shm")
	tmpWritable := false
	for _, w := range p.Write {
		if w == privateTmp {
			tmpWritable = true
		}
	}
	if !tmpWritable {
		b.add(opRemountRO, "", privateTmp)
	}
	// A home inside /tmp (HOME=/tmp/x in containers and tests) is not
	// covered by a /tmp entry: the sandbox's /tmp is a fresh tmpfs.
	if h := b.opts.Home; h != "" && h != "/" && h != privateTmp && !coveredBy(h, p.Read) && !coveredBy(h, p.Write) {
		// An empty, read-only home: writes there fail loudly instead of
		// vanishing with the sandbox.
		b.add(opTmpfs, "", h)
		b.add(opRemountRO, "", h)
	}

	for _, r := range p.Read {
		if denied(r) || r == privateTmp || coveredBy(r, p.Write) {
			continue
		}
		if err := b.bindPath(r, false); err != nil {
			return err
		}
	}
	for _, w := range p.Write {
		if w == privateTmp {
			continue
		}
		if denied(w) {
			continue
		}
		if err := b.bindPath(w, true); err != nil {
			return err
		}
	}
	for _, s := range p.UnixSockets {
		if _, err := os.Stat(s); err != nil {
			return fmt.Errorf("--allow-unix-socket %s: %w", s, err)
		}
		b.add(opWrite, s, s)
	}
	if p.Network.Mode == policy.NetOpen {
		b.bindResolver()
	}
	if err := b.protect(); err != nil {
		return err
	}
	if err := b.mask(); err != nil {
		return err
	}
	// cordon's own state (masks, locks, placeholder records) must not be
	// changed from inside, e.g. when the home directory is writable.
	if sd := b.opts.StateDir; b.visible(sd) {
		if _, err := os.Stat(sd); err == nil {
			b.add(opMask, filepath.Join(sd, maskDir), sd)
		}
	}
	b.add(opHelper, "", HelperPath)
	return nil
}

// bindPath binds one allowed path. Missing paths are skipped (a system
// directory such as /lib32 may not exist). A path whose parent is a
// symlink-free system link such as /bin -> usr/bin becomes a symlink.
func (b *bwrapBuilder) bindPath(path string, writable bool) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if writable {
			b.plan.Notes = append(b.plan.Notes, fmt.Sprintf("write path %s does not exist; not bound", path))
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 && filepath.Dir(path) == "/" {
		// Top-level links such as /bin -> usr/bin on merged-/usr systems.
		target, err := os.Readlink(path)
		if err == nil && !filepath.IsAbs(target) {
			b.add(opSymlink, target, path)
			return nil
		}
	}
	src, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", path, err)
	}
	kind := opRead
	if writable {
		kind = opWrite
	}
	b.add(kind, src, path)
	b.roots = append(b.roots, root{path: path, writable: writable})
	if src != path {
		b.roots = append(b.roots, root{path: src, writable: writable})
	}
	return nil
}

// bindResolver makes DNS work with the host network: /etc/resolv.conf is
// often a link into /run, which is otherwise not visible.
func (b *bwrapBuilder) bindResolver() {
	target, err := filepath.EvalSymlinks("/etc/resolv.conf")
	if err != nil || target == "/etc/resolv.conf" || b.visible(target) {
		return
	}
	b.add(opRead, target, target)
}

// protect re-binds protected paths read-only inside every writable root,
// and pins .git so it cannot be renamed away from its protected children.
// A missing protected path gets an empty read-only placeholder at its first
// missing component; bwrap creates that mount point on the host, so the
// launcher removes it after the run.
func (b *bwrapBuilder) protect() error {
	p := b.p
	for _, r := range b.roots {
		if !r.writable || r.path == privateTmp || r.path == p.SandboxCache {
			// Nothing there is ever run or opened by the user's tools.
			continue
		}
		fi, err := os.Stat(r.path)
		if err != nil || !fi.IsDir() {
			continue
		}
		if gi, err := os.Lstat(filepath.Join(r.path, ".git")); err == nil && gi.IsDir() {
			g := filepath.Join(r.path, ".git")
			b.add(opWrite, g, g)
		}
		for _, prot := range p.Protected {
			isDir := strings.HasSuffix(prot, "/")
			rel := strings.TrimSuffix(prot, "/")
			full := filepath.Join(r.path, rel)
			if deniedBy(p.Deny, full) != "" {
				continue
			}
			if existingOnly(rel, r.path == b.opts.Home) {
				// No placeholder: a missing one is harmless here.
				if _, err := os.Lstat(full); err != nil {
					continue
				}
			}
			if err := b.protectOne(r.path, rel, full, isDir); err != nil {
				return err
			}
		}
	}
	for _, d := range p.DenyWrite {
		if deniedBy(p.Deny, d) != "" || !b.visible(d) {
			continue
		}
		if _, err := os.Lstat(d); err != nil {
			continue
		}
		src, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		b.add(opReadOnly, src, d)
	}
	return nil
}

func (b *bwrapBuilder) protectOne(rootPath, rel, full string, isDir bool) error {
	// Walk down from the root to the first missing component.
	cur := rootPath
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			if unwritable(filepath.Dir(cur)) {
				// Nobody in the sandbox can create it: it runs as this
				// user, without capabilities, and cannot chmod a directory
				// it does not own. (cordon as root creates placeholders
				// itself before bwrap starts; see launch.)
				return nil
			}
			last := i == len(parts)-1
			// An empty directory even for a file: git ignores it, where
			// an empty .envrc or .mcp.json would show as untracked inside
			// and invite a commit. A shell start-up file gets an empty
			// file, since every shell inside reads it.
			src := filepath.Join(b.opts.StateDir, emptyDir)
			if last && !isDir && shellStartup(rel) {
				src = filepath.Join(b.opts.StateDir, emptyFile)
			}
			b.add(opReadOnly, src, cur)
			if !slices.Contains(b.plan.Placeholders, cur) {
				b.plan.Placeholders = append(b.plan.Placeholders, cur)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("checking protected path %s: %w", cur, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			// A protected path (or a parent) that is a link: protect what
			// it points to if that is visible, else it dangles inside.
			target, err := filepath.EvalSymlinks(cur)
			if err != nil {
				return nil
			}
			if b.visible(target) {
				b.add(opReadOnly, target, target)
			}
			return nil
		}
		if i < len(parts)-1 && !fi.IsDir() {
			return nil // e.g. .git is a file (a worktree): nothing below it
		}
	}
	b.add(opReadOnly, full, full)
	return nil
}

// unwritable reports that neither this user nor a sandbox running as it can
// create entries in dir: the user is not root, may not write to dir and
// does not own it (an owner could chmod it first).
func unwritable(dir string) bool {
	if os.Geteuid() == 0 || unix.Access(dir, unix.W_OK) == nil {
		return false
	}
	var st unix.Stat_t
	return unix.Stat(dir, &st) == nil && int(st.Uid) != os.Geteuid()
}

// landlockRules is the second line of defence under bubblewrap: whatever
// the mounts allow, the command may write only to the policy's write paths,
// the private /tmp and /dev (ttys, /dev/null, /dev/shm); with the network
// denied it may not bind or connect TCP; and it may not signal processes or
// reach abstract unix sockets outside its own sandbox.
func (b *bwrapBuilder) landlockRules() *landlock.Rules {
	r := &landlock.Rules{ReadOnly: []string{"/"}, ReadWrite: []string{privateTmp, "/dev"},
		DenyNetwork: b.p.Network.Mode != policy.NetOpen, ScopeSignals: true, ScopeAbstractUnix: true}
	for _, w := range b.p.Write {
		if w != privateTmp && deniedBy(b.p.Deny, w) == "" {
			r.ReadWrite = append(r.ReadWrite, w)
		}
	}
	r.ReadWrite = append(r.ReadWrite, b.p.UnixSockets...)
	return r
}

// existingOnly reports whether a protected path needs protecting only when
// it exists, so a missing one gets no placeholder: shell start-up files
// outside the home directory (nothing runs them from a project), and the
// workspace's .cordon.yaml (a new one can only add restrictions, but an
// existing one must not be rewritten to drop them).
func existingOnly(rel string, inHome bool) bool {
	switch {
	case shellStartup(rel) || rel == ".config/fish":
		return !inHome
	case rel == ".cordon.yaml":
		return true
	}
	return false
}

// shellStartup reports whether rel is a shell start-up file.
func shellStartup(rel string) bool {
	switch rel {
	case ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
		".zshrc", ".zshenv", ".zprofile", ".zlogin":
		return true
	}
	return false
}

// mask hides denied paths: absolute entries directly, relative globs by
// scanning the workspace and the writable roots.
func (b *bwrapBuilder) mask() error {
	var globs []string
	for _, d := range b.p.Deny {
		if !filepath.IsAbs(d) {
			globs = append(globs, d)
			continue
		}
		if globscan.IsGlob(d) {
			matches, err := filepath.Glob(d)
			if err != nil {
				return fmt.Errorf("deny pattern %q: %w", d, err)
			}
			for _, m := range matches {
				b.maskPath(m, d)
			}
			continue
		}
		b.maskPath(d, d)
	}
	if len(globs) == 0 {
		return nil
	}
	seen := map[string]bool{}
	for _, r := range b.scanRoots() {
		if seen[r] {
			continue
		}
		seen[r] = true
		matches, _, err := globscan.Scan(r, globs, globscan.Limits{})
		if err != nil {
			return fmt.Errorf("matching deny globs in %s: %w", r, err)
		}
		for _, m := range matches {
			b.maskPath(m.Path, m.Pattern)
		}
	}
	return nil
}

// scanRoots are the trees in which relative deny globs are matched: the
// workspace and every writable directory except the private /tmp and the
// sandbox cache (only sandboxes write there, so it holds no secret of the
// user's, and a module cache can hold a great many files).
func (b *bwrapBuilder) scanRoots() []string {
	out := []string{b.p.Workspace}
	for _, r := range b.roots {
		if r.writable && r.path != privateTmp && r.path != b.p.SandboxCache {
			if fi, err := os.Stat(r.path); err == nil && fi.IsDir() {
				out = append(out, r.path)
			}
		}
	}
	return out
}

// maskPath hides one existing denied path, and the target of a denied
// symlink, wherever they are visible inside the sandbox.
func (b *bwrapBuilder) maskPath(path, rule string) {
	fi, err := os.Lstat(path)
	if err != nil {
		return
	}
	targets := []string{path}
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, err := filepath.EvalSymlinks(path)
		if err != nil {
			return // dangling: nothing to read
		}
		targets = []string{t}
		fi, err = os.Stat(t)
		if err != nil {
			return
		}
	}
	for _, t := range targets {
		if !b.visible(t) && !b.maskInvisible(t) {
			continue
		}
		src := filepath.Join(b.opts.StateDir, maskFile)
		if fi.IsDir() {
			src = filepath.Join(b.opts.StateDir, maskDir)
		}
		b.add(opMask, src, t)
	}
	_ = rule
}

// maskInvisible reports whether a denied path outside every visible tree
// is masked anyway, so that reading it says "Permission denied" rather than
// "No such file or directory". Only paths inside the (empty) home are: it
// tells an agent clearly that the path is off limits.
func (b *bwrapBuilder) maskInvisible(path string) bool {
	h := b.opts.Home
	return h != "" && h != "/" && strings.HasPrefix(path, h+"/") && !b.visible(h)
}

// visible reports whether path lies inside a tree bound into the sandbox.
func (b *bwrapBuilder) visible(path string) bool {
	for _, r := range b.roots {
		if path == r.path || strings.HasPrefix(path, strings.TrimSuffix(r.path, "/")+"/") {
			return true
		}
	}
	return false
}

func (b *bwrapBuilder) add(kind int, src, dst string) {
	b.ops = append(b.ops, mountOp{kind: kind, src: src, dst: dst})
}

// workdir is the host's working directory if it is visible, else the
// workspace.
func (b *bwrapBuilder) workdir() string {
	if c := b.opts.Cwd; c != "" && b.visible(c) && deniedBy(b.p.Deny, c) == "" {
		return c
	}
	return b.p.Workspace
}

// sortOps orders mounts so that a parent is mounted before anything inside
// it, and at one path a later kind overrides an earlier one. Remounts come
// last, once everything below them is in place.
func sortOps(ops []mountOp) []mountOp {
	sort.SliceStable(ops, func(i, j int) bool {
		a, b := ops[i], ops[j]
		if (a.kind == opRemountRO) != (b.kind == opRemountRO) {
			return b.kind == opRemountRO
		}
		da, db := depth(a.dst), depth(b.dst)
		if da != db {
			return da < db
		}
		return a.kind < b.kind
	})
	// Drop exact duplicates.
	out := ops[:0]
	seen := map[mountOp]bool{}
	for _, m := range ops {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

// coveredBy reports whether path is at or below one of the roots other
// than the private /tmp (for write roots: so a read bind would wrongly
// make it read-only).
func coveredBy(path string, write []string) bool {
	for _, w := range write {
		if w == privateTmp {
			continue
		}
		if path == w || strings.HasPrefix(path, strings.TrimSuffix(w, "/")+"/") {
			return true
		}
	}
	return false
}

// deniedBy returns the absolute deny entry that covers path, or "".
func deniedBy(deny []string, path string) string {
	for _, d := range deny {
		if filepath.IsAbs(d) && !globscan.IsGlob(d) && (path == d || strings.HasPrefix(path, d+"/")) {
			return d
		}
	}
	return ""
}

// ensureMasks creates the files bound over denied and protected paths.
func ensureMasks(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating state directory %s: %w", dir, err)
	}
	mk := func(name string, isDir bool, mode os.FileMode) error {
		p := filepath.Join(dir, name)
		if isDir {
			if err := os.Mkdir(p, mode); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("creating %s: %w", p, err)
			}
		} else {
			// O_EXCL: an existing mask is mode 0, and opening it again
			// fails for anyone but root.
			f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
			switch {
			case errors.Is(err, fs.ErrExist):
			case err != nil:
				return fmt.Errorf("creating %s: %w", p, err)
			default:
				f.Close()
			}
		}
		return os.Chmod(p, mode)
	}
	for _, m := range []struct {
		name  string
		isDir bool
		mode  os.FileMode
	}{{maskFile, false, 0}, {maskDir, true, 0}, {emptyFile, false, 0o444}, {emptyDir, true, 0o555}} {
		if err := mk(m.name, m.isDir, m.mode); err != nil {
			return err
		}
	}
	return nil
}

// hasEnv reports whether env sets name.
func hasEnv(env []string, name string) bool {
	for _, e := range env {
		if k, _, _ := strings.Cut(e, "="); k == name {
			return true
		}
	}
	return false
}
