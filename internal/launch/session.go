package launch

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/result"
)

// sessionable says why a command of pl with stdio cannot run in a
// session's sandbox (Session), or "" when it can: the bubblewrap backend
// in a pid namespace, without what a session's server does not serve yet
// (the network proxy's and forwarded ports' listeners, the violation
// monitor, asking at a terminal or about files, files written inside, a
// terminal, the protected paths' mounts the helper makes). Such a command
// runs in a sandbox of its own.
func sessionable(pl *plan.Plan, stdio Stdio) string {
	switch {
	case pl.Backend != backend.Bwrap || !pl.PidNamespace:
		return "the " + string(pl.Backend) + " backend"
	case pl.Net != nil && (pl.Net.Filtered() || len(pl.Net.ForwardPorts) > 0 || pl.Net.HostListen):
		return "the network proxy or forwarded ports"
	case stdio.Watch != nil || pl.Supervise != nil:
		return "the violation monitor"
	case stdio.WatchOptions.Ask != nil:
		return "asking about files"
	case stdio.Console != nil:
		return "asking at a terminal"
	case len(pl.Spec.Files) > 0:
		return "credentials"
	case len(pl.Spec.Mounts) > 0:
		// The helper makes them, and its user namespace (plan.HelperMountsFrom).
		return "a workspace of many repositories"
	case pl.Interactive:
		return "a terminal"
	case helperAt(pl.Argv) < 0:
		return "a plan without the helper"
	case len(pl.GitConfigs) > 0 && mayWriteGitConfig(sessionCommand(pl)):
		// A run's own sandbox binds private copies of the configs, which
		// git writes and the safe keys of which reach the host's; a
		// session's cannot (its copies would be every command's).
		return "a git command that may write a repository's config"
	}
	return ""
}

// gitConfigWriters are the git commands that may write a repository's
// config: git config, git remote add, git branch -u, git submodule add,
// init and update, git push -u, git checkout and git switch with
// --track, git worktree add, git init and git clone of a repository that
// exists, git lfs install, git maintenance register.
var gitConfigWriters = map[string]bool{
	"config": true, "remote": true, "branch": true, "submodule": true, "push": true,
	"checkout": true, "switch": true, "worktree": true, "init": true, "clone": true,
	"maintenance": true, "lfs": true,
}

// mayWriteGitConfig reports whether argv, a command or a shell's command
// string, may run one of gitConfigWriters: a word "git" (or a path
// ending in /git) followed, anywhere after it, by one of their names.
// It errs towards yes: such a command only costs a sandbox of its own.
func mayWriteGitConfig(argv []string) bool {
	git := false
	for _, a := range argv {
		for _, w := range strings.FieldsFunc(a, func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune(";&|()`'\"$<>{}", r)
		}) {
			switch {
			case w == "git" || strings.HasSuffix(w, "/git"):
				git = true
			case git && gitConfigWriters[w]:
				return true
			}
		}
	}
	return false
}

// helperAt is the index of the helper's command line in a bwrap plan's
// argv (helperspec.HelperPath, HelperCommand, "--", then the command),
// or -1.
func helperAt(argv []string) int {
	for i := range argv {
		if argv[i] == helperspec.HelperPath && i+2 < len(argv) && argv[i+1] == helperspec.HelperCommand && argv[i+2] == "--" {
			return i
		}
	}
	return -1
}

// sessionKey is what a session's sandbox shares with every command run in
// it: bwrap's arguments (the mounts, namespaces and the helper) but the
// working directory and the command, the Landlock rules and the seccomp
// filter the server applies, and the helper's binary. A command whose
// plan has another key (a policy or a config that changed, a repository
// created since, with its protected paths to mount) gets a new sandbox.
func sessionKey(pl *plan.Plan) string {
	args := slices.Clone(pl.Argv[:helperAt(pl.Argv)+1])
	for i := 0; i+1 < len(args); i++ {
		switch {
		case args[i] == "--chdir":
			args[i+1] = ""
		case args[i] == "--ro-bind" && i+2 < len(args) && (args[i+1] == args[i+2] || pl.StateDir != "" && strings.HasPrefix(args[i+1], pl.StateDir+"/")):
			// A missing protected path is bound read-only from one of
			// cordon's placeholders, and once the sandbox made it there
			// (createPlaceholders), onto itself: the same empty
			// read-only entry inside.
			args[i+1] = ""
		}
	}
	b, _ := json.Marshal(struct {
		Args     []string
		Landlock any
		Seccomp  any
		Helper   string
	}{args, pl.Spec.Landlock, pl.Spec.Seccomp, pl.Helper})
	return string(b)
}

// sessionCommand is the command of a bwrap plan, as the helper runs it.
func sessionCommand(pl *plan.Plan) []string {
	return pl.Argv[helperAt(pl.Argv)+3:]
}

// serverPlan is the plan of a session's sandbox for pl: bwrap's arguments,
// with the helper as the session's server (helperspec.SessionCommand)
// instead of the command, and a spec without the command's own (its
// environment, its limits: each command's spec carries them).
func serverPlan(pl *plan.Plan) *plan.Plan {
	s := *pl
	s.Argv = append(slices.Clone(pl.Argv[:helperAt(pl.Argv)+1]), helperspec.SessionCommand)
	s.Spec.Rlimits, s.Spec.Env = nil, nil
	s.Timeout = 0
	s.Limits = limits.Limits{}
	// The checks for planted files are each command's.
	s.Guard = plan.Guard{}
	s.GuardedMissing, s.Unkept = nil, nil
	return &s
}

// Session keeps a sandbox set up for the commands of an agent host (the
// library's sandbox.Session, the MCP server's run_command), so that each
// command costs a fork in it rather than a sandbox of its own. Give it in
// Request.Session: RunCommand builds each command's plan as for a run of
// its own, and when the plan's sessionKey is the session's sandbox's, the
// command starts in that sandbox; otherwise (the first command, a policy
// or config changed, a repository created since) the sandbox is replaced
// first. A command the session's sandbox cannot serve (sessionable), or
// one that comes while another command of the session runs, gets a
// sandbox of its own, as without a session. It is safe for concurrent
// use; Close ends the sandbox.
type Session struct {
	mu     sync.Mutex // held while a command runs in the sandbox
	sb     *sessionSandbox
	closed bool
	// noSession: bwrap could not start a session's sandbox here (no user
	// namespace): every command runs as without a session.
	noSession bool
	stats     SessionStats
	// facts are the host's facts (HostFacts) found for the first
	// command, for the policy settings they depend on.
	factsMu  sync.Mutex
	facts    plan.Host
	factsFor *factsKey
	// cache is the walk cache of the session's commands, kept between
	// them and watched (globscan.Cache.Watch), for the state directory
	// cacheDir, until Close (cacheClosed).
	cacheMu     sync.Mutex
	cache       *globscan.Cache
	cacheDir    string
	cacheClosed bool
	spared      int // walks spared by caches closed since
}

// factsKey is what HostFacts depends on.
type factsKey struct {
	mode    policy.Mode
	backend backend.Name
	bwrap   string
	helper  Helper
}

// SessionStats count what a Session did.
type SessionStats struct {
	// Commands ran in the session's sandbox.
	Commands int
	// Sandboxes were started (the first, and one after each change of
	// the plan or a sandbox that died).
	Sandboxes int
	// WalksSpared are the walks of the writable trees (the plan's, the
	// check's after a command) answered without reading a directory:
	// the session's watcher saw no change since the same walk before
	// (globscan.Cache.Watch).
	WalksSpared int
	// SnapshotsReused are the commands whose snapshot for the
	// planted-files check was the one before, its time taken anew: the
	// session's watcher saw no change in what it was read from.
	SnapshotsReused int
	// GroupsReused are the commands that ran in the cgroup of the
	// command before, its usage counted from that command's end
	// (limits.Group.Reuse), instead of one made for each.
	GroupsReused int
}

// NewSession returns a Session; its sandbox starts with its first
// command.
func NewSession() *Session { return &Session{} }

// Stats says what the session did so far.
func (s *Session) Stats() SessionStats {
	s.mu.Lock()
	st := s.stats
	s.mu.Unlock()
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	st.WalksSpared = s.spared + s.cache.Stats().Reused
	return st
}

// walkCache is the walk cache of a command of the session with the
// state directory stateDir (WalkCache without a session): one for the
// session, kept between its commands and watched, so that a walk of a
// tree nothing changed since the last costs no directory read
// (globscan.Cache.Watch). Where it cannot watch (no inotify, the
// system's watches used up), the walks read as without a session.
func (s *Session) walkCache(stateDir string) *globscan.Cache {
	if s == nil || stateDir == "" {
		return WalkCache(stateDir)
	}
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if s.cacheClosed {
		return WalkCache(stateDir)
	}
	if s.cache == nil || s.cacheDir != stateDir {
		s.spared += s.cache.Stats().Reused
		_ = s.cache.Close()
		s.cache, s.cacheDir = WalkCache(stateDir), stateDir
		// Without a watcher it still keeps the trees in memory.
		_ = s.cache.Watch(0)
	}
	return s.cache
}

// Close ends the session's sandbox, once the command running in it (if
// any) ended. Later commands run as without a session.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.sb != nil {
		s.sb.close()
		s.sb = nil
	}
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	s.spared += s.cache.Stats().Reused
	_ = s.cache.Close()
	s.cache, s.cacheClosed = nil, true
	return nil
}

// claim takes the session for a command of pl, when it can serve it: the
// caller runs the command with runIn, then calls release.
func (s *Session) claim(pl *plan.Plan, stdio Stdio) bool {
	if s == nil || sessionable(pl, stdio) != "" || !s.mu.TryLock() {
		return false
	}
	if s.closed || s.noSession {
		s.mu.Unlock()
		return false
	}
	return true
}

// release lets the next command have the session.
func (s *Session) release() { s.mu.Unlock() }

// runIn runs pl in the session's sandbox, started (or replaced, when its
// key is not pl's or it died) first. The caller holds the claim.
func (s *Session) runIn(ctx context.Context, pl *plan.Plan, stdio Stdio) (*result.Result, error) {
	key := sessionKey(pl)
	if s.sb != nil && (s.sb.key != key || !s.sb.alive()) {
		s.sb.close()
		s.sb = nil
	}
	if s.sb == nil {
		sb, err := startSession(pl)
		if err != nil {
			var se *SetupError
			if errors.As(err, &se) && se.UserNS {
				s.noSession = true
			}
			return nil, err
		}
		s.sb = sb
		s.stats.Sandboxes++
	}
	was, wasGroups := s.sb.snapshotsReused(), s.sb.groupsReused()
	res, err := s.sb.run(ctx, pl, stdio, s.walkCache(pl.StateDir))
	s.stats.SnapshotsReused += s.sb.snapshotsReused() - was
	s.stats.GroupsReused += s.sb.groupsReused() - wasGroups
	if err == nil || !errors.Is(err, errSessionDied) {
		s.stats.Commands++
	}
	if !s.sb.alive() || errors.Is(err, errSessionDied) {
		s.sb.close()
		s.sb = nil
	}
	return res, err
}

// hostFacts is HostFacts(p, helper), found once for a session (the
// bwrap binary, the backend auto chooses, the Landlock ABI and the
// helper do not change while a host runs; a policy that names another
// bwrap or backend finds them again). Without a session it is HostFacts.
func (s *Session) hostFacts(p *policy.Policy, helper Helper) plan.Host {
	if s == nil {
		return HostFacts(p, helper)
	}
	k := factsKey{p.Mode, p.Backend, p.BwrapPath, helper}
	s.factsMu.Lock()
	defer s.factsMu.Unlock()
	if s.factsFor == nil || *s.factsFor != k {
		s.facts, s.factsFor = HostFacts(p, helper), &k
	}
	return s.facts
}
