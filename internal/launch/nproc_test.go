//go:build linux

package launch

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"golang.org/x/sys/unix"
)

func TestStatThreads(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want int
	}{
		{"1234 (sh) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 100 1000 10 18446744073709551615", 1},
		{"99 (a) b (c)) R 1 99 99 0 -1 0 0 0 0 0 0 0 0 0 20 0 7 0 5 6 7", 7},
		{"garbage", 1},
		{"5 (x) S 1", 1},
	} {
		if got := statThreads([]byte(tc.stat)); got != tc.want {
			t.Errorf("statThreads(%q) = %d; want %d", tc.stat, got, tc.want)
		}
	}
}

func TestNprocOnTop(t *testing.T) {
	rl := []helperspec.Rlimit{{Name: "RLIMIT_CPU", Resource: unix.RLIMIT_CPU, Value: 5}, {Name: "RLIMIT_NPROC", Resource: unix.RLIMIT_NPROC, Value: 10}}
	uid := os.Getuid()
	if uid == 0 {
		uid = 65534 // root is exempt and left alone; count nobody's instead
		if got := nprocOnTop(rl, 0); got[1].Value != 10 {
			t.Errorf("root's RLIMIT_NPROC changed to %d", got[1].Value)
		}
	}
	got := nprocOnTop(rl, uid)
	if want := uint64(10 + userTasks(uid)); got[1].Value < 10 || got[1].Value > want+50 {
		t.Errorf("RLIMIT_NPROC %d; want 10 plus the user's %d tasks", got[1].Value, userTasks(uid))
	}
	if got[0].Value != 5 || rl[1].Value != 10 {
		t.Errorf("other limits or the input changed: %+v, %+v", got, rl)
	}
	if os.Getuid() != 0 && userTasks(os.Getuid()) < 1 {
		t.Errorf("userTasks of this test's own user is %d", userTasks(os.Getuid()))
	}
}

// TestCountTasks: countTasks adds the threads of the processes that uid
// owns among those it is given, and skips the others and those that have
// ended.
func TestCountTasks(t *testing.T) {
	var kids []string
	for range 3 {
		c := exec.Command("sleep", "30")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		kids = append(kids, strconv.Itoa(c.Process.Pid))
	}
	self := strconv.Itoa(os.Getpid())
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	dfd, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	uid := os.Getuid()
	for _, tc := range []struct {
		name string
		pids []string
		uid  int
		// want, or, when selfThreads, at least this plus this process's
		// threads (its runtime may start more meanwhile).
		want        int
		selfThreads bool
	}{
		{"children", kids, uid, 3, false},
		{"this process", []string{self}, uid, 0, true},
		{"this process and children", append([]string{self}, kids...), uid, 3, true},
		{"another owner", kids, uid + 1, 0, false},
		{"ended", []string{"999999999", "0"}, uid, 0, false},
		{"none", nil, uid, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := countTasks(dfd, tc.pids, tc.uid)
			if !tc.selfThreads {
				if got != tc.want {
					t.Errorf("countTasks = %d; want %d", got, tc.want)
				}
				return
			}
			if floor := tc.want + statThreads(b); got < floor || got > floor+64 {
				t.Errorf("countTasks = %d; want %d plus the few threads the runtime may have started", got, floor)
			}
		})
	}
}
