package launch

import (
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestNprocWatch: the watch reads a process's RLIMIT_NPROC from /proc and
// says the tasks reached it when this user's tasks are at least that many
// (a limit of 1: the process itself), and nothing under a limit far above
// (50000).
func TestNprocWatch(t *testing.T) {
	for _, tc := range []struct {
		limit uint64
		want  bool
	}{{1, true}, {50000, false}} {
		cmd := exec.Command("bash", "-c", "ulimit -u "+strconv.FormatUint(tc.limit, 10)+" && exec sleep 5")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		for i := 0; i < 100 && procNprocLimit(pid) != int(tc.limit); i++ {
			time.Sleep(10 * time.Millisecond) // bash sets it, then execs
		}
		if got := procNprocLimit(pid); got != int(tc.limit) {
			t.Errorf("procNprocLimit = %d, want %d", got, tc.limit)
		}
		w := startNprocWatch(pid, false)
		if w == nil {
			t.Fatal("no watch over /proc")
		}
		time.Sleep(2 * nprocEvery)
		got := w.end()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if (got != "") != tc.want {
			t.Errorf("limit %d: end() = %q, want reached %v", tc.limit, got, tc.want)
		}
	}
	if got := (*nprocWatch)(nil).end(); got != "" {
		t.Errorf("a nil watch says %q", got)
	}
}
