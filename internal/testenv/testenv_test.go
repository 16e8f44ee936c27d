package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSkipOrFail: outside CI a missing tool skips; under CI=true it fails.
// Each case runs this test binary again with the environment to try.
func TestSkipOrFail(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		Tool(t, "no-such-tool-4f1c", "it does not exist")
		return
	}
	for _, tc := range []struct {
		ci   string
		want string
	}{
		{"", "--- SKIP"},
		{"true", "--- FAIL"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSkipOrFail$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", "CI="+tc.ci)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "no-such-tool-4f1c is not installed") {
			t.Errorf("CI=%q: want %s:\n%s", tc.ci, tc.want, out)
		}
	}
}

// TestHeavy: a heavy test skips unless CORDON_TEST_HEAVY=1.
func TestHeavy(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		Heavy(t)
		return
	}
	for _, tc := range []struct{ heavy, want string }{{"", "--- SKIP"}, {"1", "--- PASS"}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHeavy$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", HeavyVar+"="+tc.heavy)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%s=%q: want %s:\n%s", HeavyVar, tc.heavy, tc.want, out)
		}
	}
}
