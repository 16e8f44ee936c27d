package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/policy"
)

// PermissiveNote is the degraded line of every permissive run under
// bubblewrap; PermissiveLandlockNote on the Landlock-only backend.
const (
	PermissiveNote         = "mode permissive: the filesystem and network rules are not enforced (the host's files as your user may change them, the host's network); the pid, ipc and uts namespaces, the seccomp filter, the limits and the timeout are; the violation monitor records every access the policy would deny; in the write paths the git directories' configuration and hooks and the protected names (.envrc, editor and agent config, shell start-up files) stay read-only as in mode standard, and so do those that exist at the top of the home, cordon's own config, the home's other start-up paths (deny_write's guarded entries) and where git looks for hooks and config outside the write paths (core.hooksPath, includes), one of those the run creates being moved aside after it; cordon's state is hidden"
	PermissiveLandlockNote = "mode permissive on the Landlock-only backend: nothing confines the files and the network (no Landlock rules): cordon's own config and state and the paths through which code runs later are writable too (after the run, what it planted in the write paths is disarmed, a file it changed or created among the guarded paths, where git looks outside the write paths and the protected names at the top of the home is put back as it was or moved aside, and beyond those nothing is checked), and there is no pid namespace; the seccomp filter, the limits and the timeout stay; the violation monitor records every access the policy would deny"
)

// permissiveMounts are the mounts of mode permissive's bwrap plan: every
// entry of the host's root as it is (directories bound writable, as far as
// the user may write them, symbolic links recreated; /sys read-only),
// /proc and /dev being the sandbox's own; /run's entries one by one, so
// that the helper's directory, /run/cordon, is the sandbox's and nothing
// is created on the host for it.
func permissiveMounts(root string) ([]string, error) {
	var args []string
	add := func(dir string, skip func(string) bool) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("mode permissive: listing %s: %w", dir, err)
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if skip(e.Name()) {
				continue
			}
			switch {
			case e.Type()&os.ModeSymlink != 0:
				t, err := os.Readlink(p)
				if err != nil {
					return fmt.Errorf("mode permissive: %w", err)
				}
				args = append(args, "--symlink", t, p)
			case p == "/sys":
				args = append(args, "--ro-bind", p, p)
			default:
				args = append(args, "--bind", p, p)
			}
		}
		return nil
	}
	err := add(root, func(name string) bool { return name == "proc" || name == "dev" || name == "run" })
	if err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(filepath.Join(root, "run")); err == nil && fi.IsDir() {
		args = append(args, "--dir", "/run")
		if err := add(filepath.Join(root, "run"), func(name string) bool { return name == filepath.Base(filepath.Dir(helperspec.HelperPath)) }); err != nil {
			return nil, err
		}
	}
	return append(args, "--ro-bind-fd", fmt.Sprint(helperspec.FdHelperExe), helperspec.HelperPath), nil
}

// deniedPaths are the existing paths p's deny rules name: its literal
// absolute entries, and the deny globs' matches in the walked trees.
func deniedPaths(p *policy.Policy, trees map[string]*tree) []string {
	var out []string
	for _, d := range p.Deny {
		if filepath.IsAbs(d) && !policy.IsGlob(d) {
			if _, err := os.Lstat(d); err == nil {
				out = append(out, d)
			}
		}
	}
	for _, t := range trees {
		for _, m := range t.denied {
			out = append(out, m.Path)
		}
		out = append(out, t.unlisted...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// maskArgs hides the denied path d in mode permissive: an unreadable empty
// directory or file of the state directory bound over it (over what a
// symbolic link points to, when it is one).
func (b *bwrapBuilder) maskArgs(d string) []string {
	fi, err := os.Stat(d)
	if err != nil {
		return nil // dangling, or gone
	}
	if t, err := filepath.EvalSymlinks(d); err == nil {
		d = t
	}
	mask := maskFile
	if fi.IsDir() {
		mask = maskDir
	}
	return []string{"--ro-bind", filepath.Join(b.opts.StateDir, mask), d}
}

// buildLandlockPermissive is mode permissive's plan on the Landlock-only
// backend: the helper runs the command with no Landlock rules and the
// seccomp filter's dangerous calls only (no socket families refused), with
// the host's network; the limits, the timeout, the private TMPDIR and the
// check for planted files stay. The policy's denied paths cannot be hidden
// there (Options.HideDenied: cordon learn), so that is refused.
func buildLandlockPermissive(p *policy.Policy, command []string, opts Options) (*Plan, error) {
	if opts.HideDenied {
		return nil, errors.New("cordon learn needs bubblewrap, which keeps the policy's secrets hidden while it learns; the Landlock-only backend cannot (see cordon status)")
	}
	q := *p
	q.Network = policy.Network{Mode: policy.NetOpen}
	pl, err := buildLandlock(&q, command, opts)
	if err != nil {
		return nil, err
	}
	pl.Spec.Landlock = nil
	if sc := pl.Spec.Seccomp; sc != nil {
		sc.DenyNetwork, sc.DenyUnix, sc.StreamOnly, sc.DenyOtherFamilies = false, false, false, false
	}
	pl.Degraded = []string{PermissiveLandlockNote}
	// Nothing is hidden in mode permissive there.
	pl.RunNotes = slices.DeleteFunc(pl.RunNotes, func(n string) bool { return strings.HasSuffix(n, unlistedHidden) })
	// Nothing keeps a guarded path from being created: one the run
	// created is moved aside after it, as under bubblewrap; nor from
	// being changed: the launcher compares what exists outside the
	// write paths (which the check for planted files walks) with what it
	// was before the run.
	writes := p.HostWrites()
	// A symbolic link (~/.gitconfig into a dotfiles repository) is
	// written through: what it names is recorded too.
	unkeep := func(q string) {
		pl.Unkept = append(pl.Unkept, q)
		if t, err := filepath.EvalSymlinks(q); err == nil && t != q && !slices.Contains(pl.Unkept, t) && !policy.CoveredBy(t, writes) {
			pl.Unkept = append(pl.Unkept, t)
		}
	}
	for _, g := range append(slices.Clone(p.Guarded), gitLooksOutside(p, pl.Guard, pl.Guard.Roots)...) {
		if _, err := os.Lstat(g); errors.Is(err, fs.ErrNotExist) {
			pl.GuardedMissing = append(pl.GuardedMissing, g)
		} else if err == nil && !policy.CoveredBy(g, writes) {
			unkeep(g)
		}
	}
	if h := opts.Home; h != "" && h != "/" && !policy.CoveredBy(h, writes) {
		for _, n := range policy.ProtectedNames {
			q := filepath.Join(h, strings.TrimSuffix(n, "/"))
			if slices.Contains(pl.Unkept, q) || slices.Contains(pl.GuardedMissing, q) {
				continue
			}
			if _, err := os.Lstat(q); err == nil {
				unkeep(q)
			} else if errors.Is(err, fs.ErrNotExist) {
				pl.GuardedMissing = append(pl.GuardedMissing, q)
			}
		}
	}
	return pl, nil
}

// permissiveGuards keep, in mode permissive under bubblewrap, what must
// never be changed from inside even then: the guarded paths (cordon's
// config, the home's paths through which code runs later) and where git
// looks outside the writable roots (gitLooksOutside) bound read-only
// over themselves wherever they are, and the state directory (cordon's
// masks and locks, and by default the audit log) hidden. missing are the
// guarded paths that do not exist (see Plan.GuardedMissing).
func (b *bwrapBuilder) permissiveGuards() (ops []mountOp, missing []string) {
	for _, g := range append(slices.Clone(b.p.Guarded), gitLooksOutside(b.p, b.plan.Guard, b.writableRoots())...) {
		if _, err := os.Lstat(g); err == nil {
			ops = append(ops, mountOp{opReadOnly, g, g})
		} else {
			missing = append(missing, g)
		}
	}
	if sd := b.opts.StateDir; sd != "" {
		ops = append(ops, mountOp{opMask, filepath.Join(sd, maskDir), sd})
	}
	return ops, missing
}

// protectHome protects, in mode permissive, the top of the home
// directory when no writable root holds it (it is writable all the same):
// its protected names that exist (shell start-up files, .envrc, editor
// config, ...) are kept read-only as protect keeps them in a writable
// root, and a repository there (the home kept in git) as a git directory
// is. It returns the missing names, which the launcher moves aside after
// the run if the run created them (Plan.GuardedMissing): a placeholder
// for each would cost a mount point in the home at every start. The home
// is not walked: below its top, mode permissive protects only the write
// paths.
func (b *bwrapBuilder) protectHome() (missing []string, err error) {
	h := b.opts.Home
	if h == "" || h == "/" || b.writableRootOf(h) != "" {
		return nil, nil
	}
	pr := parseProtected(b.p.Protected)
	for _, n := range append(slices.Clone(pr.anyDepth), pr.rootOnly...) {
		full := filepath.Join(h, n.rel)
		if n.rel == policy.WorkspaceConfigName || b.deniedBy(full) != "" {
			continue
		}
		if _, err := os.Lstat(full); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, full)
			continue
		}
		if err := b.protectExisting(full); err != nil {
			return nil, err
		}
	}
	if g := filepath.Join(h, ".git"); pr.git {
		fi, err := os.Lstat(g)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = append(missing, g) // git init ~ would plant one
		case err == nil && fi.IsDir():
			return missing, b.protectGitDir(h, g, listGitDir(g))
		case err == nil:
			return missing, b.protectExisting(g) // a gitlink
		}
	}
	return missing, nil
}

// permissiveArgs adds mode permissive's mounts to args: the host's root
// (permissiveMounts), and over it the standard plan's protection (protect:
// in every writable root the git directories' configuration and hooks,
// the protected names and their placeholders, and the guarded deny_write
// paths, read-only), the guarded paths (permissiveGuards) and, for
// Options.HideDenied, the masks of the denied paths; and it drops what
// only the standard layout needs.
func (b *bwrapBuilder) permissiveArgs(args []string) ([]string, error) {
	opts := b.opts
	mounts, err := permissiveMounts("/")
	if err != nil {
		return nil, err
	}
	args = append(args, mounts...)
	homeMissing, err := b.protectHome()
	if err != nil {
		return nil, err
	}
	// Of the standard plan's mounts, protect's (read-only binds,
	// placeholders, pins) stay: the rest (the policy's read and write
	// paths, the empty home, the private /tmp) mode permissive does not
	// enforce.
	ops := slices.DeleteFunc(b.ops, func(m mountOp) bool { return m.kind != opPin && m.kind != opReadOnly })
	b.plan.Hidden = nil
	for _, d := range b.denied {
		if m := b.maskArgs(d); m != nil {
			ops = append(ops, mountOp{opMask, m[1], m[2]})
			b.plan.Hidden = append(b.plan.Hidden, d)
			if m[2] != d {
				b.plan.Hidden = append(b.plan.Hidden, m[2])
			}
		}
	}
	guards, missing := b.permissiveGuards()
	ops = append(ops, guards...)
	b.ops = dropInsideReadOnly(dropShadowed(sortOps(dropUnderMasks(ops, filepath.Join(opts.StateDir, maskDir)))))
	b.keepMountedPlaceholders()
	b.plan.ReadOnly = nil
	for _, m := range b.ops {
		args = append(args, m.args()...)
		if m.kind == opReadOnly {
			b.plan.ReadOnly = append(b.plan.ReadOnly, m.dst)
		}
	}
	b.plan.GuardedMissing = append(missing, homeMissing...)
	// The sandbox's module cache is not shown at the host's.
	b.goMod, b.plan.Writable = "", nil
	b.plan.Notes = slices.DeleteFunc(b.plan.Notes, func(n string) bool { return strings.HasPrefix(n, "the sandbox's module cache is shown at") })
	b.plan.Dir = b.p.Workspace
	if c := opts.Cwd; c != "" {
		b.plan.Dir = c
	}
	return args, nil
}
