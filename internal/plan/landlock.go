package plan

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/enforce/landlock"
	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/monitor"
	"github.com/cordon-sandbox/cordon/policy"
)

// landlockDegraded is what the Landlock-only backend cannot enforce, in
// every run. It is printed at run time and refused by strict mode. What
// Landlock alone cannot refuse (a path beneath one it allows, a change of
// metadata) the seccomp supervisor does (Supervision): it is no gap.
var landlockDegraded = []string{
	"no pid namespace: the command can see host processes (it cannot signal them: Landlock scoping); cordon run kills what is left of its tree when it ends or times out; if cordon itself is killed (kill -9), its processes live on until the next run kills them, except those that left its process group (setsid) when no cgroup holds the sandbox",
	"no mount namespace: the host's /tmp is hidden, not replaced (TMPDIR points to a private directory)",
}

// LandlockGaps lists what the Landlock-only backend never enforces, on any
// kernel and with any policy (each run prints these as degraded, with the
// policy's and the kernel's own on top; cordon status shows them).
func LandlockGaps() []string {
	return slices.Clone(landlockDegraded)
}

// UnixSocketGap says, for a kernel with Landlock ABI abi, what the
// Landlock-only backend cannot do about pathname unix sockets (ssh-agent,
// docker, D-Bus) when seccomp may not refuse them (the network is open, or
// --allow-unix-socket names sockets, so AF_UNIX sockets must work): "" from
// ABI 9, where Landlock confines them to the write paths and the allowed
// sockets.
func UnixSocketGap(abi int) string {
	if abi >= landlock.ResolveUnixABI {
		return ""
	}
	return fmt.Sprintf("pathname unix sockets are not confined: Landlock ABI %d cannot (needs ABI %d), and with the network open or --allow-unix-socket seccomp must let unix sockets be created, so every socket this user can name is reachable (an ssh-agent or docker socket too), not only the allowed ones", abi, landlock.ResolveUnixABI)
}

// unixSockets decides how the Landlock-only backend keeps the command from
// the host's pathname unix sockets on a kernel with Landlock ABI abi: from
// ABI 9 by Landlock (restrict: only sockets in the write paths, the allowed
// sockets and those the sandbox creates); below, with the network denied
// and no --allow-unix-socket, by seccomp refusing socket(AF_UNIX)
// (socketpair still works); otherwise not at all, and gap says so.
func unixSockets(abi int, netDenied bool, allowed []string) (restrict, denySocket bool, gap string) {
	if abi >= landlock.ResolveUnixABI {
		return true, false, ""
	}
	if netDenied && len(allowed) == 0 {
		return false, true, ""
	}
	return false, false, UnixSocketGap(abi)
}

// buildLandlock plans a run of the helper directly on the host: Landlock
// limits reads to an allowlist (denied paths carved out of it), writes to
// the write paths and devices to the standard ones and the command's own
// terminal; the seccomp supervisor (Supervision) refuses what Landlock
// cannot: denied, protected and deny_write paths inside the allowed trees,
// and metadata changes outside the write paths; seccomp refuses internet
// sockets when the network is denied; pathname unix sockets are refused as
// unixSockets decides.
func buildLandlock(p *policy.Policy, command []string, opts Options) (*Plan, error) {
	mode, _ := netMode(p)
	pl := &Plan{
		// A command reading the terminal gets a private pty here too:
		// its own session, foreground on it, and never the user's
		// terminal (TIOCSTI aside, a background group reading it stops).
		Interactive: opts.Interactive,
		Backend:     backend.Landlock,
		// The helper runs on the host, without a pid namespace, and
		// execs the command.
		HelperIsChild: true,
		Command:       command,
		StateDir:      opts.StateDir,
		Workspace:     p.Workspace,
		Strict:        p.Mode == policy.ModeStrict,
		Limits:        limits.Limits{MaxProcesses: p.Resources.MaxProcesses, MaxMemoryMB: p.Resources.MaxMemoryMB, MaxCPUSeconds: p.Resources.MaxCPUSeconds},
	}
	pl.Timeout = p.Timeout
	pl.Degraded = append(pl.Degraded, landlockDegraded...)
	if mode == policy.NetOpen {
		pl.Degraded = append(pl.Degraded, "no network namespace: with the network open the command shares the host's (abstract unix sockets are scoped by Landlock)")
	}
	restrictUnix, denyUnix, unixGap := unixSockets(opts.Host.LandlockABI, mode != policy.NetOpen, p.UnixSockets)
	if unixGap != "" {
		pl.Degraded = append(pl.Degraded, unixGap)
	}
	tmp, err := privateTmpDir(opts.StateDir)
	if err != nil {
		return nil, err
	}
	pl.PrivateTmp = tmp

	var writes []string
	for _, w := range p.Write {
		if w == privateTmp || policy.DeniedBy(p.Deny, w) != "" {
			continue
		}
		writes = append(writes, w)
	}
	if err := refuseGuardedWrites(p, writes, opts.StateDir); err != nil {
		return nil, err
	}
	denied, guard := expandDeniedCached(pl, p, opts.Home, opts.WalkLimits, opts.WalkCache)
	guard.KeepArmed = opts.KeepPlanted
	pl.Guard = guard
	// A denied file inside a writable root cannot be carved out of
	// Landlock's rules without also taking away the right to create files
	// there: the supervisor refuses it (Supervision).
	// A linked worktree's common directory: only what git writes there.
	llWrites := writes
	reads := []string{"/proc"}
	if narrowed, ro := landlockRepoWrites(p, writes); narrowed != nil {
		llWrites = narrowed
		reads = append(reads, ro...)
	}
	for _, r := range p.Read {
		if r != privateTmp && !policy.CoveredBy(r, llWrites) {
			reads = append(reads, r)
		}
	}
	// A denied path this user cannot read anyway (e.g. /etc/shadow for a
	// normal user; a directory it can neither list nor search) needs no
	// carve-out: splitting /etc into one rule per
	// entry costs a millisecond at every start. The state directory holds
	// the masks and locks of bwrap runs.
	var carve []string
	for _, d := range denied {
		if reachable(d) {
			carve = append(carve, d)
		}
	}
	readOK, err := landlock.CarveOut(reads, append(carve, opts.StateDir), landlock.Limits{})
	if err != nil {
		return nil, fmt.Errorf("building the Landlock read allowlist: %w", err)
	}
	rules := &landlock.Rules{
		ReadOnly:          readOK,
		ReadWrite:         slices.Concat(llWrites, []string{tmp}, p.UnixSockets),
		StdDevices:        true,
		DenyNetwork:       mode != policy.NetOpen,
		ScopeSignals:      true,
		ScopeAbstractUnix: true,
		RestrictUnix:      restrictUnix,
	}
	pl.Spec = buildSpec(p)
	pl.Spec.Landlock = rules
	pl.Spec.Seccomp.DenyNetwork = mode == policy.NetDeny
	pl.Spec.Seccomp.DenyUnix = denyUnix
	// Filtered mode: the launcher serves the proxies on the host's
	// loopback (Net.HostListen), Landlock confines TCP connect to their
	// ports and the forwarded ones, seccomp to stream sockets.
	helper := opts.Host.Helper
	if helper == "" || strings.ContainsAny(helper, "'\n") {
		helper = ""
	}
	n, err := planNet(p, false, helper)
	if err != nil {
		return nil, err
	}
	if err := landlockNet(pl, n, rules, opts.Host.LandlockABI); err != nil {
		return nil, err
	}
	pl.Net = n
	if n != nil && len(n.Credentials) > 0 {
		n.CABundle = filepath.Join(tmp, CABundleName)
	}
	if n.Filtered() && helper != "" {
		rules.ReadOnly = append(rules.ReadOnly, helper) // ssh's ProxyCommand
	}
	var dropped []string
	pl.Env, dropped = buildEnvTmp(p, opts, tmp)
	pl.RunNotes = append(pl.RunNotes, dropped...)
	if c := sandboxCache(p); c != "" {
		// links that resolve only under bwrap
		pl.Prepare = append(pl.Prepare, Preparation{Kind: PrepUnseedGoModules, Path: c})
	}
	if exe := landlockGoCacheProg(pl.Env, opts.Host.Helper, func(x string) bool { return policy.DeniedBy(p.Deny, x) != "" || policy.CoveredBy(x, denied) }); exe != "" {
		// The go command runs the helper's binary as its build cache.
		rules.ReadOnly = append(rules.ReadOnly, exe)
	}
	pl.Dir = p.Workspace
	if c := opts.Cwd; c != "" && (policy.CoveredBy(c, llWrites) || policy.CoveredBy(c, readOK)) && policy.DeniedBy(p.Deny, c) == "" {
		pl.Dir = c
	}
	supErr := monitor.SuperviseAvailable()
	switch {
	case p.Mode == policy.ModePermissive:
		// Nothing is refused in mode permissive (buildLandlockPermissive).
	case superviseLandlock && supErr != nil:
		pl.Degraded = append(pl.Degraded, fmt.Sprintf("no supervisor: %v, so denied and protected paths inside the allowed trees stay readable and writable (what the command plants there is disarmed after the run) and file metadata outside the write paths can be changed (chmod, chown, utimes, setxattr)", supErr))
	case superviseLandlock:
		pl.Supervise = newSupervision(p, opts.Home, rules, denied)
		// What a protected path that is a link names: the walk's
		// protected names, and the home's and the deny_write entries.
		pl.Supervise.linked = policy.LinkTargets(append(slices.Clone(pl.Guard.Names), p.ProtectedAt(opts.Home)...), rules.ReadWrite)
		pl.Spec.Supervise = true
	default:
		pl.Degraded = append(pl.Degraded, "this cordon was built without the Landlock-only backend's supervisor (-tags cordon_unsupervised, for benchmarks): denied and protected paths inside the allowed trees and metadata outside the write paths are not refused")
	}
	pl.Argv = append([]string{helperspec.HelperExec, helperspec.HelperCommand, "--"}, command...)
	return pl, nil
}

// refuseGuardedWrites refuses a Landlock-only run in which a write path
// contains cordon's own config or state, or a path of the home directory
// that runs code later (Policy.Guarded): Landlock can only grant, never
// carve a read-only path out of a writable tree, and a run that could
// rewrite cordon's config could turn the sandbox off for every later run.
func refuseGuardedWrites(p *policy.Policy, writes []string, stateDir string) error {
	for _, g := range append(slices.Clone(p.Guarded), stateDir) {
		if g == "" {
			continue
		}
		for _, w := range writes {
			if policy.Within(g, w) {
				return fmt.Errorf("the Landlock-only backend cannot keep %s read-only inside the writable %s (it has no mount namespace), and a command could then loosen cordon's next run or plant code that runs later; drop that write path (--allow-write, --allow-home-workspace) or run where bubblewrap works (see cordon status)", g, w)
			}
		}
	}
	return nil
}

// expandDenied lists the existing paths the deny rules name: absolute
// entries, absolute globs, and relative globs matched in the read roots
// policy.Policy.DenyGlobReadRoots chooses (home is the user's home
// directory) and the writable roots but the sandbox cache; a read path
// that is a file is denied when its name matches. It notes in pl where
// the globs were searched, and each read root it denies whole because its
// walk did not finish. The same walk finds what the
// launcher checks after the run (the Guard): this backend cannot keep
// anything inside a writable root read-only, so that check is what keeps a
// planted hook or config key from running on the host.
func expandDenied(pl *Plan, p *policy.Policy, home string, lim globscan.Limits) ([]string, Guard) {
	return expandDeniedCached(pl, p, home, lim, nil)
}

// expandDeniedCached is expandDenied taking from cache what has not
// changed since an earlier walk (Options.WalkCache).
func expandDeniedCached(pl *Plan, p *policy.Policy, home string, lim globscan.Limits, cache *globscan.Cache) ([]string, Guard) {
	var out []string
	for _, d := range p.Deny {
		switch {
		case !filepath.IsAbs(d):
		case policy.IsGlob(d):
			m, err := policy.ExpandAbsDeny(d, lim)
			if err != nil {
				// Fail closed, as for a read root below.
				root, _ := globscan.SplitAbs(d)
				out = append(out, root)
				pl.RunNotes = append(pl.RunNotes, fmt.Sprintf("%s is not readable in this run: it could not be searched for the deny pattern %s (%v)", root, d, err))
				continue
			}
			out = append(out, m...)
		default:
			if _, err := os.Lstat(d); err == nil {
				out = append(out, d)
			}
		}
	}
	var globs []string
	for _, d := range p.Deny {
		if !filepath.IsAbs(d) {
			globs = append(globs, d)
		}
	}
	roots := p.DenyGlobReadRoots(home)
	var writable []string
	for _, w := range p.Write {
		if w != privateTmp && w != p.SandboxCache && policy.DeniedBy(p.Deny, w) == "" { // see scanRoots
			roots = append(roots, w)
			writable = append(writable, w)
		}
	}
	pr := parseProtected(p.Protected)
	skipped := policy.DenyGlobSkipped(home)
	trees := map[string]*tree{}
	var guardRoots []string
	for _, r := range roots {
		if _, done := trees[r]; done {
			continue
		}
		w := slices.Contains(writable, r)
		t, err := walkRoot(p, r, skipped, globs, pr, w, lim, cache)
		if err == nil && t == nil {
			continue // missing, or a file no glob names
		}
		if err != nil {
			// Fail closed: deny the whole root rather than miss a secret.
			// A writable one stays writable here (a write grant wins), so
			// it is still checked after the run, by when things changed.
			out = append(out, r)
			trees[r] = nil
			if w {
				guardRoots = append(guardRoots, r)
			} else {
				pl.RunNotes = append(pl.RunNotes, fmt.Sprintf("%s is not readable in this run: it could not be searched for deny globs (%v)", r, err))
			}
			continue
		}
		trees[r] = t
		if w {
			guardRoots = append(guardRoots, r)
		}
		for _, m := range t.denied {
			out = append(out, m.Path)
		}
		out = append(out, t.unlisted...) // not searched: denied whole
	}
	if n := denyScanNote(p, roots, trees); n != "" {
		pl.Notes = append(pl.Notes, n)
	}
	// In a writable root one stays readable, as every denied path there
	// (the degraded line says so).
	if n := unlistedNote(trees, func(d string) bool { return !policy.CoveredBy(d, writable) }); n != "" {
		pl.RunNotes = append(pl.RunNotes, n)
	}
	g := guardFrom(p, guardRoots, trees, false)
	completeGuard(&g, p, guardRoots, trees, lim, cache)
	return out, g
}

// privateTmpDir names a fresh directory, created by the launcher and removed
// after the run, that stands in for /tmp.
func privateTmpDir(stateDir string) (string, error) {
	if stateDir == "" {
		return "", errors.New("plan: no state directory given")
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("naming a private temporary directory: %w", err)
	}
	return filepath.Join(stateDir, "tmp", strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(b[:])), nil
}
