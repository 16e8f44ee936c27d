package launch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// jobRole is how this test binary acts when a test starts it again.
const jobRole = "CORDON_JOB_TEST_ROLE"

// init plays the roles: "sleep" sleeps; "tree" starts three sleepers,
// prints their process ids and sleeps; "exit3" exits with 3; "cordon" runs
// a "tree" in a Job Object as cordon would (Run) and prints what the tree
// prints, until it is killed.
func init() {
	switch os.Getenv(jobRole) {
	case "sleep":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "exit3":
		os.Exit(3)
	case "tree":
		for range 3 {
			c := exec.Command(os.Args[0])
			c.Env = append(os.Environ(), jobRole+"=sleep")
			if err := c.Start(); err != nil {
				fmt.Println("start:", err)
				os.Exit(1)
			}
			fmt.Println(c.Process.Pid)
		}
		time.Sleep(time.Minute)
		os.Exit(0)
	case "cordon":
		_, err := Run(context.Background(), jobPlan("tree", 0), Stdio{Stdout: os.Stdout, Stderr: os.Stderr})
		fmt.Println("run:", err)
		os.Exit(1)
	}
}

// jobPlan is a Job Object plan that runs this binary in role.
func jobPlan(role string, timeout time.Duration) *plan.Plan {
	return &plan.Plan{Backend: backend.Job, Argv: []string{os.Args[0]}, Command: []string{os.Args[0]},
		Env: append(os.Environ(), jobRole+"="+role), Timeout: timeout}
}

// readPids reads the three process ids a "tree" prints.
func readPids(t *testing.T, r io.Reader) []int {
	t.Helper()
	var pids []int
	sc := bufio.NewScanner(r)
	for len(pids) < 3 && sc.Scan() {
		pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
		if err != nil {
			t.Fatalf("the tree printed %q", sc.Text())
		}
		pids = append(pids, pid)
	}
	if len(pids) < 3 {
		t.Fatalf("the tree started %d processes: %v", len(pids), sc.Err())
	}
	return pids
}

// waitGone fails unless each process of pids has ended within 10 s.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
		if err != nil {
			continue // gone already
		}
		ev, err := windows.WaitForSingleObject(h, 10_000)
		windows.CloseHandle(h)
		if err != nil || ev != windows.WAIT_OBJECT_0 {
			t.Errorf("process %d of the tree still runs", pid)
		}
	}
}

// TestJobTimeoutKillsTree: at the timeout the whole tree ends, not only
// the command, and the run says it timed out (exit 124).
func TestJobTimeoutKillsTree(t *testing.T) {
	pr, pw := io.Pipe()
	type out struct {
		res *result.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := Run(context.Background(), jobPlan("tree", 2*time.Second), Stdio{Stdout: pw, Stderr: os.Stderr})
		pw.Close()
		done <- out{res, err}
	}()
	pids := readPids(t, pr)
	go io.Copy(io.Discard, pr)
	o := <-done
	if o.err != nil || !o.res.TimedOut || o.res.ExitCode != result.ExitTimeout {
		t.Fatalf("got %+v, %v; want a timeout (exit %d)", o.res, o.err, result.ExitTimeout)
	}
	waitGone(t, pids)
}

// TestJobExitCode: the command's exit code is the run's.
func TestJobExitCode(t *testing.T) {
	res, err := Run(context.Background(), jobPlan("exit3", 0), Stdio{})
	if err != nil || res.ExitCode != 3 || res.TimedOut {
		t.Fatalf("got %+v, %v; want exit code 3", res, err)
	}
}

// TestJobCordonDeathKillsTree: when cordon itself dies (killed, so no
// clean-up of its own runs), Windows closes the job's last handle and
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE ends the whole tree.
func TestJobCordonDeathKillsTree(t *testing.T) {
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), jobRole+"=cordon")
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pids := readPids(t, stdout)
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	waitGone(t, pids)
}
