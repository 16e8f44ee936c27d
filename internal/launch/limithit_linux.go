package launch

import (
	"fmt"
	"time"

	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
)

// runLimits are the limits of a plan that a run can reach.
type runLimits struct {
	cpuSeconds, memoryMB, processes, fileSizeMB int
}

// limitsOf reads the limits of pl: CPU seconds and file size from the
// helper's rlimits, memory and processes from the cgroup limits.
func limitsOf(pl *plan.Plan) runLimits {
	l := runLimits{memoryMB: pl.Limits.MaxMemoryMB, processes: pl.Limits.MaxProcesses}
	for _, r := range pl.Spec.Rlimits {
		switch r.Resource {
		case unix.RLIMIT_CPU:
			l.cpuSeconds = int(r.Value)
		case unix.RLIMIT_FSIZE:
			l.fileSizeMB = int(r.Value >> 20)
		}
	}
	return l
}

// endFacts are what a run knows about how the command ended.
type endFacts struct {
	// status is the command's own wait status when exact is set (the
	// helper, which became the command, was this process's child, or the
	// kernel reported it through a pidfd).
	status unix.WaitStatus
	exact  bool
	// exitCode is the status the run returns; without an exact status a
	// death by signal N and an exit with 128+N look the same in it.
	exitCode int
	// cordonKilled: the timeout, a cancelled context or a failed cgroup
	// move made cordon kill the sandbox.
	cordonKilled bool
	// cpu is the CPU time of the sandbox (every process in it), when
	// cpuKnown.
	cpu      time.Duration
	cpuKnown bool
	// oomKills and forkFailures are the cgroup's counters (zero without
	// one).
	oomKills, forkFailures int
	// nprocReached, without a cgroup, says how the tasks counted against
	// the command's RLIMIT_NPROC were seen at it (nprocWatch), or is "".
	nprocReached string
}

// endSignal returns the signal that ended the command and whether that is
// certain: an exact death by signal is; an exit status of 128+N (a shell
// reporting a child killed by N, or bwrap's relay without an exact status)
// is not.
func (f endFacts) endSignal() (unix.Signal, bool) {
	if f.exact && f.status.Signaled() {
		return f.status.Signal(), true
	}
	if c := f.exitCode; c > 128 && c < 128+65 {
		return unix.Signal(c - 128), false
	}
	return 0, false
}

// cpuShortfall is how far below RLIMIT_CPU the measured CPU time of a
// command it killed may be: the kernel enforces the limit on CPU time
// sampled at each tick, which charges whole ticks to whatever runs then
// (time stolen by a hypervisor included), while the usage reports the
// precise run time. On a loaded virtual machine a command killed at 1 s
// was measured at 0.83 s; half the limit still tells the limit from a
// SIGKILL sent to a command that had barely run.
func cpuShortfall(limit time.Duration) time.Duration { return limit / 2 }

// limitsReached decides which limits of l the run reached, from real
// evidence only (see result.LimitHit); nothing when cordon itself killed
// the sandbox.
func limitsReached(l runLimits, f endFacts) []result.LimitHit {
	if f.cordonKilled {
		return nil
	}
	var hits []result.LimitHit
	sig, certain := f.endSignal()
	reported := func(s unix.Signal) string {
		return fmt.Sprintf("the command exited with %d, as a shell does when a process it ran is killed by %s", f.exitCode, unix.SignalName(s))
	}
	if l.memoryMB > 0 && f.oomKills > 0 {
		h := result.LimitHit{Limit: result.LimitMemory, Value: l.memoryMB, Certain: true}
		if sig == unix.SIGKILL && certain {
			h.Killed = true
			h.Evidence = "SIGKILL, and the cgroup counted " + plural(f.oomKills, "OOM kill")
		} else {
			h.Evidence = "the kernel killed " + plural(f.oomKills, "process") + " of the command (cgroup oom_kill)"
		}
		hits = append(hits, h)
	}
	lim := time.Duration(l.cpuSeconds) * time.Second
	if l.cpuSeconds > 0 && f.oomKills == 0 && (sig == unix.SIGKILL || sig == unix.SIGXCPU) && f.cpuKnown && f.cpu >= lim-cpuShortfall(lim) {
		h := result.LimitHit{Limit: result.LimitCPU, Value: l.cpuSeconds, Killed: true, Certain: certain,
			Evidence: fmt.Sprintf("%s after %.2f s of CPU", unix.SignalName(sig), f.cpu.Seconds())}
		if !certain {
			h.Evidence = fmt.Sprintf("%s; the sandbox used %.2f s of CPU", reported(sig), f.cpu.Seconds())
		}
		hits = append(hits, h)
	}
	// An exit status of 153 alone is no evidence (every profile has a
	// file-size limit, and a shell has already said "File size limit
	// exceeded" for a child it ran): only the command's own death counts.
	if l.fileSizeMB > 0 && sig == unix.SIGXFSZ && certain {
		hits = append(hits, result.LimitHit{Limit: result.LimitFileSize, Value: l.fileSizeMB, Killed: true, Certain: true, Evidence: "SIGXFSZ"})
	}
	switch {
	case l.processes > 0 && f.forkFailures > 0:
		hits = append(hits, result.LimitHit{Limit: result.LimitProcesses, Value: l.processes, Certain: true,
			Evidence: "the kernel refused " + plural(f.forkFailures, "fork") + " (cgroup pids.events max)"})
	case l.processes > 0 && f.nprocReached != "":
		// Without a cgroup no counter says a fork was refused: the tasks
		// were seen at the limit, where the kernel refuses the next one.
		hits = append(hits, result.LimitHit{Limit: result.LimitProcesses, Value: l.processes, Certain: true,
			Evidence: f.nprocReached})
	}
	return hits
}

// plural is "1 fork", "2 forks", "3 processes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if noun == "process" {
		return fmt.Sprintf("%d processes", n)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// pidfdExit returns the wait status of the process behind pidfd once it
// has been reaped (Linux 6.15+, PIDFD_INFO_EXIT), and false when the
// kernel does not say.
func pidfdExit(pidfd int) (unix.WaitStatus, bool) {
	if pidfd < 0 {
		return 0, false
	}
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_EXIT}
	if err := unix.IoctlPidfdInfo(pidfd, &info); err != nil || info.Mask&unix.PIDFD_INFO_EXIT == 0 {
		return 0, false
	}
	return unix.WaitStatus(info.Exit_code), true
}
