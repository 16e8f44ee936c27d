// Package limits puts a sandbox run's process tree into a cgroup with
// resource limits, so that a fork bomb or a memory bomb inside the sandbox
// ends at the limit while the host stays responsive.
//
// New picks, in order:
//
//  1. cgroup v2 ("cgroup2"), when our own cgroup under the unified mount is
//     writable and offers the needed controllers (memory, pids), either
//     already enabled in its cgroup.subtree_control or enabled by us there.
//     The sandbox gets its own leaf cgroup, so the "no internal processes"
//     rule holds.
//  2. cgroup v1 ("cgroup1"), when the pids and memory v1 hierarchies are
//     mounted and our current cgroup in each is writable (typically root on
//     a hybrid host): a directory cordon-<name>-<pid>-<random> in each, plus
//     cpuacct for CPU accounting when it is writable too, and cpu for
//     NewWithCPU when it is mounted apart (see CPUView).
//  3. none ("none"): New returns a Group of kind none together with an
//     *UnavailableError (errors.Is(err, ErrUnavailable)); the caller keeps
//     the helper's rlimits and reports Describe().
//
// CPU seconds are never a cgroup limit here (cgroups throttle CPU bandwidth,
// they do not cap total CPU time): keep RLIMIT_CPU for MaxCPUSeconds. The
// file-size limit (RLIMIT_FSIZE) is likewise not a cgroup matter.
//
// The launcher's sequence is:
//
//	g, err := limits.New(runID, limits.Limits{MaxProcesses: 64, MaxMemoryMB: 2048})
//	if errors.Is(err, limits.ErrUnavailable) { /* rlimits only; print g.Describe() */ } else if err != nil { ... }
//	defer g.Close()
//	if fd, ok := g.FD(); ok { // cgroup v2: race-free, the child starts inside the group
//		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
//	}
//	cmd.Start()
//	if _, ok := g.FD(); !ok { g.Add(cmd.Process.Pid) } // before the sandboxed command runs
//	cmd.Wait()
//	u, _ := g.Usage()
//	g.Kill(); g.Close()
//
// Children forked after Add inherit the cgroup, so moving bwrap's outer pid
// before it forks the sandbox puts the whole tree inside. With Add there is
// a short window after Start in which the child runs outside the group; the
// launcher closes it by having the helper wait for a readiness byte, or uses
// FD with clone3(CLONE_INTO_CGROUP) on cgroup v2.
//
// On Windows the package holds instead the Job Object of a run (NewJob,
// Job, Resume): the same Limits, as JOB_OBJECT_LIMIT_ACTIVE_PROCESS,
// JOB_MEMORY and JOB_TIME, with KILL_ON_JOB_CLOSE. That code was compiled
// and vetted on Linux, and its pure part (jobSpecOf) unit-tested there; it
// has not been run on Windows. The package must not start or wait for
// processes itself: the launcher does.
package limits

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Limits are the cgroup limits of one sandbox run. Zero means no limit.
type Limits struct {
	// MaxProcesses caps the number of tasks (processes and threads) in the
	// group: pids.max.
	MaxProcesses int
	// MaxMemoryMB caps the group's memory in MiB: memory.max (v2) or
	// memory.limit_in_bytes and memory.memsw.limit_in_bytes (v1). Swap is
	// switched off for the group where the kernel allows it.
	MaxMemoryMB int
	// MaxCPUSeconds is not enforced by a cgroup: the helper's RLIMIT_CPU
	// does that. It is kept here so Describe can say so.
	MaxCPUSeconds int
}

// Kind is the mechanism a Group uses.
type Kind string

// The kinds a Group can have.
const (
	KindCgroup2 Kind = "cgroup2"
	KindCgroup1 Kind = "cgroup1"
	KindNone    Kind = "none"
)

// ErrUnavailable is matched (errors.Is) by the error New returns when no
// usable cgroup exists; the caller then falls back to rlimits.
var ErrUnavailable = errors.New("no usable cgroup for resource limits")

// UnavailableError says why neither cgroup v2 nor cgroup v1 could be used.
type UnavailableError struct {
	// Reasons has one entry per mechanism tried, e.g.
	// "cgroup2: controllers memory, pids not available in /sys/fs/cgroup/unified".
	Reasons []string
}

func (e *UnavailableError) Error() string {
	return ErrUnavailable.Error() + ": " + strings.Join(e.Reasons, "; ")
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Usage is what a Group measured. Fields a kind cannot measure are zero and
// listed in Missing.
type Usage struct {
	// PeakMemoryBytes is the group's peak memory use: memory.peak (v2) or
	// memory.max_usage_in_bytes (v1).
	PeakMemoryBytes uint64 `json:"peak_memory_bytes"`
	// CPU time used by the group: cpu.stat (v2) or cpuacct (v1).
	CPUUser   time.Duration `json:"cpu_user"`
	CPUSystem time.Duration `json:"cpu_system"`
	CPUTotal  time.Duration `json:"cpu_total"`
	// Processes is the current number of tasks (pids.current).
	Processes int `json:"processes"`
	// PeakProcesses is pids.peak where the kernel has it.
	PeakProcesses int `json:"peak_processes"`
	// ForkFailures counts forks refused by pids.max (pids.events "max").
	ForkFailures int `json:"fork_failures"`
	// OOMKills counts processes killed by the OOM killer because of the
	// memory limit (memory.events oom_kill, or memory.oom_control oom_kill
	// on v1). MemoryLimitHits counts times the limit was reached
	// (memory.events max, or memory.failcnt / memory.memsw.failcnt on v1;
	// recent kernels leave the v1 counters at 0 even after an OOM kill, so
	// rely on OOMKills).
	OOMKills        int `json:"oom_kills"`
	MemoryLimitHits int `json:"memory_limit_hits"`
	// Missing names the values that could not be read.
	Missing []string `json:"missing,omitempty"`
}

// Since is u counted from base, the Usage the same group had when it was
// handed to another run (Group.Reuse): its counters (CPU time, refused
// forks, OOM kills, limit hits) less base's, its peak memory as read
// (Reuse reset it). The peak number of processes, which no kernel resets,
// is kept only when it rose above base's; otherwise it is unknown and
// named in Missing.
func (u Usage) Since(base Usage) Usage {
	sub := func(a, b int) int { return max(a-b, 0) }
	subD := func(a, b time.Duration) time.Duration { return max(a-b, 0) }
	u.CPUUser, u.CPUSystem, u.CPUTotal = subD(u.CPUUser, base.CPUUser), subD(u.CPUSystem, base.CPUSystem), subD(u.CPUTotal, base.CPUTotal)
	u.ForkFailures = sub(u.ForkFailures, base.ForkFailures)
	u.OOMKills = sub(u.OOMKills, base.OOMKills)
	u.MemoryLimitHits = sub(u.MemoryLimitHits, base.MemoryLimitHits)
	if base.PeakProcesses > 0 && u.PeakProcesses <= base.PeakProcesses {
		u.PeakProcesses = 0
		u.Missing = append(slices.Clone(u.Missing), "pids.peak (the group's earlier runs reached it)")
	}
	return u
}

// OOMKilled reports whether the OOM killer struck inside the group.
func (u Usage) OOMKilled() bool { return u.OOMKills > 0 }

// Group is the cgroup (or, for KindNone, the absence of one) of one run.
// Its methods are safe to call on a KindNone group: they do nothing.
type Group struct {
	kind    Kind
	name    string
	limits  Limits
	reasons []string // why cgroups are unavailable (KindNone)

	// v2: dir is the leaf; fd is an open descriptor of it (-1 if none).
	// v1: dirs maps controller ("pids", "memory", "cpuacct", "cpu") to its dir.
	dir  string
	dirs map[string]string
	// cgPaths maps controller ("" for v2) to the group's path as
	// /proc/PID/cgroup shows it, for Contains.
	cgPaths map[string]string
	fd      int
	memsw   bool // v1 memory.memsw.limit_in_bytes was set
	noSwap  bool // v2 memory.swap.max was set to 0
	closed  bool
	// peak is the group's memory.peak held open (v2) once Reuse reset
	// it: a reset counts for reads through the descriptor written.
	peak *os.File
	// cpuView is what CPUView returns, set by New.
	cpuView    CPUView
	hasCPUView bool
}

// Kind says which mechanism the group uses.
func (g *Group) Kind() Kind { return g.kind }

// Name is the unique directory name of the group (empty for KindNone).
func (g *Group) Name() string {
	if g.kind == KindNone {
		return ""
	}
	return g.name
}

// Limits returns the limits the group was created with.
func (g *Group) Limits() Limits { return g.limits }

// Paths lists the cgroup directories of the group.
func (g *Group) Paths() []string {
	switch g.kind {
	case KindCgroup2:
		return []string{g.dir}
	case KindCgroup1:
		var out []string
		for _, c := range v1Controllers {
			if d, ok := g.dirs[c]; ok {
				out = append(out, d)
			}
		}
		return out
	}
	return nil
}

// Describe says in one line what the group enforces and how (a log line
// or a report; nothing in cordon prints it yet).
func (g *Group) Describe() string {
	var parts []string
	l := g.limits
	switch g.kind {
	case KindCgroup2:
		if l.MaxProcesses > 0 {
			parts = append(parts, fmt.Sprintf("pids.max=%d", l.MaxProcesses))
		}
		if l.MaxMemoryMB > 0 {
			s := fmt.Sprintf("memory.max=%dMiB", l.MaxMemoryMB)
			if g.noSwap {
				s += " (memory.swap.max=0)"
			} else {
				s += " (swap not limited: no memory.swap.max)"
			}
			parts = append(parts, s)
		}
		if len(parts) == 0 {
			parts = append(parts, "accounting only")
		}
		parts[0] = "cgroup2 " + g.dir + ": " + parts[0]
	case KindCgroup1:
		if l.MaxProcesses > 0 {
			parts = append(parts, fmt.Sprintf("pids.max=%d", l.MaxProcesses))
		}
		if l.MaxMemoryMB > 0 {
			s := fmt.Sprintf("memory.limit_in_bytes=%dMiB", l.MaxMemoryMB)
			if g.memsw {
				s += " (memsw: swap included)"
			} else {
				s += " (no memsw: swap not limited)"
			}
			parts = append(parts, s)
		}
		if len(parts) == 0 {
			parts = append(parts, "accounting only")
		}
		parts[0] = "cgroup1 " + strings.Join(g.Paths(), ",") + ": " + parts[0]
	default:
		s := "none: " + strings.Join(g.reasons, "; ") + "; rlimits used instead"
		if l.MaxProcesses > 0 {
			s += " (RLIMIT_NPROC counts all processes of the user and is not enforced for root)"
		}
		parts = append(parts, s)
	}
	if l.MaxCPUSeconds > 0 {
		parts = append(parts, fmt.Sprintf("cpu %ds via RLIMIT_CPU (not a cgroup limit)", l.MaxCPUSeconds))
	}
	return strings.Join(parts, ", ")
}
