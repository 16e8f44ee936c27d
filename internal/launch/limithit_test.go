//go:build linux

package launch

import (
	"fmt"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/testenv"
	"golang.org/x/sys/unix"
)

// signaled is the wait status of a death by sig.
func signaled(sig unix.Signal) unix.WaitStatus { return unix.WaitStatus(sig) }

// exited is the wait status of an exit with code.
func exited(code int) unix.WaitStatus { return unix.WaitStatus(code << 8) }

// TestLimitsReached: each limit is named only on the kernel's evidence,
// never on a signal alone, and a mere exit status of 128+N is only
// "probably".
func TestLimitsReached(t *testing.T) {
	all := runLimits{cpuSeconds: 2, memoryMB: 64, processes: 10, fileSizeMB: 1}
	for _, tc := range []struct {
		name  string
		l     runLimits
		f     endFacts
		lines []string
	}{
		{"cpu: SIGKILL after the limit", all,
			endFacts{status: signaled(unix.SIGKILL), exact: true, exitCode: 137, cpu: 1900 * time.Millisecond, cpuKnown: true},
			[]string{"killed: CPU time limit of 2 s reached (--max-cpu)"}},
		{"cpu: SIGXCPU", all,
			endFacts{status: signaled(unix.SIGXCPU), exact: true, exitCode: 152, cpu: 2 * time.Second, cpuKnown: true},
			[]string{"killed: CPU time limit of 2 s reached (--max-cpu)"}},
		{"cpu: SIGKILL at half the limit (measured short)", all,
			endFacts{status: signaled(unix.SIGKILL), exact: true, exitCode: 137, cpu: time.Second, cpuKnown: true},
			[]string{"killed: CPU time limit of 2 s reached (--max-cpu)"}},
		{"cpu: SIGKILL long before the limit (someone sent it)", all,
			endFacts{status: signaled(unix.SIGKILL), exact: true, exitCode: 137, cpu: 900 * time.Millisecond, cpuKnown: true}, nil},
		{"cpu: SIGKILL, CPU time unknown", all,
			endFacts{status: signaled(unix.SIGKILL), exact: true, exitCode: 137}, nil},
		{"cpu: no CPU limit", runLimits{},
			endFacts{status: signaled(unix.SIGKILL), exact: true, exitCode: 137, cpu: time.Hour, cpuKnown: true}, nil},
		{"cpu: a shell reports 137", all,
			endFacts{status: exited(137), exact: true, exitCode: 137, cpu: 2 * time.Second, cpuKnown: true},
			[]string{"probably killed: CPU time limit of 2 s reached (--max-cpu): the command exited with 137, as a shell does when a process it ran is killed by SIGKILL; the sandbox used 2.00 s of CPU"}},
		{"cpu: 137 without the exact status", all,
			endFacts{exitCode: 137, cpu: 2 * time.Second, cpuKnown: true},
			[]string{"probably killed: CPU time limit of 2 s reached (--max-cpu): the command exited with 137, as a shell does when a process it ran is killed by SIGKILL; the sandbox used 2.00 s of CPU"}},
		{"cpu: the timeout killed it", all,
			endFacts{status: signaled(unix.SIGKILL), exact: true, exitCode: 137, cpu: 3 * time.Second, cpuKnown: true, cordonKilled: true}, nil},
		{"memory: OOM kill of the command", all,
			endFacts{status: signaled(unix.SIGKILL), exact: true, exitCode: 137, oomKills: 1, cpu: 3 * time.Second, cpuKnown: true},
			[]string{"killed: memory limit of 64 MB reached (--max-memory)"}},
		{"memory: OOM kill of a child", all,
			endFacts{status: exited(1), exact: true, exitCode: 1, oomKills: 2},
			[]string{"memory limit of 64 MB reached (--max-memory): the kernel killed 2 processes of the command (cgroup oom_kill)"}},
		{"memory: SIGKILL without an OOM kill", all,
			endFacts{status: signaled(unix.SIGKILL), exact: true, exitCode: 137}, nil},
		{"file size: SIGXFSZ", all,
			endFacts{status: signaled(unix.SIGXFSZ), exact: true, exitCode: 153},
			[]string{"killed: file size limit of 1 MB reached (--max-file-size)"}},
		{"file size: a shell reports 153", all,
			endFacts{status: exited(153), exact: true, exitCode: 153}, nil},
		{"file size: 153 without the exact status", all,
			endFacts{exitCode: 153}, nil},
		{"file size: no limit", runLimits{},
			endFacts{status: signaled(unix.SIGXFSZ), exact: true, exitCode: 153}, nil},
		{"processes: refused forks", all,
			endFacts{status: exited(2), exact: true, exitCode: 2, forkFailures: 1},
			[]string{"process limit of 10 reached (--max-procs): the kernel refused 1 fork (cgroup pids.events max)"}},
		{"processes: seen at RLIMIT_NPROC without a cgroup", all,
			endFacts{status: exited(254), exact: true, exitCode: 254, nprocReached: "the sandbox ran 10 tasks"},
			[]string{"process limit of 10 reached (--max-procs): the sandbox ran 10 tasks"}},
		{"processes: the cgroup's count first", all,
			endFacts{status: exited(2), exact: true, exitCode: 2, forkFailures: 3, nprocReached: "the sandbox ran 10 tasks"},
			[]string{"process limit of 10 reached (--max-procs): the kernel refused 3 forks (cgroup pids.events max)"}},
		{"processes: seen, but cordon killed it", all,
			endFacts{exitCode: 124, cordonKilled: true, nprocReached: "the sandbox ran 10 tasks"}, nil},
		{"a plain failure", all,
			endFacts{status: exited(1), exact: true, exitCode: 1, cpu: time.Hour, cpuKnown: true}, nil},
		{"SIGTERM", all,
			endFacts{status: signaled(unix.SIGTERM), exact: true, exitCode: 143, cpu: time.Hour, cpuKnown: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			for _, h := range limitsReached(tc.l, tc.f) {
				lines = append(lines, h.Line())
			}
			if !reflect.DeepEqual(lines, tc.lines) {
				t.Errorf("got  %q\nwant %q", lines, tc.lines)
			}
		})
	}
}

// TestLimitsOf reads the limits from the helper's rlimits and the cgroup
// limits of a plan.
func TestLimitsOf(t *testing.T) {
	pl := &plan.Plan{}
	pl.Limits.MaxMemoryMB, pl.Limits.MaxProcesses = 64, 10
	pl.Spec.Rlimits = []helperspec.Rlimit{{Name: "RLIMIT_CPU", Resource: unix.RLIMIT_CPU, Value: 3}, {Name: "RLIMIT_FSIZE", Resource: unix.RLIMIT_FSIZE, Value: 5 << 20}}
	if got, want := limitsOf(pl), (runLimits{cpuSeconds: 3, memoryMB: 64, processes: 10, fileSizeMB: 5}); got != want {
		t.Errorf("limitsOf = %+v, want %+v", got, want)
	}
}

// TestPidfdExit: the kernel reports the own exit status of a process
// through a pidfd once it is reaped (as bwrap's init reaps the command),
// where it can (Linux 6.15+): a death by SIGXFSZ is not an exit with 153.
func TestPidfdExit(t *testing.T) {
	if _, ok := pidfdExit(-1); ok {
		t.Error("pidfdExit(-1) reported a status")
	}
	for _, tc := range []struct {
		script string
		want   unix.WaitStatus
	}{
		{"read x; kill -XFSZ $$", signaled(unix.SIGXFSZ)},
		{"read x; exit 153", exited(153)},
	} {
		cmd := exec.Command("sh", "-c", tc.script)
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
		in.Write([]byte("\n"))
		in.Close()
		cmd.Wait()
		if err != nil {
			t.Skipf("no pidfd_open: %v", err)
		}
		ws, ok := pidfdExit(fd)
		unix.Close(fd)
		if !ok {
			if testenv.CI() && kernelAtLeast(6, 15) {
				t.Fatalf("Linux 6.15+ gave no PIDFD_INFO_EXIT for %q", tc.script)
			}
			t.Skipf("this kernel gives no PIDFD_INFO_EXIT (Linux 6.15+)")
		}
		if ws != tc.want {
			t.Errorf("%q: status %#x, want %#x", tc.script, ws, tc.want)
		}
	}
}

// kernelAtLeast reports whether the running kernel is major.minor or later.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var a, b int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &a, &b)
	return a > major || a == major && b >= minor
}
