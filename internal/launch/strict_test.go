//go:build linux

package launch

import (
	"context"
	"errors"
	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/testenv"
	"golang.org/x/sys/unix"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// noCgroupEnv marks the child of TestStrictAtRunTime that runs without a
// usable cgroup.
const noCgroupEnv = "CORDON_TEST_NO_CGROUP"

// TestStrictAtRunTime: what only the launcher finds out, a process limit
// as root with no usable cgroup (the kernel exempts root from
// RLIMIT_NPROC), is degraded at run time, and a strict plan is refused
// there, before anything starts. The test runs itself as root in a user
// and mount namespace whose /sys/fs/cgroup is an empty tmpfs.
func TestStrictAtRunTime(t *testing.T) {
	if os.Getenv(noCgroupEnv) == "1" {
		strictAtRunTime(t)
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux) is needed: %v", err)
	}
	cmd := exec.Command(unshare, "--user", "--map-root-user", "--mount", os.Args[0], "-test.run=^TestStrictAtRunTime$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), noCgroupEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "=== RUN") {
		// unshare itself failed: no user namespace for this user.
		testenv.SkipOrFail(t, "no user namespace here: %s", out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestStrictAtRunTime") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// strictAtRunTime is TestStrictAtRunTime inside the namespaces.
func strictAtRunTime(t *testing.T) {
	if err := unix.Mount("tmpfs", "/sys/fs/cgroup", "tmpfs", 0, ""); err != nil {
		t.Fatalf("hiding the cgroups: %v", err)
	}
	if _, err := limits.New("strict-test", limits.Limits{MaxProcesses: 10}); !errors.Is(err, limits.ErrUnavailable) {
		t.Fatalf("a cgroup is still usable (%v)", err)
	}
	for _, strict := range []bool{false, true} {
		// A plan that start cannot get past prepareHost: its backend
		// binary does not exist.
		pl := &plan.Plan{Backend: backend.Bwrap, Argv: []string{"/nonexistent/bwrap"}, Strict: strict, Limits: limits.Limits{MaxProcesses: 10}}
		_, err := Run(context.Background(), pl, Stdio{})
		var se *SetupError
		switch {
		case !errors.As(err, &se):
			t.Errorf("strict %v: %v, want a setup error", strict, err)
		case strict && !strings.Contains(err.Error(), "strict mode refuses to run degraded: max_processes 10 is not enforced"):
			t.Errorf("strict: %v, want the refusal", err)
		case !strict && !strings.Contains(err.Error(), "/nonexistent/bwrap"):
			t.Errorf("standard: %v, want the run to go on (and fail to start bwrap)", err)
		}
	}
}
