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

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/enforce/landlock"
	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/policy"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// Kinds of mount operation, in the order they are applied to one path: a
// later kind at the same path overrides an earlier one.
const (
	opTmpfs = iota
	opSymlink
	opRead
	opWrite
	opPin      // a directory bound onto itself, so it cannot be renamed
	opReadOnly // protected paths and deny_write re-bound read-only
	opMask     // denied paths hidden behind an unreadable file or directory
	opMaskDir  // a denied directory in the empty home: an unreadable directory made there, no mount
	opHelper
	opRemountRO
	// opGitConfig binds a private copy of a repository's config over it,
	// writable, from the descriptor src names (Plan.GitConfigs).
	opGitConfig
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
	case opWrite, opPin:
		return []string{"--bind", m.src, m.dst}
	case opMaskDir:
		return []string{"--perms", "0000", "--dir", m.dst}
	case opHelper:
		return []string{"--ro-bind-fd", fmt.Sprint(helperspec.FdHelperExe), m.dst}
	case opRemountRO:
		return []string{"--remount-ro", m.dst}
	case opGitConfig:
		return []string{"--bind-fd", m.src, m.dst}
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
	// commondirFile holds ".": a git directory's commondir naming itself,
	// which git reads as if there were none, bound over a missing
	// commondir so that none can be planted.
	commondirFile = "commondir"
	// denyResolvConf is the resolv.conf of a denied network, naming the
	// name server cordon serves inside (bindDenyResolver).
	denyResolvConf = "resolv.conf"
)

// denyResolvConfText is denyResolvConf's content.
const denyResolvConfText = "# cordon: the network is denied; this name server answers every lookup \"not found\" at once, and cordon names each host after the run\nnameserver 127.0.0.1\n"

// SandboxHostname is the sandbox's host name under bubblewrap (its own
// UTS namespace).
const SandboxHostname = "cordon"

// privateTmp is always a fresh tmpfs; the host's /tmp is never visible.
const privateTmp = "/tmp"

type bwrapBuilder struct {
	p     *policy.Policy
	opts  Options
	ops   []mountOp
	plan  *Plan
	roots []root // visible trees, for deciding what a mask may touch
	// writable caches writableRoots, once every root is bound.
	writable []string
	// literalDeny caches the literal absolute deny entries (deniedBy).
	literalDeny []string
	// goMod is the host module cache's path where the sandbox's own is
	// shown (bindGoModCache), or "".
	goMod string
	// emptyHome: the home is an empty tmpfs, made read-only once
	// everything inside it is in place.
	emptyHome bool
	// permissive builds mode permissive's plan (see permissiveMounts).
	permissive bool
	// denied are the existing paths the deny rules name, literal ones and
	// the deny globs' matches in the trees walked (for HideDenied).
	denied []string
	// gitProtected are the git directories whose entries protect made
	// read-only (see keptReadOnly).
	gitProtected map[string]bool
	// trusted caches autoTrusted, by writable root.
	trusted map[string]map[string]string
	// mounts and user are the helper's (Spec.Mounts and Spec.User: see
	// helperMounts), or empty.
	mounts []helperspec.Mount
	user   *helperspec.User
	detach []string
	// placeholders are the paths of plan.Placeholders (addPlaceholder).
	placeholders map[string]bool
}

type root struct {
	path     string
	writable bool
}

func buildBwrap(p *policy.Policy, command []string, opts Options) (*Plan, error) {
	return buildBwrapMode(p, command, opts, p.Mode == policy.ModePermissive)
}

// buildBwrapMode is buildBwrap, for mode permissive when permissive is
// set.
func buildBwrapMode(p *policy.Policy, command []string, opts Options, permissive bool) (*Plan, error) {
	bw := opts.Host.Bwrap
	if err := opts.Host.BwrapErr; err != nil {
		return nil, err
	}
	if bw == "" {
		return nil, errors.New("plan: no bubblewrap binary given (Options.Host: see launch.HostFacts)")
	}
	if opts.StateDir == "" {
		return nil, errors.New("plan: no state directory given")
	}
	if err := dirProblem(opts.StateDir); err != nil {
		return nil, fmt.Errorf("creating state directory %s: %w", opts.StateDir, err)
	}
	b := &bwrapBuilder{p: p, opts: opts, permissive: permissive, gitProtected: map[string]bool{}, plan: &Plan{
		Backend:       backend.Bwrap,
		Command:       command,
		StateDir:      opts.StateDir,
		Workspace:     p.Workspace,
		Interactive:   opts.Interactive,
		Prepare:       stateFiles(opts.StateDir),
		LockWorkspace: true, // the placeholders are bwrap's mount points
		PidNamespace:  true, // --unshare-pid, below
	}}
	if err := b.collect(); err != nil {
		return nil, err
	}
	args := []string{bw,
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--cap-drop", "ALL", "--hostname", SandboxHostname,
	}
	mode, _ := netMode(p)
	if mode != policy.NetOpen && !permissive {
		// bwrap brings the new namespace's loopback up.
		args = append(args, "--unshare-net")
	}
	if opts.Interactive {
		b.plan.Notes = append(b.plan.Notes, "--new-session omitted: the command runs on a private pseudo-terminal that cordon created, so TIOCSTI cannot reach your terminal")
	} else {
		args = append(args, "--new-session")
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev")
	if permissive {
		var err error
		if args, err = b.permissiveArgs(args); err != nil {
			return nil, err
		}
	} else {
		b.ops = dropInsideReadOnly(dropShadowed(sortOps(dropUnderMasks(b.ops, filepath.Join(opts.StateDir, maskDir)))))
		b.keepMountedPlaceholders()
		b.copyGitConfigs()
		ops, err := b.helperMounts(b.ops, HelperMountsFrom)
		if err != nil {
			return nil, err
		}
		for _, m := range ops {
			args = append(args, m.args()...)
		}
		args = append(args, b.helperMountArgs()...)
		b.plan.Dir = b.workdir()
	}
	b.plan.Guard.KeptReadOnly = b.keptReadOnly()
	args = append(args, "--chdir", b.plan.Dir, "--", helperspec.HelperPath, helperspec.HelperCommand, "--")
	b.plan.Argv = append(args, command...)
	var dropped []string
	b.plan.Env, dropped = buildEnv(p, opts)
	b.plan.RunNotes = append(b.plan.RunNotes, dropped...)
	if b.goMod != "" {
		remapGoEnv(b.plan.Env, sandboxCache(p), b.goMod)
	}
	if slices.Contains(b.plan.PlaceholderPaths(), filepath.Join(p.Workspace, ".git")) {
		// The workspace is no git repository, but the placeholder makes
		// it look like one to go build, whose version stamping then fails
		// on "git status". There is nothing to stamp.
		b.plan.Env = addGoFlag(b.plan.Env, "-buildvcs=false")
	}
	b.plan.Spec = buildSpec(p)
	b.plan.Spec.Mounts, b.plan.Spec.User, b.plan.Spec.Detach = b.mounts, b.user, b.detach
	if permissive {
		b.plan.Spec.Seccomp.DenyOtherFamilies = false
		b.plan.Degraded = append(b.plan.Degraded, PermissiveNote)
		b.plan.Timeout = p.Timeout
		b.plan.Limits = limits.Limits{MaxProcesses: p.Resources.MaxProcesses, MaxMemoryMB: p.Resources.MaxMemoryMB, MaxCPUSeconds: p.Resources.MaxCPUSeconds}
		return b.plan, nil
	}
	b.plan.Spec.Landlock = b.landlockRules()
	n, err := planNet(p, true, helperspec.HelperPath)
	if err != nil {
		return nil, err
	}
	if n != nil {
		b.plan.Net = n
		b.plan.Env = n.MergeEnv(b.plan.Env)
		b.plan.Spec.Net = n.spec()
	}
	b.plan.Timeout = p.Timeout
	b.plan.Limits = limits.Limits{MaxProcesses: p.Resources.MaxProcesses, MaxMemoryMB: p.Resources.MaxMemoryMB, MaxCPUSeconds: p.Resources.MaxCPUSeconds}
	b.plan.Strict = p.Mode == policy.ModeStrict
	return b.plan, nil
}

// collect computes every mount operation.
func (b *bwrapBuilder) collect() error {
	p := b.p
	denied := func(path string) bool { return b.deniedBy(path) != "" }

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
	if h := b.opts.Home; h != "" && h != "/" && h != privateTmp && !policy.CoveredBy(h, p.Read) && !policy.CoveredBy(h, p.HostWrites()) {
		// An empty, read-only home: writes there fail loudly instead of
		// vanishing with the sandbox.
		b.add(opTmpfs, "", h)
		b.add(opRemountRO, "", h)
		b.emptyHome = true
	}

	for _, r := range p.Read {
		if denied(r) || r == privateTmp || policy.CoveredBy(r, p.HostWrites()) {
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
		if policy.DeniedBy(p.DenyWrite, w) != "" && w != p.Workspace && !repoGitRoot(p, w) {
			// A write path inside a deny_write path stays read-only:
			// the deny wins, as cordon's warning about --allow-write
			// says (bound writable after the deny_write path's
			// read-only re-bind, it was writable). The workspace, and
			// its repository's git directory, are the user's choice of
			// project and stay writable.
			if err := b.bindPath(w, false); err != nil {
				return err
			}
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
	b.goMod = b.bindGoModCache(optsGetenv(b.opts))
	switch mode, _ := netMode(p); {
	case mode == policy.NetOpen:
		b.bindResolver()
	case mode == policy.NetDeny && !b.permissive:
		b.bindDenyResolver()
	}
	writable := b.writableRoots()
	scan := b.scanRoots()
	trees, err := walkRoots(p, scan, policy.DenyGlobSkipped(b.opts.Home), func(r string) bool { return slices.Contains(writable, r) }, b.opts.WalkLimits, b.opts.WalkCache)
	if err != nil {
		return err
	}
	if n := denyScanNote(p, scan, trees); n != "" {
		b.plan.Notes = append(b.plan.Notes, n)
	}
	// The guard first: protect keeps read-only where git looks (Guard.Git).
	b.plan.Guard = guardFrom(p, writable, trees, b.opts.KeepPlanted)
	completeGuard(&b.plan.Guard, p, writable, trees, b.opts.WalkLimits, b.opts.WalkCache)
	if err := b.protect(trees); err != nil {
		return err
	}
	if err := b.mask(trees); err != nil {
		return err
	}
	if b.permissive && b.opts.HideDenied {
		b.denied = deniedPaths(p, trees)
	}
	if n := unlistedNote(trees, func(string) bool { return true }); n != "" && (!b.permissive || b.opts.HideDenied) {
		b.plan.RunNotes = append(b.plan.RunNotes, n)
	}
	// cordon's own state (masks, locks, placeholder records) must not be
	// changed from inside, e.g. when the home directory is writable.
	// It exists by the time bwrap runs (Plan.Prepare).
	if sd := b.opts.StateDir; b.visible(sd) {
		b.add(opMask, filepath.Join(sd, maskDir), sd)
		if root := b.writableRootOf(sd); root != "" {
			b.pinBetween(root, sd, true)
		}
	}
	b.add(opHelper, "", helperspec.HelperPath)
	return nil
}

// bindPath binds one allowed path. Missing paths are skipped (a system
// directory such as /lib32 may not exist). A path whose parent is a
// symlink-free system link such as /bin -> usr/bin becomes a symlink.
func (b *bwrapBuilder) bindPath(path string, writable bool) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) && writable && path == sandboxCache(b.p) {
		// The launcher creates it (Plan.Prepare).
		src, err := resolvePlanned(path)
		if err != nil {
			return err
		}
		b.add(opWrite, src, path)
		b.roots = append(b.roots, root{path: path, writable: true})
		if src != path {
			b.roots = append(b.roots, root{path: src, writable: true})
		}
		return nil
	}
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

// bindDenyResolver gives a sandbox whose network is denied a resolv.conf
// naming only 127.0.0.1, where cordon's name server answers (Net.DNS):
// the host's may name a server the empty namespace cannot reach, so a
// lookup would fail as "temporary", unrecorded, and tools retry. It is
// bound where the host's /etc/resolv.conf leads (often a link into /run);
// with none on the host, resolvers ask 127.0.0.1 anyway.
func (b *bwrapBuilder) bindDenyResolver() {
	if rc := b.opts.Host.ResolvConf; rc != "" {
		b.add(opRead, filepath.Join(b.opts.StateDir, denyResolvConf), rc)
	}
}

// landlockRules is the second line of defence under bubblewrap: whatever
// the mounts allow, the command may write only to the policy's write paths,
// the private /tmp and /dev (ttys, /dev/null, /dev/shm); with the network
// denied it may not bind or connect TCP (in the loopback and filtered
// modes its network namespace has only loopback, whose servers and
// clients must work); and it may not signal processes or reach abstract
// unix sockets outside its own sandbox.
func (b *bwrapBuilder) landlockRules() *landlock.Rules {
	mode, _ := netMode(b.p)
	r := &landlock.Rules{ReadOnly: []string{"/"}, ReadWrite: []string{privateTmp, "/dev"},
		DenyNetwork: mode == policy.NetDeny, ScopeSignals: true, ScopeAbstractUnix: true}
	if mode == policy.NetDeny {
		// Nothing but the forwarded ports, on the sandbox's loopback.
		r.ConnectTCP = slices.Clone(b.p.Network.ForwardPorts)
	}
	for _, w := range b.p.Write {
		if w != privateTmp && b.deniedBy(w) == "" {
			r.ReadWrite = append(r.ReadWrite, w)
		}
	}
	if b.goMod != "" {
		r.ReadWrite = append(r.ReadWrite, b.goMod) // the sandbox's module cache there
	}
	r.ReadWrite = append(r.ReadWrite, b.p.UnixSockets...)
	return r
}

// mask hides denied paths: absolute entries directly, relative globs by
// what the walk of the scanned roots matched (see scanRoots).
func (b *bwrapBuilder) mask(trees map[string]*tree) error {
	for _, d := range b.p.Deny {
		if !filepath.IsAbs(d) {
			continue
		}
		if policy.IsGlob(d) {
			matches, err := policy.ExpandAbsDeny(d, b.opts.WalkLimits)
			if err != nil {
				return err
			}
			for _, m := range matches {
				b.maskPath(m)
			}
			continue
		}
		b.maskPath(d)
	}
	for r, t := range trees {
		for _, m := range t.denied {
			if m.Path == r && b.visible(r) {
				// A read path that is a denied file (walkRoot) is bound
				// as a file, a link too: mask it where it is bound.
				b.add(opMask, filepath.Join(b.opts.StateDir, maskFile), r)
			}
			b.maskPath(m.Path)
		}
		for _, d := range t.unlisted {
			b.maskPath(d) // not searched: hidden whole
		}
	}
	return nil
}

// scanRoots are the trees walked once before the run: the read roots
// searched for deny globs (policy.Policy.DenyGlobReadRoots: the workspace
// and the read paths but the system directories and tool caches) and
// every writable root but the private /tmp and the sandbox cache (see
// writableRoots).
func (b *bwrapBuilder) scanRoots() []string {
	return slices.Concat(b.p.DenyGlobReadRoots(b.opts.Home), b.writableRoots())
}

// maskPath hides one existing denied path, and the target of a denied
// symlink, wherever they are visible inside the sandbox.
func (b *bwrapBuilder) maskPath(path string) {
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
		b.plan.Hidden = append(b.plan.Hidden, t)
		if fi.IsDir() && b.inEmptyHome(t) {
			// The home is a tmpfs, read-only once set up: an unreadable
			// directory made in it hides this one as a mask would
			// (nobody inside can chmod or remove it), with no mount.
			b.add(opMaskDir, "", t)
			continue
		}
		if !fi.IsDir() && b.writableRootOf(t) == "" && unreadable(t) {
			// This user cannot read it on the host, and inside it is
			// the same user with no capabilities and no way to change
			// the file: a mask would hide nothing more.
			continue
		}
		src := filepath.Join(b.opts.StateDir, maskFile)
		if fi.IsDir() {
			src = filepath.Join(b.opts.StateDir, maskDir)
		}
		b.add(opMask, src, t)
	}
}

// maskInvisible reports whether a denied path outside every visible tree
// is masked anyway, so that reading it says "Permission denied" rather than
// "No such file or directory". Only paths inside the (empty) home are: it
// tells an agent clearly that the path is off limits.
func (b *bwrapBuilder) maskInvisible(path string) bool {
	h := b.opts.Home
	return h != "" && h != "/" && subpath.Below(path, h) && !b.visible(h)
}

// inEmptyHome reports whether path lies in the empty home (a tmpfs) and
// outside every tree bound into the sandbox.
func (b *bwrapBuilder) inEmptyHome(path string) bool {
	return b.emptyHome && subpath.Below(path, b.opts.Home) && !b.visible(path)
}

// visible reports whether path lies inside a tree bound into the sandbox.
func (b *bwrapBuilder) visible(path string) bool {
	for _, r := range b.roots {
		if policy.Within(path, r.path) {
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
	if c := b.opts.Cwd; c != "" && b.visible(c) && b.deniedBy(c) == "" {
		return c
	}
	return b.p.Workspace
}

// dropUnderMasks drops the binds and masks strictly inside a directory
// that is masked (an empty unreadable directory, maskDir, is bound over
// it): what was below is hidden already, the deny wins over a read or
// write path inside it, and bwrap could not make a mount point in the
// empty directory ("Can't mkdir parents"), so the run would not start.
func dropUnderMasks(ops []mountOp, maskDir string) []mountOp {
	var dirs []string
	for _, m := range ops {
		if m.kind == opMask && m.src == maskDir || m.kind == opMaskDir {
			dirs = append(dirs, m.dst)
		}
	}
	if len(dirs) == 0 {
		return ops
	}
	return slices.DeleteFunc(ops, func(m mountOp) bool {
		switch m.kind {
		case opRead, opWrite, opPin, opReadOnly, opMask, opMaskDir:
			for _, d := range dirs {
				if subpath.Below(m.dst, d) {
					return true
				}
			}
		}
		return false
	})
}

// sortOps orders mounts so that a parent is mounted before anything inside
// it, and at one path a later kind overrides an earlier one. Remounts come
// last, once everything below them is in place.
func sortOps(ops []mountOp) []mountOp {
	// Drop exact duplicates, and compute each depth once.
	type keyed struct {
		mountOp
		depth int
	}
	ks := make([]keyed, 0, len(ops))
	seen := make(map[mountOp]bool, len(ops))
	for _, m := range ops {
		if !seen[m] {
			seen[m] = true
			ks = append(ks, keyed{m, depth(m.dst)})
		}
	}
	sort.SliceStable(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if (a.kind == opRemountRO) != (b.kind == opRemountRO) {
			return b.kind == opRemountRO
		}
		if a.depth != b.depth {
			return a.depth < b.depth
		}
		return a.kind < b.kind
	})
	out := ops[:0]
	for _, k := range ks {
		out = append(out, k.mountOp)
	}
	return out
}

// dropShadowed drops, from sorted ops, every mount that a later one at the
// same destination covers (the host's module cache bound read-only at its
// path, and then the sandbox's over it; a directory pinned and then bound
// read-only): nothing inside can unmount the later one, and each bind
// costs bubblewrap a read of the mount table. Sources are host paths,
// which no earlier mount changes; and since ops are sorted parents first,
// whatever lies below a destination comes after every mount at it.
func dropShadowed(ops []mountOp) []mountOp {
	mounts := func(k int) bool {
		switch k {
		case opTmpfs, opRead, opWrite, opPin, opReadOnly, opMask, opHelper:
			return true
		}
		return false
	}
	// A pin only makes its directory a mount point: after another mount
	// there it adds nothing (a write path pinned as a git directory stays
	// the write path's bind).
	last := make(map[string]int, len(ops))
	for i, m := range ops {
		if !mounts(m.kind) {
			continue
		}
		if j, ok := last[m.dst]; ok && m.kind == opPin && ops[j].kind != opPin {
			continue
		}
		last[m.dst] = i
	}
	out := ops[:0]
	for i, m := range ops {
		if !mounts(m.kind) || last[m.dst] == i {
			out = append(out, m)
		}
	}
	return out
}

// dropInsideReadOnly drops, from sorted ops, the protections inside a
// read-only mount: a directory pinned, a path bound read-only onto itself,
// a placeholder. Nothing there can be renamed, replaced or created, and a
// pin there would make its tree writable. Masks stay (they hide what is
// there), and so do write paths (the policy's own).
func dropInsideReadOnly(ops []mountOp) []mountOp {
	// readOnly holds, for each destination mounted so far, whether it is
	// read-only.
	readOnly := make(map[string]bool, len(ops))
	out := ops[:0]
	for _, m := range ops {
		if m.kind == opPin || m.kind == opReadOnly {
			if under, ro := enclosing(readOnly, m.dst); under && ro {
				continue
			}
		}
		switch m.kind {
		case opRead, opReadOnly, opMask, opHelper:
			readOnly[m.dst] = true
		case opTmpfs, opWrite, opPin:
			readOnly[m.dst] = false
		}
		out = append(out, m)
	}
	return out
}

// enclosing looks up the nearest mount strictly above path in mounts:
// whether there is one, and whether it is read-only.
func enclosing(mounts map[string]bool, path string) (found, readOnly bool) {
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		if ro, ok := mounts[d]; ok {
			return true, ro
		}
		if d == "/" || d == "." {
			return false, false
		}
	}
}

// keepMountedPlaceholders drops the placeholders whose mount was dropped
// (dropInsideReadOnly): the launcher must not make them.
func (b *bwrapBuilder) keepMountedPlaceholders() {
	mounted := make(map[string]bool, len(b.ops))
	for _, m := range b.ops {
		if m.kind == opReadOnly {
			mounted[m.dst] = true
		}
	}
	b.plan.Placeholders = slices.DeleteFunc(b.plan.Placeholders, func(p Placeholder) bool { return !mounted[p.Path] })
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

// deniedBy is policy.DeniedBy over the policy's literal absolute deny
// entries, picked out once per plan.
func (b *bwrapBuilder) deniedBy(path string) string {
	if b.literalDeny == nil {
		b.literalDeny = []string{}
		for _, d := range b.p.Deny {
			if filepath.IsAbs(d) && !policy.IsGlob(d) {
				b.literalDeny = append(b.literalDeny, d)
			}
		}
	}
	return policy.DeniedBy(b.literalDeny, path)
}

// addGoFlag adds flag to GOFLAGS in env, unless GOFLAGS already says
// something about it; env stays sorted.
func addGoFlag(env []string, flag string) []string {
	name, _, _ := strings.Cut(strings.TrimLeft(flag, "-"), "=")
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			if strings.Contains(v, "-"+name) {
				return env
			}
			env[i] = strings.TrimSpace("GOFLAGS=" + v + " " + flag)
			return env
		}
	}
	env = append(env, "GOFLAGS="+flag)
	sort.Strings(env)
	return env
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
