package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/monitor"
	"github.com/cordon-sandbox/cordon/internal/monitor/seatbeltlog"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/result"
)

// maxViolations caps the distinct violations one run keeps (and records);
// past it they are only counted (result.Monitor.More), so a command that
// probes a million paths costs bounded memory.
const maxViolations = 1000

// maxNames caps the programs a violation names.
const maxNames = 3

// violations classifies the violation monitor's events against the policy
// and keeps each distinct denial once, with its count, recording the first
// of each in the audit log.
type violations struct {
	policyDec *policy.Decider // the policy's
	dec       *policy.Decider // and the plan's writable trees (usePlan)
	// log receives the audit records, or is nil; session, command and
	// mode fill them.
	log                    Recorder
	session, command, mode string
	// allowed also records the distinct allowed file accesses
	// (audit.log_allowed).
	allowed bool
	tell    func(Line)
	// loose are the trees where the backend enforces nothing the policy
	// denies or protects: the Landlock-only backend's writable roots.
	loose []string
	// permissive: nothing the policy denies was enforced, but the
	// secrets when hideDenied.
	permissive, hideDenied bool
	// unixLoose: the backend does not confine pathname unix sockets.
	unixLoose bool
	// bwrap and hidden: the plan is bubblewrap's, which hides the denied
	// paths in hidden (plan.Plan.Hidden); readOnly are the paths its
	// mounts keep read-only in mode permissive (plan.Plan.ReadOnly).
	bwrap            bool
	hidden, readOnly []string
	// seatbelt: the plan is Seatbelt's, whose events are the denials
	// macOS logged (package seatbeltlog): each one was enforced.
	seatbelt bool
	// writeRoots are the trees the command may write (where it can make
	// symbolic links, and denied paths); hostWrites the policy's.
	writeRoots, hostWrites []string
	// sandboxCache is the policy's (policy.Policy.SandboxCache).
	sandboxCache string

	mu    sync.Mutex
	names [][]string // the programs of each of list, at most maxNames
	// loopback and bound are the loopback ports connected to and bound
	// in mode permissive (result.Monitor.LoopbackPorts).
	loopback, bound map[uint16]bool
	index           map[violationKey]int // into list
	list            []result.Violation
	seen            map[violationKey]bool // allowed accesses recorded
	more            int
	failed          bool // the audit log refused a record: no more are tried
	// other counts the denials of operations the policy has no name
	// for (monitor.OpOther); otherSeen are the first distinct ones.
	other     int
	otherSeen []string
}

// newViolations is the classifier of req's run.
func newViolations(req Request, pl *plan.Plan, tell func(Line)) *violations {
	p := req.Policy
	v := &violations{policyDec: p.Decider(req.Options.Home), session: req.SessionID, command: req.AuditCommand,
		mode: string(p.Mode), tell: tell, index: map[violationKey]int{}, seen: map[violationKey]bool{},
		loopback: map[uint16]bool{}, bound: map[uint16]bool{}}
	v.permissive, v.hideDenied = p.Mode == policy.ModePermissive, req.Options.HideDenied
	v.hostWrites, v.sandboxCache = p.HostWrites(), p.SandboxCache
	v.usePlan(pl)
	if req.Audit != nil {
		v.log = req.Audit
		v.allowed = p.Audit.LogAllowed
	}
	return v
}

type violationKey struct{ op, target, rule string }

// unenforced says why what ev did happened although the policy denies it,
// or "".
func (v *violations) unenforced(ev monitor.Event, d policy.Decision) string {
	switch {
	case v.seatbelt:
		return "" // macOS logged it because Seatbelt denied it
	case v.permissive && v.keptOut(ev):
		// Hidden all the same (plan.Options.HideDenied), or kept
		// read-only: the guard of every mode.
		return ""
	case v.permissive:
		return "mode permissive"
	case ev.Path != "" && policy.CoveredBy(ev.Path, v.loose):
		return "this backend cannot enforce it (see the degraded lines)"
	case v.unixLoose && ev.Op == monitor.OpConnect && ev.Path != "":
		return "this backend cannot confine pathname unix sockets (see the degraded lines)"
	case v.bwrap && d.Secret && ev.Path != "" && policy.CoveredBy(ev.Path, v.writeRoots) && !policy.CoveredBy(ev.Path, v.hidden):
		// bubblewrap hides a denied path where it exists when the run
		// starts; one the command made since is its own.
		return "it did not exist when the run started, and only what existed then is hidden"
	}
	return ""
}

// keptOut reports whether the plan's mounts kept what ev did from
// happening in mode permissive: the path (or what it leads to) is hidden,
// or, for a write, kept read-only.
func (v *violations) keptOut(ev monitor.Event) bool {
	for _, p := range []string{ev.Path, ev.Resolved} {
		if p != "" && (policy.CoveredBy(p, v.hidden) || ev.Op == monitor.OpWrite && policy.CoveredBy(p, v.readOnly)) {
			return true
		}
	}
	return false
}

// usePlan makes the decisions follow pl (the plan that runs: after a
// fallback, the Landlock-only one). It is called before the run.
func (v *violations) usePlan(pl *plan.Plan) {
	writable := slices.Clone(pl.Writable)
	if pl.PrivateTmp != "" {
		// The Landlock-only backend's stand-in for /tmp (TMPDIR).
		writable = append(writable, pl.PrivateTmp)
	}
	v.dec = v.policyDec.WithWritable(writable...)
	v.loose, v.unixLoose = nil, false
	if ll := pl.Spec.Landlock; pl.Backend == backend.Landlock && ll != nil {
		if pl.Supervise == nil {
			// Without the supervisor, Landlock cannot refuse a path
			// inside a tree it lets the command write.
			v.loose = ll.ReadWrite
		}
		v.unixLoose = !ll.RestrictUnix && (pl.Spec.Seccomp == nil || !pl.Spec.Seccomp.DenyUnix)
	}
	v.bwrap, v.hidden, v.readOnly = pl.Backend == backend.Bwrap, pl.Hidden, pl.ReadOnly
	v.seatbelt = pl.Backend == backend.Seatbelt
	v.writeRoots = append(slices.Clone(pl.Writable), policy.SandboxTmpDir)
	if pl.PrivateTmp != "" {
		v.writeRoots = append(v.writeRoots, pl.PrivateTmp)
	}
	v.writeRoots = append(v.writeRoots, v.hostWrites...)
}

// followIn are the trees whose symbolic links the monitor follows: those
// the command may write, where it can make a link, but the sandbox's tool
// caches (Go's build cache, npm's), where a build makes thousands of
// files and a link would only hide what the kernel denies anyway from
// the report, not from the kernel.
func (v *violations) followIn() []string {
	return slices.DeleteFunc(slices.Clone(v.writeRoots), func(r string) bool {
		return v.sandboxCache != "" && policy.Within(r, v.sandboxCache)
	})
}

// observe is Stdio.Watch: one event of the monitor.
func (v *violations) observe(ev monitor.Event) {
	if ev.Op == monitor.OpOther {
		v.observeOther(ev)
		return
	}
	if v.seatbelt && ev.Path != "" {
		// The kernel logs the real path; the policy may name the
		// firmlink (/tmp for /private/tmp): the one that denies
		// decides (below).
		if short := seatbeltlog.Unprivate(ev.Path); short != "" {
			ev.Path, ev.Resolved = short, ev.Path
		}
	}
	var d policy.Decision
	target := ev.Path
	switch {
	case ev.Addr.IsValid():
		if v.permissive && ev.Addr.Addr().IsLoopback() || ev.Addr.Addr().IsUnspecified() {
			v.loopbackPort(ev)
		}
		target = ev.Addr.String()
		if ev.Op == monitor.OpConnect {
			d = v.dec.DecideConnect(ev.Addr)
		} else if !v.seatbelt {
			return // binding a local port is not the policy's to refuse
		}
	case ev.Path == "" && ev.Name != "":
		// A socket address macOS logged without a host ("*:443"):
		// only the profile's rule can be named.
		target = ev.Name
	case ev.Op == monitor.OpBind:
		// Binding a unix socket creates its file.
		d = v.dec.Decide(policy.OpWrite, ev.Path)
	default:
		d = v.dec.Decide(ev.Op, ev.Path)
		if ev.Resolved != "" {
			// Through a symbolic link the command made: what the
			// kernel reached decides, when it is denied.
			if rd := v.dec.Decide(ev.Op, ev.Resolved); rd.Denied && !d.Denied {
				d, ev.Path, target = rd, ev.Resolved, ev.Resolved
			}
		}
	}
	if !d.Denied && v.seatbelt {
		// Seatbelt denied what the policy allows: its profile, written
		// for macOS, allows less here than the policy says.
		d = policy.Decision{Denied: true, Rule: "the Seatbelt profile (" + ev.Call + "), where the policy allows it"}
	}
	if !d.Denied {
		if v.allowed && ev.Path != "" {
			v.recordAllowed(ev, d)
		}
		return
	}
	if ev.Path != "" && (!onHost(ev) || hidden(ev.Path)) {
		// Nothing there on the host either: the policy kept nothing
		// from the command (a search along a path list, a probe).
		return
	}
	k := violationKey{string(ev.Op), target, d.Rule}
	v.mu.Lock()
	defer v.mu.Unlock()
	if i, ok := v.index[k]; ok {
		v.list[i].Count++
		if len(v.names[i]) < maxNames && !slices.Contains(v.names[i], commandOf(ev)) {
			if c := commandOf(ev); c != "" {
				v.names[i] = append(v.names[i], c)
				v.list[i].Command = strings.Join(v.names[i], ", ")
			}
		}
		return
	}
	if len(v.list) >= maxViolations {
		v.more++
		return
	}
	viol := result.Violation{Operation: string(ev.Op), Path: ev.Path, Rule: d.Rule, Allow: d.Fix, Locked: locked(d),
		Unenforced: v.unenforced(ev, d), Command: commandOf(ev), Count: 1}
	action := audit.ActionDenied
	if viol.Unenforced != "" {
		action = audit.ActionWarned
	}
	if ev.Addr.IsValid() || ev.Path == "" && ev.Name != "" {
		viol.Address = target
	}
	v.index[k] = len(v.list)
	v.list = append(v.list, viol)
	var names []string
	if viol.Command != "" {
		names = []string{viol.Command}
	}
	v.names = append(v.names, names)
	v.write(audit.Record{Timestamp: time.Now(), Operation: viol.Operation, Path: viol.Path, Address: viol.Address,
		Action: action, Rule: viol.Rule, Mode: v.mode})
}

// maxOther caps the distinct denials of other operations a run keeps.
const maxOther = 20

// observeOther counts a denial of an operation the policy has no name for
// (a Mach lookup, a sysctl, a signal: macOS's log), keeping the first
// distinct ones for the report; they are not audit records, as no rule
// of the policy decided them.
func (v *violations) observeOther(ev monitor.Event) {
	what := strings.TrimSpace(ev.Call + " " + ev.Name)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.other++
	if len(v.otherSeen) < maxOther && !slices.Contains(v.otherSeen, what) {
		v.otherSeen = append(v.otherSeen, what)
	}
}

// others returns how many denials of other operations there were, and the
// first distinct ones.
func (v *violations) others() (int, []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.other, slices.Clone(v.otherSeen)
}

// recordAllowed records the first allowed access of each kind to a path
// (audit.log_allowed), up to the cap.
func (v *violations) recordAllowed(ev monitor.Event, d policy.Decision) {
	k := violationKey{string(ev.Op), ev.Path, ""}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen[k] || len(v.seen) >= maxViolations {
		return
	}
	v.seen[k] = true
	v.write(audit.Record{Timestamp: time.Now(), Operation: string(ev.Op), Path: ev.Path, Action: audit.ActionAllowed, Rule: d.Rule, Mode: v.mode})
}

// write records r in the audit log, if there is one; v.mu is held.
func (v *violations) write(r audit.Record) {
	if v.log == nil || v.failed {
		return
	}
	r.SessionID, r.Command = v.session, v.command
	if err := v.log.Record(r); err != nil {
		v.failed = true
		v.tell(Line{Kind: Warning, Text: fmt.Sprintf("the violation monitor's records were not written to the audit log: %v", err)})
	}
}

// loopbackPort notes a loopback port connected to or bound in mode
// permissive.
func (v *violations) loopbackPort(ev monitor.Event) {
	if !v.permissive {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	port := ev.Addr.Port()
	if ev.Op == monitor.OpBind {
		v.bound[port] = true
	} else if ev.Addr.Addr().IsLoopback() && len(v.loopback) < maxViolations {
		v.loopback[port] = true
	}
}

// loopbackPorts are the loopback ports connected to and not bound, in
// order.
func (v *violations) loopbackPorts() []int {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []int
	for p := range v.loopback {
		if !v.bound[p] && p != 0 {
			out = append(out, int(p))
		}
	}
	slices.Sort(out)
	return out
}

// result returns the distinct violations, in the order first seen, and
// how many more there were past the cap.
func (v *violations) result() ([]result.Violation, int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]result.Violation(nil), v.list...), v.more
}

// locked reports whether no change should allow what d denies: a secret,
// or a path protected because code placed there runs later on the host
// (a protected name, a deny_write or guarded path, a git directory's
// hooks).
func locked(d policy.Decision) bool {
	if d.Secret {
		return true
	}
	for _, p := range []string{"protected:", "filesystem.deny_write:", "git directory:"} {
		if strings.HasPrefix(d.Rule, p) {
			return true
		}
	}
	return false
}

// hidden reports whether path lies where the profiles show nothing by
// design and programs only probe: /sys, which every Go program and glibc
// read at start (transparent huge pages, the online CPUs) and do without.
// Denials there are not reported.
func hidden(path string) bool { return policy.Within(path, "/sys") }

// onHost reports whether a denied access concerns something on the host:
// the path exists there, or, for a write, its directory does (the command
// could have created it).
func onHost(ev monitor.Event) bool {
	if _, err := os.Lstat(ev.Path); err == nil {
		return true
	}
	if ev.Op == monitor.OpWrite || ev.Op == monitor.OpBind {
		if fi, err := os.Stat(filepath.Dir(ev.Path)); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// commandOf is the name of the program that made ev's call: as the
// monitor read it, or from /proc now.
func commandOf(ev monitor.Event) string {
	if ev.Comm != "" {
		return ev.Comm
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(ev.Pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
