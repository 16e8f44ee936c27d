//go:build linux

package launch

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNoChildren: noChildren tells a process without children from one
// with a running child or a zombie, and reaps nothing (the zombie's
// Wait still gets its status).
func TestNoChildren(t *testing.T) {
	if !noChildren() {
		t.Skip("this test process already has children (another test's): noChildren cannot be told apart")
	}
	for _, tc := range []struct {
		name  string
		child string // "": none; "running": sleep; "zombie": exited, not waited for
	}{
		{"none", ""},
		{"running", "running"},
		{"zombie", "zombie"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cmd *exec.Cmd
			switch tc.child {
			case "running":
				cmd = exec.Command("sleep", "10")
			case "zombie":
				cmd = exec.Command("true")
			}
			if cmd != nil {
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}()
			}
			if tc.child == "zombie" {
				waitZombie(t, cmd.Process.Pid)
			}
			if got, want := noChildren(), tc.child == ""; got != want {
				t.Errorf("noChildren() = %v with child %q, want %v", got, tc.child, want)
			}
			if tc.child == "zombie" {
				if err := cmd.Wait(); err != nil {
					t.Errorf("the zombie's status after noChildren: %v, want its exit 0 (noChildren must reap nothing)", err)
				}
			}
		})
	}
}

// waitZombie waits (at most 10 s) until pid has exited and is a zombie.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err == nil {
			s := string(b)
			if i := strings.LastIndexByte(s, ')'); i >= 0 && strings.HasPrefix(s[i+1:], " Z") {
				return
			}
		}
	}
	t.Fatalf("process %d did not become a zombie within 10 s", pid)
}
