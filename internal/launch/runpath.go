package launch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/ask"
	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/monitor"
	"github.com/cordon-sandbox/cordon/internal/net/netproxy"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/planted"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/result"
)

// Request is one command to run the way every front end of cordon runs one
// (cordon run, the MCP server's run_command, the library's Sandbox.Run):
// see RunCommand.
type Request struct {
	// Policy is the effective policy.
	Policy *policy.Policy
	// Command is the command and its arguments.
	Command []string
	// Options are the launch facts for plan.Build; RunCommand fills in
	// their Host (HostFacts, with Helper).
	Options plan.Options
	// Helper is the binary that runs as the in-sandbox helper: the zero
	// value, SelfHelper, is the running program's own (the library).
	Helper Helper
	// Stdio are the command's streams.
	Stdio Stdio
	// Env, when not nil, is the command's environment instead of the
	// policy's allowlist (the library's exec.Cmd.Env), on every backend;
	// on the Landlock-only backend TMPDIR still names the plan's private
	// temporary directory.
	Env []string
	// Tell receives what the run says to its user besides the command's
	// own output, one line at a time, in order; nil says nothing.
	Tell func(Line)
	// Audit, when not nil, receives an audit record for every file the
	// run planted (see audit.PlantedRecords) and for every decision of the
	// network proxy (operation network-connect, allowed or denied,
	// whatever audit.log_allowed says); a record it refuses is a Warning
	// line. It is called from the proxy's goroutines, one call at a time.
	Audit Recorder
	// SessionID and AuditCommand are the session and command of those
	// records.
	SessionID, AuditCommand string
	// Watch turns the violation monitor on (so does the policy's
	// on_violation warn or log, and audit.log_allowed: plan.Watched): every file and socket access the policy
	// denies is classified with the rule that decides it, kept once in
	// Result.Violations with its count, and recorded in Audit (allowed
	// ones too with audit.log_allowed). A default run leaves it off.
	Watch bool
	// Session, when not nil, runs the command in the session's sandbox
	// when it can (see Session), else in a sandbox of its own.
	Session *Session
	// Ask, when not nil, asks at the terminal before the network proxy
	// refuses a target no rule names (cordon run --ask); its Console is
	// then Stdio.Console. Its audit fields are filled in from the
	// request's.
	Ask *ask.Session
}

// Recorder records audit records; *audit.Log is one.
type Recorder interface {
	Record(audit.Record) error
}

// LineKind says what a Line is about, and so how a front end words it
// (cordon run prefixes each with "cordon: ", a Warning with "cordon:
// warning: ", a Note with "cordon: note: " and a Degraded with "cordon:
// degraded: ").
type LineKind int

// What a run says.
const (
	// Warning: the workspace is the home directory, the repository's
	// git directory was refused, the audit log could not be written.
	Warning LineKind = iota
	// Note is one of the plan's RunNotes, said once even across the
	// fallback.
	Note
	// Degraded is a rule the plan cannot enforce (what the launcher finds
	// out at run time it prints on Stdio.Stderr itself).
	Degraded
	// FallingBack says that bwrap could not create a user namespace and
	// the command runs on the Landlock-only backend instead.
	FallingBack
	// TimedOut is "timed out after DURATION".
	TimedOut
	// Limit names a resource limit the command reached
	// (result.LimitHit.Line).
	Limit
	// Hint says why the command probably failed (plan.GitInitHint).
	Hint
	// NetRefused is one host and port the network proxy refused
	// (result.NetRefusal.Line): cordon run prefixes it with
	// "cordon: network: ".
	NetRefused
	// Denied is one distinct access the violation monitor saw the policy
	// deny (result.Violation.Line), said at the end of the run with on_violation:
	// warn: cordon run prefixes it with "cordon: denied: ".
	Denied
)

// Line is one thing a run says, without any prefix.
type Line struct {
	Kind LineKind
	Text string
	// Details, for a Degraded line that sums up several rules, are the
	// rules one by one, as --explain and the Result's Degraded say them.
	Details []string
}

// RunCommand builds the plan for req (plan.Build decides strict mode and
// the backend; its walks use the walk cache in Options.StateDir, WalkCache,
// unless Options.WalkCache names another, and RunCommand saves it after
// the run), says the warnings, notes and degraded rules, runs it and, when
// bwrap could not create a user namespace and the policy's backend is
// auto, falls back to the Landlock-only backend and runs again. After the
// run it records what the command planted and says the timeout, the limits
// reached and the hint. Errors: plan.Build's, or a *SetupError or
// *ExecError (the command did not run), as Run's.
func RunCommand(ctx context.Context, req Request) (*result.Result, error) {
	tell := req.Tell
	if tell == nil {
		tell = func(Line) {}
	}
	growFDTable()
	p := req.Policy
	req.Options.Host = req.Session.hostFacts(p, req.Helper)
	if req.Options.WalkCache == nil {
		req.Options.WalkCache = req.Session.walkCache(req.Options.StateDir)
	}
	// The plan's walks read the mount table once (a session's cache).
	held := req.Options.WalkCache.HoldMounts()
	pl, lock, err := buildLocked(p, req.Command, req.Options)
	held()
	if err != nil {
		return nil, err
	}
	defer lock.release()
	if err := refuseUnrunnable(pl); err != nil {
		return nil, err
	}
	req.Stdio.WalksServed = req.Options.WalkCache.Stats().Remote > 0
	// The walks of the plan are saved for the next run once this one is
	// over; a cache that cannot be written only makes the next walk read
	// every directory.
	defer func() { _ = req.Options.WalkCache.Save() }()
	if p.HomeWorkspace {
		tell(Line{Kind: Warning, Text: fmt.Sprintf("the workspace %s is your home directory or contains it (--allow-home-workspace): the command may write there, including files that run later", p.Workspace)})
	}
	if p.Repo != nil && p.Repo.Refused != "" {
		tell(Line{Kind: Warning, Text: p.Repo.Refused})
	}
	dropLookup(pl, req.Env)
	said := sayPlan(tell, pl, nil)
	setEnv(pl, req.Env)
	if req.Audit != nil {
		req.Stdio.NetEvents = netAudit(req, tell)
		req.Stdio.CredentialUses = credentialAudit(req, tell)
	}
	if a := req.Ask; a != nil {
		a.SessionID, a.Command, a.Mode = req.SessionID, req.AuditCommand, string(p.Mode)
		if req.Audit != nil {
			a.Audit = req.Audit.Record
		}
		a.Writable = p.HostWrites()
		if a.Warn == nil {
			a.Warn = func(s string) { tell(Line{Kind: Warning, Text: s}) }
		}
		if c, ok := a.Prompter.(*ask.Console); ok {
			req.Stdio.Console = c
		}
		req.Stdio.NetAsk = func(ctx context.Context, host string, port int) bool {
			return a.Ask(ctx, ask.Question{Kind: ask.Net, Host: host, Port: port, Rule: netrule.RuleNoAllow})
		}
		// Files: the monitor holds each open the policy refuses but a
		// person may allow (on bubblewrap without the violation
		// monitor, the helper sends it the opens only:
		// helperspec.Spec.Ask).
		req.Stdio.WatchOptions.Ask = fileAsker{d: p.Decider(req.Options.Home), s: a}
	}
	var viols *violations
	if req.Watch || plan.Watched(p) {
		viols = newViolations(req, pl, tell)
		req.Stdio.Watch = viols.observe
		req.Stdio.WatchOptions.FollowIn = viols.followIn()
	}
	// In a session's sandbox, git's writes of a repository's config are
	// refused (its copies are a run's own): reported as refused below.
	inSession := req.Session.claim(pl, req.Stdio)
	if inSession {
		pl = pl.WithoutGitCopies()
	}
	unkept := snapshotUnkept(pl.Unkept)
	gw, err := watchGitWrites(gitConfigDirs(p, pl))
	if err != nil {
		tell(Line{Kind: Warning, Text: fmt.Sprintf("cannot watch the repositories' git directories (%v): a git command whose write of a repository's config is refused is not named after the run, and does not fail it; raise fs.inotify.max_user_instances", err)})
	}
	defer gw.finish()
	// git inside writes a private copy of each repository's config:
	// bubblewrap binds the copies (plan.Plan.GitConfigs), the
	// Landlock-only backend's supervisor serves them.
	var gc *gitCopies
	switch {
	case len(pl.GitConfigs) > 0:
		dirs := make([]string, len(pl.GitConfigs))
		for i, c := range pl.GitConfigs {
			dirs[i] = filepath.Dir(c)
		}
		gc, err = copyGitConfigs(req.Options.StateDir, dirs, true, func(d string) bool { return !pl.Exposes(d) })
	case pl.Backend == backend.Landlock && pl.Supervise != nil:
		gc, err = copyGitConfigs(req.Options.StateDir, gitConfigDirs(p, pl), false, nil)
	}
	if err != nil {
		return nil, &SetupError{Err: err}
	}
	defer gc.close()
	req.Stdio.WatchOptions.Redirects = gc.redirects(len(pl.GitConfigs) > 0)
	req.Stdio.said = new([]string)
	var res *result.Result
	if inSession {
		res, err = req.Session.runIn(ctx, pl, req.Stdio)
		req.Session.release()
	} else {
		res, err = run(ctx, pl, req.Stdio, lock)
	}
	var se *SetupError
	if errors.As(err, &se) && se.UserNS {
		fb, ok, ferr := plan.Fallback(p, req.Command, req.Options)
		if ok {
			if ferr != nil {
				return nil, fmt.Errorf("%w; and the Landlock-only fallback failed: %w", err, ferr)
			}
			tell(Line{Kind: FallingBack, Text: fmt.Sprintf("%v; falling back to the Landlock-only backend", err)})
			sayPlan(tell, fb, said)
			pl = fb
			setEnv(pl, req.Env)
			if viols != nil {
				viols.usePlan(pl)
				req.Stdio.WatchOptions.FollowIn = viols.followIn()
			}
			unkept = snapshotUnkept(pl.Unkept)
			// The supervisor reaches the host's files, not the copies.
			req.Stdio.WatchOptions.Redirects = gc.redirects(false)
			res, err = Run(ctx, pl, req.Stdio)
		}
	}
	refused := gw.finish()
	if xe := (*ExecError)(nil); errors.As(err, &xe) && xe.Code == pl.Lookup.Code && pl.Lookup.NotFound != "" {
		// The helper did not find it inside; the host knows where it is.
		xe.Msg = pl.Lookup.NotFound
	}
	if err != nil {
		return nil, err
	}
	for _, f := range append(disarmGuarded(pl.GuardedMissing), unkept.check(pl.Guard.KeepArmed)...) {
		tell(Line{Kind: Warning, Text: f.Warning})
		res.Planted = append(res.Planted, f)
	}
	if req.Audit != nil {
		for _, r := range audit.PlantedRecords(req.SessionID, req.AuditCommand, string(p.Mode), res.Planted) {
			if err := req.Audit.Record(r); err != nil {
				tell(Line{Kind: Warning, Text: fmt.Sprintf("the planted files were not recorded in the audit log: %v", err)})
				break
			}
		}
	}
	if viols != nil {
		var more int
		res.Violations, more = viols.result()
		if res.Monitor != nil {
			res.Monitor.More = more
			res.Monitor.LoopbackPorts = viols.loopbackPorts()
			res.Monitor.Other, res.Monitor.OtherSeen = viols.others()
		}
		// Mode permissive says what it let through, unless asked only
		// to log.
		if p.OnViolation == policy.OnViolationWarn || p.Mode == policy.ModePermissive && p.OnViolation != policy.OnViolationLog {
			shown := res.Violations[:min(len(res.Violations), maxSaid)]
			for _, v := range shown {
				kind := Denied
				if v.Unenforced != "" {
					kind = Warning
				}
				tell(Line{Kind: kind, Text: v.Line(req.Options.Home)})
			}
			if n := more + len(res.Violations) - len(shown); n > 0 {
				where := "the audit log has the first 1000 (cordon violations)"
				if req.Audit == nil {
					where = "the audit log is off"
				}
				tell(Line{Kind: Denied, Text: fmt.Sprintf("and %d more distinct denials: %s", n, where)})
			}
		}
	}
	for _, f := range res.NetRefused {
		tell(Line{Kind: NetRefused, Text: f.Line()})
	}
	if res.NetRefusedMore > 0 {
		tell(Line{Kind: NetRefused, Text: result.NetRefusedMoreLine(res.NetRefusedMore)})
	}
	if res.TimedOut {
		tell(Line{Kind: TimedOut, Text: "timed out after " + pl.Timeout.String()})
	}
	for _, h := range res.LimitsReached {
		tell(Line{Kind: Limit, Text: h.Line()})
	}
	// A remote naming a repository the run could write is not merged:
	// git runs that repository's hooks when it pushes there.
	// (The policy's /tmp is the sandbox's own, on both backends: the
	// host's is not written.)
	writable := slices.DeleteFunc(append(slices.Clone(p.Write), pl.Writable...), func(w string) bool { return w == "/tmp" })
	notes, warnings, notWritten := gc.merge(p.Workspace, writable, res.PlantedIncomplete != "")
	for _, n := range notes {
		tell(Line{Kind: Note, Text: n})
	}
	for _, w := range warnings {
		tell(Line{Kind: Warning, Text: w})
	}
	refused = slices.DeleteFunc(refused, gc.served)
	if len(refused) > 0 {
		res.GitConfigRefused = refused
		tell(Line{Kind: Warning, Text: gitConfigRefusedLine(refused, p.Workspace, res.ExitCode == 0 && p.Mode != policy.ModePermissive)})
	}
	// Mode permissive (and cordon learn) reports, and keeps the
	// command's status.
	if (len(refused) > 0 || notWritten > 0) && res.ExitCode == 0 && p.Mode != policy.ModePermissive {
		res.ExitCode = result.ExitGitConfigRefused
	}
	if hint := plan.GitInitHint(pl, req.Command); hint != "" && res.ExitCode != 0 && !res.TimedOut {
		tell(Line{Kind: Hint, Text: hint})
	}
	if pl.Lookup.NotFound != "" && res.ExitCode == pl.Lookup.Code && !res.TimedOut {
		// A shell's script did not find its program (sh: 1: NAME: not
		// found), or may not run it.
		tell(Line{Kind: Hint, Text: pl.Lookup.NotFound})
	}
	return res, nil
}

// disarmGuarded renames aside each of paths (guarded paths that did not
// exist when a permissive run started: plan.Plan.GuardedMissing) that the
// run created, so that it loosens no later run and runs no code later,
// and reports it as planted.
func disarmGuarded(paths []string) []result.Planted {
	var out []result.Planted
	for _, g := range paths {
		if _, err := os.Lstat(g); err != nil {
			continue
		}
		f := result.Planted{Path: g, Kind: "guarded", Rule: "filesystem.deny_write: " + g}
		aside, err := moveAside(g)
		if err != nil {
			f.Warning = fmt.Sprintf("mode permissive: the run created %s, which decides later runs or runs code later, and it could not be moved aside: %v; remove it", g, err)
		} else {
			f.Disarmed = true
			f.Warning = fmt.Sprintf("mode permissive: the run created %s, which decides later runs or runs code later: moved aside to %s; review it", g, aside)
		}
		out = append(out, f)
	}
	return out
}

// moveAside renames path to the first free name beside it (asideName):
// one moved aside by an earlier run stays, and is no reason to leave this
// one in place.
func moveAside(path string) (string, error) {
	r, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	defer r.Close()
	name := filepath.Base(path)
	aside, err := asideName(r, name)
	if err != nil {
		return "", err
	}
	if err := r.Rename(name, aside); err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(path), aside), nil
}

// asideName is the first free name NAME.cordon-disarmed[.N] in r.
func asideName(r *os.Root, name string) (string, error) {
	to := name + planted.DisarmedSuffix
	for i := 1; i <= 100; i++ {
		if _, err := r.Lstat(to); errors.Is(err, fs.ErrNotExist) {
			return to, nil
		}
		to = name + planted.DisarmedSuffix + "." + strconv.Itoa(i)
	}
	return "", fmt.Errorf("too many %s files beside %s", planted.DisarmedSuffix, name)
}

// maxSaid caps the denials a run says one line each (on_violation: warn,
// mode permissive).
const maxSaid = 50

// buildLocked builds the plan for p, under p's workspace lock when the
// plan may be bubblewrap's: the plan reads the workspace as it is,
// placeholders of runs going on included, and binds those it finds as
// they are; holding the lock from before that look until the run ends
// keeps every other run from removing them meanwhile (see workspaceLock).
// The lock is nil otherwise; the caller releases it.
func buildLocked(p *policy.Policy, command []string, opts plan.Options) (*plan.Plan, *workspaceLock, error) {
	var lock *workspaceLock
	b := p.Backend
	if b.IsAuto() {
		b = opts.Host.Auto
	}
	var lockErr error
	if p.Mode != policy.ModeOff && b == backend.Bwrap && opts.StateDir != "" && p.Workspace != "" {
		lock, lockErr = acquireLock(opts.StateDir, lockKey(p.Workspace, p.GitCommonDir), nil)
	}
	pl, err := plan.Build(p, command, opts)
	switch {
	case err != nil:
		// Its error says first what is wrong (an unusable state
		// directory, say).
		lock.release()
		return nil, nil, err
	case lockErr != nil:
		return nil, nil, &SetupError{Err: lockErr}
	}
	return pl, lock, nil
}

// fileAsker asks, for the monitor (monitor.Asker), about the opens the
// policy refuses on the host (Decider.DecideHost) and a person may allow
// (policy.Decision.Askable).
type fileAsker struct {
	d *policy.Decider
	s *ask.Session
}

// decide is the policy's decision on access a to path on the host, and
// the kind of question it would be.
func (f fileAsker) decide(path string, a monitor.Access) (policy.Decision, ask.Kind) {
	switch a {
	case monitor.AccessRead:
		return f.d.DecideHost(policy.OpRead, path), ask.FileRead
	case monitor.AccessCreate:
		return f.d.DecideHostCreate(path), ask.FileWrite
	}
	return f.d.DecideHost(policy.OpWrite, path), ask.FileWrite
}

// Askable implements monitor.Asker.
func (f fileAsker) Askable(path string, a monitor.Access) bool {
	d, _ := f.decide(path, a)
	return d.Askable()
}

// Ask implements monitor.Asker: an allowed path goes on to the kernel,
// an askable one is asked about.
func (f fileAsker) Ask(pid int, comm, path string, a monitor.Access) monitor.Verdict {
	d, kind := f.decide(path, a)
	if !d.Askable() {
		return monitor.Continue
	}
	if f.s.Ask(context.Background(), ask.Question{Kind: kind, Path: path, Program: comm, Rule: d.Rule, Decision: d}) {
		return monitor.Serve
	}
	return monitor.Refuse
}

// netAudit is the recorder of the network proxy's decisions in req.Audit:
// one network-connect record each, one at a time; the first record the
// log refuses is a Warning line, and the rest are not tried.
func netAudit(req Request, tell func(Line)) func(netproxy.Event) {
	var mu sync.Mutex
	failed := false
	mode := string(req.Policy.Mode)
	return func(ev netproxy.Event) {
		rec := audit.Record{Timestamp: ev.Time, SessionID: req.SessionID, Command: req.AuditCommand,
			Operation: "network-connect", Host: ev.Host, Port: ev.Port, Action: audit.ActionDenied, Rule: ev.Rule, Mode: mode}
		if ev.Protocol == netproxy.DNSLookup {
			rec.Operation = "network-lookup"
		}
		if ev.Allowed {
			rec.Action = audit.ActionAllowed
		}
		if ev.Addr.IsValid() {
			rec.Address = ev.Addr.String()
		}
		mu.Lock()
		defer mu.Unlock()
		if failed {
			return
		}
		if err := req.Audit.Record(rec); err != nil {
			failed = true
			tell(Line{Kind: Warning, Text: fmt.Sprintf("the network proxy's decisions were not recorded in the audit log: %v", err)})
		}
	}
}

// credentialAudit records each use of a credential in req.Audit: one
// record of operation credential-use naming the credential, host, port,
// method and path and the decision, never a value.
func credentialAudit(req Request, tell func(Line)) func(netproxy.CredentialUse) {
	var mu sync.Mutex
	failed := false
	mode := string(req.Policy.Mode)
	return func(u netproxy.CredentialUse) {
		rec := audit.Record{Timestamp: u.Time, SessionID: req.SessionID, Command: req.AuditCommand,
			Operation: audit.OpCredentialUse, Credential: u.Credential, Host: u.Host, Port: u.Port,
			Method: u.Method, Path: u.Path, Action: audit.ActionAllowed, Rule: "credential " + u.Credential, Mode: mode}
		if !u.Allowed {
			rec.Action, rec.Rule = audit.ActionDenied, u.Rule
		}
		mu.Lock()
		defer mu.Unlock()
		if failed {
			return
		}
		if err := req.Audit.Record(rec); err != nil {
			failed = true
			tell(Line{Kind: Warning, Text: fmt.Sprintf("the uses of credentials were not recorded in the audit log: %v", err)})
		}
	}
}

// sayPlan tells pl's run notes not said already and its degraded rules,
// and returns the notes said so far.
func sayPlan(tell func(Line), pl *plan.Plan, said []string) []string {
	for _, n := range pl.RunNotes {
		if !slices.Contains(said, n) {
			tell(Line{Kind: Note, Text: n})
			said = append(said, n)
		}
	}
	var degraded []string
	for _, d := range pl.Degraded {
		if pl.Backend == backend.Job && d == plan.JobWarning {
			// Said as a warning at every Windows run.
			tell(Line{Kind: Warning, Text: d})
			continue
		}
		degraded = append(degraded, d)
	}
	switch len(degraded) {
	case 0:
	case 1:
		tell(Line{Kind: Degraded, Text: degraded[0], Details: degraded})
	default:
		tell(Line{Kind: Degraded, Text: DegradedSummary(degraded), Details: degraded})
	}
	return said
}

// DegradedSummary sums up several degraded rules in one line: each rule's
// head (its text before the first colon), and where the details are.
func DegradedSummary(rules []string) string {
	heads := make([]string, len(rules))
	for i, r := range rules {
		head, _, _ := strings.Cut(r, ": ")
		heads[i] = head
	}
	return strings.Join(heads, "; ") + " (cordon policy --explain says what each leaves open, cordon status how to enforce it)"
}

// dropLookup forgets what the plan's lookup of the command's program found
// (plan.Lookup) when the command runs with env, whose PATH is another.
func dropLookup(pl *plan.Plan, env []string) {
	if env == nil {
		return
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	if path == pl.Lookup.PATH {
		return
	}
	if n := pl.Lookup.Note; n != "" {
		pl.RunNotes = slices.DeleteFunc(pl.RunNotes, func(s string) bool { return s == n })
	}
	pl.Lookup = plan.Lookup{PATH: path}
}

// setEnv makes env, when not nil, the command's environment in pl. The
// Landlock-only plan's TMPDIR, its private temporary directory standing in
// for the host's /tmp, which the command cannot write, stays.
func setEnv(pl *plan.Plan, env []string) {
	dropLookup(pl, env)
	if env == nil {
		return
	}
	tmp := "TMPDIR=" + pl.PrivateTmp
	keep := pl.PrivateTmp != "" && slices.Contains(pl.Env, tmp)
	pl.Env = slices.Clone(env)
	if keep {
		pl.Env = slices.DeleteFunc(pl.Env, func(e string) bool { return strings.HasPrefix(e, "TMPDIR=") })
		pl.Env = append(pl.Env, tmp)
	}
}
