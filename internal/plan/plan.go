// Package plan turns a policy.Policy into a Plan: the exact, printable
// recipe a backend launches (the bubblewrap argv, the environment, what the
// in-sandbox helper applies, what the launcher prepares on the host, and
// what could not be enforced).
//
// Build computes; it writes nothing and starts nothing. The facts about
// the host it needs and cannot read as the policy's inputs come in
// Options.Host (launch.HostFacts finds them): the bubblewrap binary, the
// backend auto picks, the kernel's Landlock ABI and the helper's binary.
// What it reads are the policy's inputs: the allowed paths (lstat, and
// symlinks resolved, to bind them), the workspace and the writable and
// read roots walked for deny globs and protected paths (and the files of
// Options.WalkCache, what earlier walks found), the git directories found
// there, the deny rules' paths, the host's tool settings (package
// toolenv) and environment through Options.Getenv, the host's Go caches
// (whether they are directories), whether the sandbox cache and cordon's
// state directory could be created (stat and access(2) on them and their
// nearest existing ancestor), whether this user can read each denied path
// (access(2)), and, in mode off, the process environment and the
// command's path in $PATH. What has to exist
// or change on the host before the run (cordon's state directory and its
// masks, the sandbox cache, the Go modules seeded into it) is listed in
// Plan.Prepare, which the launcher performs.
//
// It owns the translation of a policy into each backend's terms and what
// each backend reports as degraded. It must not change the host (Build
// writes and starts nothing: the launcher performs Plan.Prepare) nor relax
// a rule it cannot express: what it cannot enforce is a Degraded entry,
// and strict mode refuses it.
package plan

import (
	"errors"
	"fmt"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/policy"
)

// Plan is what a backend will launch. It is plain data and printable.
type Plan struct {
	// Backend is the backend that builds and enforces this plan.
	Backend backend.Name `json:"backend"`
	// Argv is the full argument vector to execute on the host; Argv[0] is
	// an absolute path. For the bwrap backend it ends with the helper and
	// the command; for the Seatbelt backend it is sandbox-exec -p PROFILE,
	// then -D NAME=VALUE for each parameter, then the command.
	Argv []string `json:"argv"`
	// Command is the user's command and arguments.
	Command []string `json:"command"`
	// Env is the environment the command sees. It reaches the command
	// only through the helper's spec (the launcher copies it into
	// Spec.Env); what cordon starts on the host gets LauncherEnv.
	Env []string `json:"env"`
	// Dir is the command's working directory (inside the sandbox).
	Dir string `json:"dir"`
	// Spec is what the in-sandbox helper applies before exec.
	Spec helperspec.Spec `json:"spec"`
	// Supervise, on the Landlock-only backend, is what the seccomp
	// supervisor enforces beyond Landlock (see Supervision); the helper
	// installs its filter (Spec.Supervise).
	Supervise *Supervision `json:"-"`
	// GitConfigs are the repositories' configs that bwrap binds from a
	// private copy, writable, each from descriptor
	// helperspec.FdGitConfigs+i: the launcher makes the copies, git inside
	// writes its copy (the rename of config.lock onto it performed by the
	// host, Spec.Renames), and after the run only safe keys reach the
	// host's file. The Landlock-only backend's supervisor serves the same
	// copies (monitor.Options.Redirects) without this list.
	GitConfigs []string `json:"git_configs,omitempty"`
	// PrivateTmp is a directory the launcher creates before and removes
	// after the run, standing in for /tmp (Landlock-only backend).
	PrivateTmp string `json:"private_tmp,omitempty"`
	// Placeholders are missing protected paths that the launcher creates
	// on the host as mount points for bwrap, and removes after the run.
	Placeholders []Placeholder `json:"placeholders,omitempty"`
	// LockWorkspace makes the launcher hold the per-workspace lock
	// (LockKey, else Workspace) for the whole run and create the
	// Placeholders under it: bwrap mounts over them, and a run removes
	// them only when no other sandbox of the workspace still runs.
	LockWorkspace bool `json:"lock_workspace,omitempty"`
	// PidNamespace says that the command runs in a pid namespace of its
	// own, under an init the launcher did not start (bwrap's): killing
	// the process the launcher starts ends the whole sandbox, so nothing
	// is left to sweep; the command's exact wait status comes through a
	// pidfd, since the outer process relays only an exit code; and its
	// CPU time comes with that init, which a child subreaper reaps after
	// the run.
	PidNamespace bool `json:"pid_namespace,omitempty"`
	// HelperIsChild says that the process the launcher starts is the
	// helper itself, which execs the command (the Landlock-only
	// backend): it starts in Dir, and its wait status and resource usage
	// are the command's.
	HelperIsChild bool `json:"helper_is_child,omitempty"`
	// Helper is the helper's binary on the host when it is a program of
	// its own (cordon-helper beside cordon: Host.HelperSibling), which the
	// launcher opens and checks by descriptor (package sibling) and hands
	// over at helperspec.FdHelperExe; "" when the running program is its
	// own helper (the library: sandbox.Init), which the launcher opens
	// through /proc/self/exe.
	Helper string `json:"helper,omitempty"`
	// Degraded lists rules this plan cannot enforce, one sentence each.
	Degraded []string `json:"degraded,omitempty"`
	// Notes explain choices a reader of --explain may wonder about.
	Notes []string `json:"notes,omitempty"`
	// RunNotes are said once when the command runs (cordon run prints
	// each as a "cordon: note:" line) and by --explain: what the policy
	// added for the workspace's git repository, and each host tool
	// setting that was not carried into the environment (it holds a
	// credential, or the network is off) with the flag that passes it.
	RunNotes []string `json:"run_notes,omitempty"`
	// Lookup is what the host's PATH says about the command's program
	// that the sandbox's view of it does not (see lookupNotes).
	Lookup Lookup `json:"-"`
	// GuardedMissing lists, in mode permissive, the guarded paths
	// (policy.Policy.Guarded; on the Landlock-only backend the protected
	// names at the top of the home too) that did not exist when the plan
	// was built: nothing can be bound over them without creating them on the
	// host (nor kept from the command on the Landlock-only backend), so
	// the launcher disarms any the run created (renames it aside) and
	// reports it as planted.
	GuardedMissing []string `json:"guarded_missing,omitempty"`
	// Unkept lists, in mode permissive on the Landlock-only backend, the
	// existing paths through which code runs later that no write path
	// holds and nothing keeps from the command there: the guarded paths
	// and the protected names at the top of the home. The launcher
	// records them before the run and, after it, puts back each file the
	// run changed and renames aside each it created, reporting each as
	// planted.
	Unkept []string `json:"unkept,omitempty"`
	// Hidden lists the denied paths the bwrap plan hides where they are
	// visible (a mask over each): what a deny rule names inside a
	// visible tree is hidden only if it existed when the plan was built.
	Hidden []string `json:"hidden,omitempty"`
	// ReadOnly lists, in mode permissive under bubblewrap, the paths its
	// mounts keep read-only over the host's tree (the protected paths and
	// their placeholders, the guarded paths): a write there fails even in
	// that mode, and the violation monitor says it was denied.
	ReadOnly []string `json:"read_only,omitempty"`
	// Writable lists trees the command may write besides the policy's
	// write paths (the sandbox's module cache shown at the host's path:
	// see goModRemap), for the violation monitor's decisions.
	Writable []string `json:"writable,omitempty"`
	// Interactive is set when the launcher gives the command a private
	// pseudo-terminal (Options.Interactive).
	Interactive bool `json:"interactive,omitempty"`
	// Limits are the resource limits the launcher enforces with a cgroup
	// when it can (the helper's rlimits apply in any case).
	Limits limits.Limits `json:"limits"`
	// Strict refuses to run when anything would be degraded, including
	// what the launcher finds out only at run time.
	Strict bool `json:"strict,omitempty"`
	// Timeout, copied from the policy, is enforced by the launcher; 0 is
	// none (the launcher refuses a negative one).
	Timeout time.Duration `json:"timeout,omitempty"`
	// StateDir is where the launcher keeps locks and placeholder records.
	StateDir string `json:"state_dir,omitempty"`
	// Workspace is the policy's workspace (for locking).
	Workspace string `json:"workspace,omitempty"`
	// LockKey, when set, is what the launcher locks instead of the
	// workspace: the common git directory of the workspace's repository,
	// so that runs in its worktrees and sub-directories, which mount
	// placeholders in the same git directory, share one lock (a run
	// removes placeholders only when no other holds it).
	LockKey string `json:"lock_key,omitempty"`
	// Guard is what the launcher checks after the run for code the
	// command planted to run later on the host (see package planted).
	Guard Guard `json:"guard"`
	// Prepare is what the launcher creates or changes on the host before
	// the run, in order (Build writes nothing).
	Prepare []Preparation `json:"prepare,omitempty"`
	// Net is what the launcher serves for the network modes loopback and
	// filtered (the proxies, the forwarded ports), or nil.
	Net *Net `json:"net,omitempty"`
	// Seatbelt is the profile and its parameters on the Seatbelt backend
	// (macOS), or nil; Argv carries both to sandbox-exec.
	Seatbelt *SeatbeltPlan `json:"seatbelt,omitempty"`
}

// Lookup is what looking the command's program up on the host, in the
// sandbox's PATH, found: a note said before the run (also in RunNotes)
// when a hidden PATH entry changes which program runs, or the line said
// when the command ends with Code (127 not found; 126 not executable)
// because its program is not visible inside.
type Lookup struct {
	// PATH is the PATH it looked in (a launcher that runs the command
	// with another environment drops the rest).
	PATH string
	// Note is the run note, or "".
	Note string
	// Code and NotFound: the line said on that exit status, or "".
	Code     int
	NotFound string
}

// PlaceholderKind is what the launcher creates on the host for a
// Placeholder before bwrap mounts over it.
type PlaceholderKind string

// Kinds of placeholder.
const (
	// PlaceholderDir is an empty directory (hooks, .git, .vscode).
	PlaceholderDir PlaceholderKind = "dir"
	// PlaceholderFile is an empty file (shell start-up files, git config).
	PlaceholderFile PlaceholderKind = "file"
	// PlaceholderCommondir is a git directory's commondir file holding
	// ".", naming that git directory itself: git run there on the host
	// meanwhile reads what it reads inside.
	PlaceholderCommondir PlaceholderKind = "commondir"
)

// Placeholder is a missing protected path that bwrap mounts an empty,
// read-only file or directory over, to keep the command from creating it.
type Placeholder struct {
	// Path is the absolute path on the host.
	Path string `json:"path"`
	// Kind is what the launcher creates there.
	Kind PlaceholderKind `json:"kind"`
}

// PlaceholderPaths returns the paths of the plan's placeholders, in order.
func (pl *Plan) PlaceholderPaths() []string {
	out := make([]string, 0, len(pl.Placeholders))
	for _, p := range pl.Placeholders {
		out = append(out, p.Path)
	}
	return out
}

// Guard tells the launcher where to look, after the run, for git
// directories, hooks, config keys and other files that would run code on
// the host, and what existed before the run (so only what the run planted is
// reported and disarmed).
type Guard struct {
	// Roots are the writable trees the command could change: they are
	// walked again after the run.
	Roots []string `json:"roots,omitempty"`
	// GitDirs are the git directories that existed in Roots before the
	// run (found by the plan's walk).
	GitDirs []string `json:"git_dirs,omitempty"`
	// Names are the existing paths of ProtectedNames in Roots before the
	// run.
	Names []string `json:"names,omitempty"`
	// Git are the hooks directories and included config files in Roots
	// that git uses for the repositories there (core.hooksPath,
	// include.path, includeIf.*.path; see policy.Policy.GitLooks), which
	// exist or not: kept read-only on bubblewrap like a git directory's
	// hooks and config, and checked after the run as they are.
	Git policy.GitLooks `json:"git,omitzero"`
	// KeepArmed reports what was planted but leaves it in place
	// (cordon run --no-disarm).
	KeepArmed bool `json:"keep_armed,omitempty"`
	// KeptReadOnly are the entries of GitDirs and Names that the plan's
	// mounts kept read-only inside the sandbox (bubblewrap: every entry
	// through which git finds configuration or hooks, or the name
	// itself): a change to one found after the run came from the host
	// (an IDE, the user's own git), not from the command. What a plan
	// cannot keep read-only (a name that is a symbolic link, a tree mode
	// permissive leaves writable, the Landlock-only backend) is not
	// listed, and is checked.
	KeptReadOnly []string `json:"kept_read_only,omitempty"`
	// UnwalkedGitDirs and UnwalkedNames are the git directories and
	// protected names of the roots the plan's walk does not search (the
	// sandbox cache, where no deny glob applies and nothing is kept
	// read-only), found by a walk for the guard alone: the launcher's
	// snapshot records them with GitDirs and Names, and nothing else
	// uses them.
	UnwalkedGitDirs []string `json:"unwalked_git_dirs,omitempty"`
	UnwalkedNames   []string `json:"unwalked_names,omitempty"`
	// Complete says that the walks before the run searched every root in
	// Roots for every git directory and every name the check after the
	// run looks for (policy.ProtectedNames: the policy's protected rules
	// name them all), and listed every directory: after a run that added
	// no name to any directory, GitDirs, Names and their Unwalked
	// fellows are all the check has to look at (see
	// planted.Options.TreeUnchanged).
	Complete bool `json:"complete,omitempty"`
	// Dirs is the number of directories those walks saw in Roots: about
	// what a walk after the run costs (an lstat each, with the walk
	// cache), set with Complete.
	Dirs int `json:"dirs,omitempty"`
}

// LauncherEnv is the environment of every process cordon starts on the
// host to set up a sandbox: bwrap, or the helper's binary on the
// Landlock-only backend. It is a constant, never the command's nor
// cordon's: a variable such as LD_PRELOAD or LD_LIBRARY_PATH naming a
// library the command planted in the workspace would otherwise load that
// library into bwrap, unconfined, and the values would show in bwrap's
// /proc/PID/environ. bwrap needs nothing from the environment (its path
// and the helper's are absolute), nor does the helper (its spec arrives
// on helperspec.FdSpec), but the helper's Go runtime reads GOMAXPROCS
// (bwrap passes it on): with one P it starts no threads for idle
// processors, and Landlock's all-threads system calls have fewer threads
// to wait for, about 1 ms of CPU per run less; the helper runs nothing in
// parallel, and the command gets only its spec's environment. The slice
// is new and non-nil: a nil exec.Cmd.Env would mean cordon's own
// environment.
func LauncherEnv() []string { return []string{"GOMAXPROCS=1"} }

// Options are facts about the launch that are not policy.
type Options struct {
	// Home is the user's home directory on the host.
	Home string
	// Cwd is the host working directory; it becomes the command's if it is
	// visible inside the sandbox.
	Cwd string
	// Getenv looks up host environment variables for the env allowlist.
	Getenv func(string) (string, bool)
	// Interactive is set when the command gets a private pseudo-terminal
	// from the launcher; then bwrap must not start a new session (the
	// launcher already did, with the pty as controlling terminal).
	Interactive bool
	// StateDir holds cordon's own files (deny masks, locks); it must not
	// be visible inside the sandbox.
	StateDir string
	// KeepPlanted keeps what the run planted armed (Guard.KeepArmed); it
	// is still reported.
	KeepPlanted bool
	// HideDenied keeps the policy's denied paths hidden in mode
	// permissive (cordon learn): what may never be allowed is not
	// exposed to learn that it is needed.
	HideDenied bool
	// WalkLimits bound the walk of the workspace and the writable roots
	// for deny globs and protected paths; zero fields take globscan's
	// defaults. Going over a bound refuses the run.
	WalkLimits globscan.Limits
	// WalkCache, when not nil, holds what earlier walks found: the walk
	// reads again only the directories changed since (see
	// globscan.Cache), and records itself in it. Build only reads its
	// files; the caller saves it (Cache.Save) once the plan is used
	// (launch.RunCommand does, after the run).
	WalkCache *globscan.Cache
	// Host are the facts about the host the plan depends on.
	Host Host
	// RunID names the run in the Seatbelt profile's deny messages
	// (SeatbeltPlan.Tag); "" is a random one. The violation monitor
	// reads the log only for a tag of 16 to 64 lower-case hex digits
	// (seatbeltlog.CheckTag): another RunID serves goldens, not runs.
	RunID string
}

// Host are the facts about the host that Build uses without looking
// itself; launch.HostFacts finds them.
type Host struct {
	// Bwrap is the bubblewrap binary (probe.FindBwrap of
	// sandbox.bwrap_path), "" when BwrapErr says why there is none.
	Bwrap    string
	BwrapErr error
	// Auto is the backend --backend auto runs on here (probe.Auto):
	// bwrap or landlock, "" when AutoErr says why neither works. Only an
	// auto policy needs it.
	Auto    backend.Name
	AutoErr error
	// LandlockABI is the kernel's Landlock ABI version, 0 without Landlock.
	LandlockABI int
	// Helper is the binary that runs as the in-sandbox helper, on the
	// host: cordon-helper beside cordon, checked (package sibling), when
	// HelperSibling; otherwise the running program's own binary
	// (os.Executable, "" when it cannot be named), which the library
	// re-executes (sandbox.Init). The Landlock-only backend's GOCACHEPROG
	// and ssh ProxyCommand run it by this path. HelperErr says why there
	// is none: a confined plan then fails with it.
	Helper        string
	HelperErr     error
	HelperSibling bool
	// ResolvConf is where the host's /etc/resolv.conf leads, its links
	// resolved, or "" when there is none: a denied network's resolv.conf
	// is bound there (bindDenyResolver).
	ResolvConf string
}

// ErrNotBuilt marks a policy feature that no backend implements yet.
var ErrNotBuilt = errors.New("not built yet")

// Build turns a validated policy into a plan for the given command.
func Build(p *policy.Policy, command []string, opts Options) (*Plan, error) {
	if len(command) == 0 {
		return nil, errors.New("no command given: use cordon run [flags] -- CMD [ARG...]")
	}
	if err := checkBuilt(p); err != nil {
		return nil, err
	}
	if p.Mode == policy.ModeOff {
		return buildNone(p, command, opts)
	}
	p, cacheNote := usableSandboxCache(p)
	pl, err := build(p, command, opts)
	if pl != nil && cacheNote != "" {
		pl.Notes = append(pl.Notes, cacheNote)
	}
	if c := sandboxCache(p); pl != nil && c != "" {
		pl.Prepare = append(cachePreps(c, p.Workspace, hostGoPath(opts, optsGetenv(opts))), pl.Prepare...)
	}
	if pl != nil {
		pl.LockKey = p.GitCommonDir
		repoNotes(pl, p)
		lookupNotes(pl, p, command, opts.Home)
	}
	if err == nil {
		err = refuseDegraded(pl)
	}
	if err != nil {
		return nil, err
	}
	return pl, nil
}

// refuseDegraded refuses a strict plan that cannot enforce every rule.
// It is where strict mode is decided before the run, for every backend;
// the launcher decides what it finds out only at run time (a process
// limit as root without a usable cgroup).
func refuseDegraded(pl *Plan) error {
	if !pl.Strict || len(pl.Degraded) == 0 {
		return nil
	}
	if pl.Backend == backend.Landlock {
		return fmt.Errorf("strict mode refuses to run degraded on the Landlock-only backend: %s", pl.Degraded[0])
	}
	return fmt.Errorf("strict mode refuses to run degraded: %s", pl.Degraded[0])
}

// build is Build for a confined mode, once the sandbox cache is decided.
func build(p *policy.Policy, command []string, opts Options) (*Plan, error) {
	b := p.Backend
	if b.IsAuto() {
		if err := opts.Host.AutoErr; err != nil {
			return nil, err
		}
		if b = opts.Host.Auto; b == "" {
			return nil, errors.New("plan: the host's backend was not chosen (Options.Host: see launch.HostFacts)")
		}
	}
	if (b == backend.Bwrap || b == backend.Landlock) && opts.Host.HelperErr != nil {
		return nil, opts.Host.HelperErr
	}
	if p.Mode == policy.ModePermissive && b == backend.Seatbelt {
		// It would need a profile that allows what it denies and reports
		// it, (allow (with report) ...) for every deny, and the
		// report-only messages read like denials: never written nor run
		// on a Mac.
		return nil, fmt.Errorf("--mode permissive is %w for the seatbelt backend: macOS logs only what a profile denies, and a profile that allows and reports instead has not been written or tried; use --mode standard with cordon test, which reports each denial with its rule", ErrNotBuilt)
	}
	if p.Mode == policy.ModePermissive && b != backend.Bwrap && b != backend.Landlock {
		return nil, fmt.Errorf("--mode permissive is %w for the %s backend: it needs the violation monitor, which the %s backend does not have (only bwrap and the Landlock-only backend on Linux do permissive runs); use --mode standard", ErrNotBuilt, b, b)
	}
	if err := checkWatchable(p, b); err != nil {
		return nil, err
	}
	pl, err := buildBackend(p, b, command, opts)
	if pl != nil && opts.Host.HelperSibling {
		pl.Helper = opts.Host.Helper
	}
	return pl, err
}

// buildBackend is build for the backend b.
func buildBackend(p *policy.Policy, b backend.Name, command []string, opts Options) (*Plan, error) {
	switch b {
	case backend.Bwrap:
		return buildBwrap(p, command, opts)
	case backend.Landlock:
		if p.Mode == policy.ModePermissive {
			return buildLandlockPermissive(p, command, opts)
		}
		return buildLandlock(p, command, opts)
	case backend.Seatbelt:
		return buildSeatbelt(p, command, opts)
	case backend.Job:
		return buildJob(p, command, opts)
	case backend.None:
		return nil, errors.New("--backend none runs the command unconfined: say so explicitly with --mode off (or --no-sandbox)")
	default:
		return nil, fmt.Errorf("--backend %q: unknown backend; use auto, bwrap, landlock, seatbelt, job or none", p.Backend)
	}
}

// Fallback rebuilds the plan on the Landlock-only backend after bwrap
// failed to create a user namespace, when the policy's backend is auto;
// ok is false when no fallback applies.
func Fallback(p *policy.Policy, command []string, opts Options) (pl *Plan, ok bool, err error) {
	if !p.Backend.IsAuto() {
		return nil, false, nil
	}
	q := *p
	q.Backend = backend.Landlock
	pl, err = Build(&q, command, opts)
	return pl, true, err
}

// checkBuilt refuses, with a clear message, policy features that exist in
// the contract but are not implemented yet. A rule is never silently dropped.
func checkBuilt(p *policy.Policy) error {
	if p.Mode == policy.ModeOff {
		return nil
	}
	switch p.Network.Mode {
	case policy.NetDeny, policy.NetOpen, policy.NetLoopback, policy.NetFiltered, "":
	default:
		return fmt.Errorf("network mode %q: unknown; use deny, open or loopback", p.Network.Mode)
	}
	return nil
}

// Watched reports whether p turns the violation monitor on by itself:
// mode permissive, on_violation warn or log, or an audit log that records
// allowed operations too.
func Watched(p *policy.Policy) bool {
	return p.Mode == policy.ModePermissive || p.OnViolation == policy.OnViolationWarn || p.OnViolation == policy.OnViolationLog ||
		p.Audit.Enabled && p.Audit.LogAllowed
}

// checkWatchable refuses a policy that needs the violation monitor on a
// backend that has none yet (the Windows Job), and audit.log_allowed on
// Seatbelt, whose monitor is macOS's log: it holds only denials.
func checkWatchable(p *policy.Policy, b backend.Name) error {
	if !Watched(p) || b == backend.Bwrap || b == backend.Landlock {
		return nil
	}
	if b == backend.Seatbelt {
		if p.Audit.Enabled && p.Audit.LogAllowed {
			return fmt.Errorf("audit.log_allowed is %w for the seatbelt backend: its violation monitor reads macOS's log, which holds only what the profile denied, not what it allowed; leave audit.log_allowed off (denials are recorded)", ErrNotBuilt)
		}
		return nil
	}
	what := "on_violation " + p.OnViolation
	if p.OnViolation != policy.OnViolationWarn && p.OnViolation != policy.OnViolationLog {
		what = "audit.log_allowed"
	}
	return fmt.Errorf("%s needs the violation monitor, which is %w for the %s backend (it is built for bwrap and the Landlock-only backend on Linux and for Seatbelt on macOS); use on_violation: block and leave audit.log_allowed off", what, ErrNotBuilt, b)
}
