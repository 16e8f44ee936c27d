package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/subpath"
	"github.com/cordon-sandbox/cordon/result"
)

// newGroup creates the cgroup that holds the sandbox, when the plan has
// process or memory limits and the host lets cordon create one. It returns
// the run-time degradations (what the rlimits fallback cannot enforce),
// and refuses in strict mode when there are any.
func newGroup(pl *plan.Plan) (*limits.Group, []string, error) {
	l := pl.Limits
	if l.MaxProcesses == 0 && l.MaxMemoryMB == 0 {
		return nil, nil, nil
	}
	// The group holds bwrap and the helper while they set up, and the
	// helper's Go runtime starts threads that count as tasks: a small
	// --max-procs would refuse them (bwrap: "Can't fork", a runtime
	// panic). So the process limit is set by limitProcesses once the
	// helper is ready, before it runs the command.
	setup := l
	setup.MaxProcesses = 0
	newG := limits.New
	if wantsCPUView(pl) {
		newG = limits.NewWithCPU
	}
	g, err := newG(fmt.Sprintf("run-%d", os.Getpid()), setup)
	var notes []string
	switch {
	case errors.Is(err, limits.ErrUnavailable):
		if l.MaxProcesses > 0 && os.Geteuid() == 0 {
			notes = append(notes, fmt.Sprintf("max_processes %d is not enforced: no usable cgroup (%v) and the kernel exempts root from RLIMIT_NPROC; run cordon as a normal user or in a delegated cgroup", l.MaxProcesses, err))
		}
	case err != nil:
		return nil, nil, fmt.Errorf("creating the resource-limit cgroup: %w", err)
	}
	if pl.Strict && len(notes) > 0 {
		g.Close()
		return nil, nil, fmt.Errorf("strict mode refuses to run degraded: %s", notes[0])
	}
	if g != nil && g.Kind() == limits.KindNone {
		g.Close()
		g = nil
	}
	return g, notes, nil
}

// wantsCPUView says whether the run shows the command its CPU cgroup
// (limits.CPUView): when the helper makes the protected paths' mounts
// (plan.HelperMountsFrom), whose thousand lines of the mount table every
// Go program inside would otherwise read as it starts. For fewer mounts
// the bind would cost more than it saves.
func wantsCPUView(pl *plan.Plan) bool {
	return pl.Backend == backend.Bwrap && len(pl.Spec.Mounts) > 0
}

// withCPUView returns bwrap's arguments args with the read-only bind of a
// group's CPU cgroup v (limits.CPUView) among bwrap's own mounts, which
// all come before the helper's. It returns args unchanged when an
// argument names the view's target or a directory above it other than
// the root (the policy shows /sys, say: the view would hide what it
// shows), or when args have no helper.
func withCPUView(args []string, v limits.CPUView) []string {
	end := helperAt(args) - 1 // bwrap's "--" before the helper
	if end < 1 || args[end] != "--" {
		return args
	}
	for _, a := range args[1:end] {
		if a != "/" && filepath.IsAbs(a) && subpath.Within(v.Target, filepath.Clean(a)) {
			return args
		}
	}
	return slices.Concat(args[:end], []string{"--ro-bind", v.Source, v.Target}, args[end:])
}

// staleGroupAge is how old an empty group of a dead cordon must be before
// sweepGroups removes it.
const staleGroupAge = 10 * time.Second

// sweepGroups removes, in the background, the groups that runs killed with
// SIGKILL left behind (a killed cordon cannot remove its own). The
// returned function waits for it; the sweep never delays the command.
func sweepGroups() (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = limits.Cleanup(staleGroupAge)
	}()
	return func() { <-done }
}

// limitProcesses sets the group's process limit (see newGroup): the
// helper is ready and waits for the host, so only the sandbox's own set-up
// is inside, and the command starts under the limit.
func limitProcesses(g *limits.Group, pl *plan.Plan) error {
	if n := pl.Limits.MaxProcesses; n > 0 {
		if err := g.SetMaxProcesses(n); err != nil {
			return fmt.Errorf("setting the process limit: %w", err)
		}
	}
	return nil
}

// enterGroup moves the sandbox into g: bwrap (outer), bwrap's init inside
// the pid namespace, and the helper, which has not exec'd the command yet.
// Everything the command starts is born inside. outerIn says that outer
// was already moved: then init and the helper are moved only if they were
// forked before that move (Add on cgroup v1 costs an RCU grace period).
func enterGroup(g *limits.Group, outer, helper int, outerIn bool) error {
	var pids []int
	if !outerIn {
		pids = append(pids, outer)
	}
	if outer != helper {
		if pp, err := parentPid(helper); err == nil && pp != outer {
			pids = append(pids, pp) // bwrap's init
		}
		pids = append(pids, helper)
	}
	for _, pid := range pids {
		if outerIn {
			if in, err := g.Contains(pid); err == nil && in {
				continue
			}
		}
		if err := g.Add(pid); err != nil {
			return fmt.Errorf("moving the sandbox into its cgroup: %w", err)
		}
	}
	return nil
}

// parentPid reads the parent of pid from /proc/PID/stat.
// namespaceInit returns bwrap's init in a pid namespace, the child of
// bwrap's outer process above the command pid: its parent, or, when the
// helper started the command in a user namespace of its own
// (helperspec.Spec.User), its parent's parent. 0 if none is found.
func namespaceInit(cmd, outer int) int {
	pid := cmd
	for range 3 {
		pp, err := parentPid(pid)
		if err != nil || pp <= 1 {
			return 0
		}
		if pp == outer {
			if pid == cmd {
				return 0 // no init between them
			}
			return pid
		}
		pid = pp
	}
	return 0
}

func parentPid(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, errors.New("malformed stat")
	}
	return strconv.Atoi(f[1])
}

// groupUsageRead is the reading of a cgroup's accounting started by
// readGroupUsage.
type groupUsageRead struct {
	g    *limits.Group
	done chan struct{}
	gu   limits.Usage
	err  error
}

// readGroupUsage starts reading g's accounting (a dozen files on cgroup
// v1) in the background, once the command's processes are gone, so that
// it costs nothing beside the check after the run; fold waits for it.
func readGroupUsage(g *limits.Group) *groupUsageRead {
	r := &groupUsageRead{g: g, done: make(chan struct{})}
	if g == nil {
		close(r.done)
		return r
	}
	go func() {
		defer close(r.done)
		r.gu, r.err = g.Usage()
	}()
	return r
}

// fold waits for the reading, folds the cgroup's accounting into the
// run's usage u, and returns it (zero without a group).
func (r *groupUsageRead) fold(u *result.Usage) limits.Usage {
	return r.foldSince(u, limits.Usage{})
}

// whole waits for the reading and returns it as read, when it was read
// (what the group's kind cannot provide stays missing in every reading).
func (r *groupUsageRead) whole() (limits.Usage, bool) {
	<-r.done
	return r.gu, r.g != nil && r.err == nil
}

// foldSince is fold, the group's accounting counted from base (its usage
// before the command: a session's group serves its commands in turn).
func (r *groupUsageRead) foldSince(u *result.Usage, base limits.Usage) limits.Usage {
	<-r.done
	g, gu := r.g, r.gu.Since(base)
	if g == nil || r.err != nil {
		return limits.Usage{}
	}
	u.PeakMemoryKB = int64(gu.PeakMemoryBytes / 1024)
	u.PeakProcesses = gu.PeakProcesses
	u.ForkFailures = gu.ForkFailures
	u.OOMKills = gu.OOMKills
	u.Cgroup = string(g.Kind())
	if gu.CPUUser+gu.CPUSystem > 0 {
		// The group saw every process of the sandbox, waited for or not.
		u.User, u.System = gu.CPUUser, gu.CPUSystem
		u.Incomplete = slices.DeleteFunc(u.Incomplete, func(s string) bool { return s == incompleteCPU })
	}
	return gu
}
