package plan

import (
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/internal/enforce/landlock"
	"github.com/cordon-sandbox/cordon/internal/monitor"
	"github.com/cordon-sandbox/cordon/policy"
)

// Supervision is what the Landlock-only backend's seccomp supervisor
// enforces (monitor.Policy): Landlock grants whole trees and cannot refuse
// a path beneath one it allows, nor a change of metadata; the supervisor
// performs every open, create, remove, rename, link, truncate and metadata
// change of the command itself, by descriptor, and refuses those that reach
// a denied path (a secret, a --deny directory inside the workspace), write
// a protected path (.git/hooks, .git/config, .vscode, ...) or a deny_write
// one, or change the metadata of a file outside the write paths. Because
// the supervisor itself is not confined by Landlock, Allow also refuses what
// the command's Landlock rules refuse: a read outside the read and write
// trees, a write outside the write trees.
type Supervision struct {
	read, write []string
	devices     []string
	// denied are the denied paths the plan's walk found (and the literal
	// deny entries): renaming a directory above one could move it out of
	// its rule (AllowMove).
	denied []string
	// hosts are the policy's own write paths: its protected paths,
	// deny_write entries and git directories are relative to them (the
	// private /tmp is not one).
	hosts []string
	// linked are what protected paths that are symbolic links name inside
	// the write paths (an .envrc -> tools/envrc, ~/.bashrc -> a dotfiles
	// workspace's bashrc): writing one there writes the protected path,
	// so it is refused like it (policy.LinkTargets).
	linked  []string
	decider *policy.Decider
	// start is when the run started (ForRun).
	start time.Time
}

// newSupervision is the supervisor's policy for p on the Landlock rules r
// (home is the user's home directory; denied the walk's denied paths).
func newSupervision(p *policy.Policy, home string, r *landlock.Rules, denied []string) *Supervision {
	s := &Supervision{
		read:    slices.Clone(r.ReadOnly),
		write:   slices.Clone(r.ReadWrite),
		denied:  slices.Clone(denied),
		hosts:   p.HostWrites(),
		decider: p.Decider(home),
	}
	if r.StdDevices {
		s.devices = landlock.StdDevices()
	}
	for _, d := range p.Deny {
		if filepath.IsAbs(d) && !policy.IsGlob(d) {
			s.denied = append(s.denied, filepath.Clean(d))
		}
	}
	return s
}

// ForRun returns a copy of s for the run that starts now: it also
// lets the command open the terminals ts for reading and writing (its own,
// which its Landlock rules grant: landlock.Report.Terminals), and leaves
// protected paths inside a directory made since start to the check after
// the run, as bubblewrap does (a git clone, a package unpacked with its
// .vscode: see newSince).
func (s *Supervision) ForRun(ts []string) *Supervision {
	c := *s
	c.devices = append(slices.Clone(s.devices), ts...)
	c.start = fileClockNow()
	return &c
}

// newSince reports whether path lies in a directory, strictly below the
// write root that holds it, that was made at or after s.start (its birth
// time; a file system that does not record one counts as older).
func (s *Supervision) newSince(path string) bool {
	if s.start.IsZero() {
		return false
	}
	var root string
	for _, h := range s.hosts {
		if policy.Within(path, h) && len(h) > len(root) {
			root = h
		}
	}
	if root == "" {
		return false
	}
	for d := filepath.Dir(path); d != root && policy.Within(d, root); d = filepath.Dir(d) {
		if t, ok := birthTime(d); ok && !t.Before(s.start) {
			return true
		}
	}
	return false
}

// refusedRule reports whether a policy decision is one the supervisor
// enforces beyond Landlock: a deny entry or glob, a deny_write entry, a
// protected path or a git directory's entry.
func refusedRule(d policy.Decision) bool {
	if !d.Denied {
		return false
	}
	for _, pre := range []string{"filesystem.deny: ", "filesystem.deny_write: ", "protected: ", "git directory: "} {
		if strings.HasPrefix(d.Rule, pre) {
			return true
		}
	}
	return false
}

// Allow reports whether the supervisor may make access a to path, the
// path it really reached (monitor.Policy).
func (s *Supervision) Allow(path string, a monitor.Access) bool {
	path = filepath.Clean(path)
	if a == monitor.AccessRead || a == monitor.AccessPath {
		if s.decider.Decide(policy.OpRead, path).Secret || policy.CoveredBy(path, s.denied) {
			return false
		}
		if a == monitor.AccessPath {
			return true // Landlock does not restrict O_PATH
		}
		return policy.CoveredBy(path, s.read) || policy.CoveredBy(path, s.write) || slices.Contains(s.devices, path)
	}
	if a == monitor.AccessWrite && slices.Contains(s.devices, path) {
		return true
	}
	if !policy.CoveredBy(path, s.write) || policy.CoveredBy(path, s.denied) || policy.CoveredBy(path, s.linked) {
		return false
	}
	d := s.decider.Decide(policy.OpWrite, path)
	if d.Secret {
		return false
	}
	if policy.CoveredBy(path, s.hosts) && refusedRule(d) {
		// A protected path in a directory the run made is left to the
		// check after the run, as bubblewrap leaves it; a deny_write
		// path never is.
		protected := strings.HasPrefix(d.Rule, "protected: ") || strings.HasPrefix(d.Rule, "git directory: ")
		return protected && s.newSince(path)
	}
	return true
}

// AllowMove reports whether renaming from to to keeps each denied path
// the walk found below from denied at its new place: a .env matched by
// **/.env anywhere moves freely, a --deny directory's parent does not
// (monitor.Policy).
func (s *Supervision) AllowMove(from, to string) bool {
	from, to = filepath.Clean(from), filepath.Clean(to)
	for _, d := range s.denied {
		if d == from || !policy.Within(d, from) {
			continue
		}
		moved := to + d[len(from):]
		if !s.decider.Decide(policy.OpRead, moved).Secret {
			return false
		}
	}
	return true
}
