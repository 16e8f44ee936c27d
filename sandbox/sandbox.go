// Package sandbox is cordon's Go library for agent hosts: it confines the
// commands a host program runs, with the same Policy, backends and helper
// as the cordon CLI.
//
// A host program must call Init first thing in main: cordon re-executes the
// host's own binary inside the sandbox as its helper, and Init is where that
// helper runs.
//
//	func main() {
//		sandbox.Init()
//		sb, err := sandbox.New(
//			sandbox.WithWorkspace(dir),
//			sandbox.WithWritePaths(dir),
//			sandbox.WithNetwork(sandbox.NetworkDeny),
//		)
//		...
//		res, err := sb.Run(ctx, exec.Command("make", "test"))
//	}
//
// Run starts the command, waits for it and returns its result.Result (exit
// code, signal, timeout, resource usage); the sandbox is torn down with the
// command. Wrap instead rewrites a prepared *exec.Cmd so the caller drives
// Start and Wait itself; call Close after wrapped commands
// have finished, so cordon can remove the mount points it created for
// missing protected paths. NewSession keeps one sandbox set up for the
// many commands of an agent host (Session).
//
// The package is the library's face: it owns the options and their
// defaults (the CLI's development profile, less the home directory's tool
// caches unless WithToolCaches). It must not enforce anything itself: it
// builds a policy.Policy and runs it through the same run path as cordon
// run. See Example.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/helpercmd"
	"github.com/cordon-sandbox/cordon/internal/launch"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/result"
)

// Init runs the in-sandbox helper when this process was started as one
// (and, inside a sandbox, ssh's ProxyCommand of a filtered network or the
// Go build cache program a sandboxed go command starts as its
// GOCACHEPROG: every subcommand the cordon-helper binary serves, from the
// same table), and returns otherwise.
// Call it first in main, before flags or anything else: inside the sandbox
// it never returns.
func Init() {
	if s, ok := helpercmd.Lookup(os.Args[1:]); ok {
		os.Exit(s.Run(os.Args[2:]))
	}
}

// BecomeSubreaper makes the host process a child subreaper, so that Run
// can count the CPU time of commands on the bwrap backend: bwrap leaves
// its process inside the sandbox, which waited for the command, unreaped.
// Without it (or a cgroup that cordon can create), the Result's CPU times
// leave the command out and Usage.Incomplete says so. It is a process-wide
// setting: the orphans of the host's other children are reparented to it
// too, and it must reap them (or not mind zombies until it exits).
func BecomeSubreaper() error { return launch.BecomeSubreaper() }

// NetworkPolicy is the network access of a sandbox.
type NetworkPolicy int

const (
	// NetworkDeny gives the command no network at all. It is the default.
	NetworkDeny NetworkPolicy = iota
	// NetworkOpen shares the host's network.
	NetworkOpen
	// NetworkLoopback gives the command a network namespace of its own
	// whose loopback works (servers and clients inside), and nothing
	// else but the ports of WithForwardPorts. It needs bubblewrap: on the
	// Landlock-only backend New refuses it.
	NetworkLoopback
)

// Option configures a Sandbox.
type Option func(*settings)

type settings struct {
	layer     *config.Layer
	workspace string
	allowHome bool
	err       error
}

// WithReadPaths allows reading these absolute paths (and what is below
// them).
func WithReadPaths(paths ...string) Option {
	return func(s *settings) { s.layer.Filesystem.Read = append(s.layer.Filesystem.Read, paths...) }
}

// WithWritePaths allows writing these absolute paths.
func WithWritePaths(paths ...string) Option {
	return func(s *settings) { s.layer.Filesystem.Write = append(s.layer.Filesystem.Write, paths...) }
}

// WithToolCaches lets commands use the tool caches as the CLI's
// development profile does: the home directory's tool caches and configs
// (policy.DevelopmentHomeReads: Go's build and module caches, ~/.npm,
// pip's cache, ~/.gitconfig, ...) become readable, and the workspace's own
// sandbox cache writable, where Go's, npm's and pip's caches then point.
// The host's caches stay read-only: a build inside reuses what the host
// built and downloaded and writes only the sandbox's cache.
func WithToolCaches() Option {
	return func(s *settings) {
		s.layer.Filesystem.Read = append(s.layer.Filesystem.Read, policy.DevelopmentHomeReads...)
		s.layer.Filesystem.Write = append(s.layer.Filesystem.Write, "${SANDBOX_CACHE}")
	}
}

// WithDenyPaths makes paths or globs (such as "**/.env") unreadable and
// unwritable even inside allowed trees.
func WithDenyPaths(paths ...string) Option {
	return func(s *settings) { s.layer.Filesystem.Deny = append(s.layer.Filesystem.Deny, paths...) }
}

// WithNetwork sets the network policy (default NetworkDeny).
func WithNetwork(n NetworkPolicy) Option {
	return func(s *settings) {
		switch n {
		case NetworkDeny:
			s.layer.Network.Mode = config.Ptr("deny")
		case NetworkOpen:
			s.layer.Network.Mode = config.Ptr("open")
		case NetworkLoopback:
			s.layer.Network.Mode = config.Ptr("loopback")
		default:
			s.err = fmt.Errorf("sandbox: unknown network policy %d", n)
		}
	}
}

// WithAllowNet filters the network (a network namespace with only
// loopback, and cordon's HTTP and SOCKS5 proxies on the host, named by
// HTTP_PROXY, HTTPS_PROXY and ALL_PROXY inside): the command reaches only
// these HOST[:PORT] entries ("example.com:443", "*.example.com",
// "10.0.0.0/8:5432"), less those of WithDenyNet. Only Run serves the
// proxies; Wrap refuses such a sandbox.
func WithAllowNet(entries ...string) Option {
	return func(s *settings) { s.layer.Network.Allow = append(s.layer.Network.Allow, entries...) }
}

// WithDenyNet refuses these HOST[:PORT] entries even when WithAllowNet (or
// an open network) would allow them; with NetworkOpen it makes the
// network filtered, every other host allowed.
func WithDenyNet(entries ...string) Option {
	return func(s *settings) { s.layer.Network.Deny = append(s.layer.Network.Deny, entries...) }
}

// WithForwardPorts makes these TCP ports of the host's loopback reachable
// inside, at the same numbers, with NetworkLoopback or WithAllowNet (a
// gRPC plugin host, a test database). Something must listen on each when
// the command starts. Only Run serves them; Wrap refuses.
func WithForwardPorts(ports ...int) Option {
	return func(s *settings) { s.layer.Network.ForwardPorts = append(s.layer.Network.ForwardPorts, ports...) }
}

// WithUnixSockets allows connecting to these unix socket paths.
func WithUnixSockets(paths ...string) Option {
	return func(s *settings) { s.layer.UnixSockets = append(s.layer.UnixSockets, paths...) }
}

// WithProfile starts from a built-in profile (minimal, development, ci,
// untrusted) instead of the default, minimal.
func WithProfile(name string) Option {
	return func(s *settings) { s.layer.Profile = config.Ptr(name) }
}

// WithMode sets the mode: "standard" (default), "strict" or "off".
func WithMode(mode string) Option {
	return func(s *settings) { s.layer.Mode = config.Ptr(mode) }
}

// WithWorkspace sets the project directory (default: the current
// directory). It is readable; add it with WithWritePaths to make it
// writable.
func WithWorkspace(dir string) Option {
	return func(s *settings) { s.workspace = dir }
}

// WithHomeWorkspace accepts a workspace that is the home directory, an
// ancestor of it, or /, which New otherwise refuses: a command with such a
// workspace (writable, if the host adds it with WithWritePaths) could plant
// files that run later, such as ~/.bashrc. Policy().HomeWorkspace then
// says so; a host should tell its user.
func WithHomeWorkspace() Option {
	return func(s *settings) { s.allowHome = true }
}

// WithTimeout kills the whole command tree after d.
func WithTimeout(d time.Duration) Option {
	return func(s *settings) { s.layer.Timeout = &d }
}

// WithEnv adds environment entries: "NAME" passes the host's value,
// "NAME=VALUE" sets one. It applies when the command's Env is nil.
func WithEnv(entries ...string) Option {
	return func(s *settings) { s.layer.Env = append(s.layer.Env, entries...) }
}

// Sandbox runs commands under one policy. It is safe for concurrent use.
type Sandbox struct {
	pol      *policy.Policy
	host     policy.Host
	stateDir string

	mu      sync.Mutex
	wrapped map[*exec.Cmd]bool
	// releases free what wrapped commands hold: descriptors, workspace
	// locks, private temporary directories (see launch.Wrap).
	releases []func()
	closed   bool
}

// New builds a sandbox from the built-in "minimal" profile (system
// directories and the workspace readable, no network) plus the options.
// The command's /tmp is private to each run (an empty tmpfs) and
// writable; nothing else is writable until WithWritePaths (or
// WithToolCaches) says so. The user's cordon config file is not read: a host
// program states its policy. A workspace that is the home directory, an
// ancestor of it, or / is refused unless WithHomeWorkspace. Errors are one
// line saying what to fix.
func New(opts ...Option) (*Sandbox, error) {
	s := &settings{layer: config.NewFlags()}
	s.layer.Profile = config.Ptr(policy.ProfileMinimal)
	// The private /tmp is writable: compilers and most tools need it,
	// and nothing written there outlives the run.
	s.layer.Filesystem.Write = append(s.layer.Filesystem.Write, "${TMPDIR}")
	for _, o := range opts {
		o(s)
	}
	if s.err != nil {
		return nil, s.err
	}
	h, err := policy.HostFromOS()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	p, err := policy.Load(policy.Options{Host: h, Workspace: s.workspace, Flags: s.layer, SkipUserConfig: true, AllowHomeWorkspace: s.allowHome})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	sb := &Sandbox{pol: p, host: h, stateDir: h.StateDir(), wrapped: map[*exec.Cmd]bool{}}
	// Refuse now what no backend can enforce, rather than at Run.
	if _, err := sb.plan([]string{"true"}, ""); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return sb, nil
}

// Policy returns the effective policy (do not modify it).
func (s *Sandbox) Policy() *policy.Policy { return s.pol }

// Backend names the backend that enforces the policy: "bwrap",
// "landlock" (no user namespaces here), or "none" in mode off.
func (s *Sandbox) Backend() backend.Name {
	if pl, err := s.plan([]string{"true"}, ""); err == nil {
		return pl.Backend
	}
	return backend.None
}

// plan builds the plan for argv run from dir.
func (s *Sandbox) plan(argv []string, dir string) (*plan.Plan, error) {
	return plan.Build(s.pol, argv, s.planOptions(dir))
}

// planOptions are the launch facts for a command run from dir.
func (s *Sandbox) planOptions(dir string) plan.Options {
	cwd := dir
	if cwd == "" {
		cwd = s.host.Cwd
	} else if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(s.host.Cwd, cwd)
	}
	return plan.Options{Home: s.host.Home, Cwd: cwd, Getenv: s.host.Getenv, StateDir: s.stateDir, Host: launch.HostFacts(s.pol, launch.SelfHelper)}
}

// argv is the command line of cmd, with cmd.Path as the program when it
// was resolved by exec.Command.
func argv(cmd *exec.Cmd) ([]string, error) {
	if len(cmd.Args) == 0 {
		if cmd.Path == "" {
			return nil, errors.New("sandbox: the command is empty")
		}
		return []string{cmd.Path}, nil
	}
	a := append([]string(nil), cmd.Args...)
	if cmd.Path != "" && filepath.IsAbs(cmd.Path) {
		a[0] = cmd.Path
	}
	return a, nil
}

// Run starts cmd in the sandbox and waits for it. cmd's Stdin, Stdout,
// Stderr, Env and Dir are kept (a nil Env means the policy's environment
// allowlist), on every backend; on the Landlock-only backend TMPDIR names
// the run's private temporary directory, the host's /tmp being out of
// reach. When bwrap cannot create a user namespace after all, the command
// runs on the Landlock-only backend. A non-nil error means the command did not run; otherwise the
// Result carries its exit status. Cancelling ctx kills the whole sandbox.
func (s *Sandbox) Run(ctx context.Context, cmd *exec.Cmd) (*result.Result, error) {
	return s.run(ctx, cmd, nil)
}

// run is Run, in session's sandbox when it is not nil.
func (s *Sandbox) run(ctx context.Context, cmd *exec.Cmd, session *launch.Session) (*result.Result, error) {
	if cmd.Process != nil {
		return nil, errors.New("sandbox: Run: the command was already started")
	}
	if err := s.claim(cmd); err != nil {
		return nil, err
	}
	a, err := argv(cmd)
	if err != nil {
		return nil, err
	}
	stdio := launch.Stdio{Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr}
	res, err := launch.RunCommand(ctx, launch.Request{Policy: s.pol, Command: a, Options: s.planOptions(cmd.Dir), Stdio: stdio, Env: cmd.Env, Session: session})
	var se *launch.SetupError
	var xe *launch.ExecError
	if err != nil && !errors.As(err, &se) && !errors.As(err, &xe) {
		return nil, fmt.Errorf("sandbox: %w", err) // the plan's
	}
	return res, err
}

// Wrap rewrites cmd so that Start runs it in the sandbox: cmd.Path and
// cmd.Args become bubblewrap's, with the original command inside. Stdin,
// Stdout, Stderr, Dir and SysProcAttr are kept. The command's Env (nil: the
// policy's environment allowlist) moves into the helper's spec, which
// gives it to the command inside; cmd.Env becomes plan.LauncherEnv, the
// environment of bwrap on the host (only the helper's GOMAXPROCS=1). A
// command can be wrapped once: a second Wrap is an error. Wrap does not
// forward signals or enforce the timeout, and the process and memory limits are the
// helper's rlimits only, never a cgroup (Run does all of that): the caller
// owns the process. Call Close once wrapped commands have finished.
func (s *Sandbox) Wrap(cmd *exec.Cmd) error {
	if cmd.Process != nil {
		return errors.New("sandbox: Wrap: the command was already started")
	}
	if err := s.claim(cmd); err != nil {
		return err
	}
	if len(cmd.ExtraFiles) > 0 {
		return errors.New("sandbox: Wrap: commands with ExtraFiles are not supported (descriptors 3 to 6 carry the sandbox's own)")
	}
	a, err := argv(cmd)
	if err != nil {
		return err
	}
	pl, err := s.plan(a, cmd.Dir)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if pl.Backend == backend.None {
		return nil // mode off: run as is
	}
	release, err := launch.Wrap(pl, cmd)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	s.mu.Lock()
	s.releases = append(s.releases, release)
	s.mu.Unlock()
	return nil
}

// claim records that cmd belongs to this sandbox, once.
func (s *Sandbox) claim(cmd *exec.Cmd) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("sandbox: the sandbox is closed")
	}
	if s.wrapped[cmd] {
		return errors.New("sandbox: this command was already wrapped or run; create a new exec.Cmd")
	}
	s.wrapped[cmd] = true
	return nil
}

// Close releases descriptors held for wrapped commands and removes the
// empty placeholders bwrap created for missing protected paths. Call it
// after every wrapped command has finished; a sandbox still running would
// lose those read-only mounts.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, release := range s.releases {
		release()
	}
	return nil
}
