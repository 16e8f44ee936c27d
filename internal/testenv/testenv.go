// Package testenv is what cordon's tests share about their environment:
// the rule for a test that cannot run here (skip with the reason, but fail
// under CI=true, where the machine is set up to run everything), the
// switch for the heavy tests that only the full check runs, and the tools
// a test drives, found or skipped by that rule.
//
// It is imported by tests only. It must not start servers that listen
// beyond the loopback, nor touch the real home directory.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// CI reports whether the tests run under CI=true: nothing the machine
// could run may skip there.
func CI() bool { return os.Getenv("CI") == "true" }

// HeavyVar is the environment variable that turns on the heavy tests (the
// scale and first-build tests): .ci/run's full pass sets it; `go test
// ./...` leaves them out so that it stays quick.
const HeavyVar = "CORDON_TEST_HEAVY"

// SkipOrFail skips t with the reason, or fails it under CI=true, where a
// test that cannot run is a broken machine, not a choice.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("%s (CI=true: nothing may skip)", msg)
	}
	t.Skip(msg)
}

// Heavy skips t unless HeavyVar is 1: a heavy test (minutes of CPU on a
// small machine) runs in .ci/run's full pass, not in the quick one.
func Heavy(t testing.TB) {
	t.Helper()
	if os.Getenv(HeavyVar) != "1" {
		t.Skipf("a heavy test: set %s=1 to run it (.ci/run does)", HeavyVar)
	}
}

// Tool returns the path of the program name, looked up in PATH, or skips
// t by SkipOrFail's rule when it is missing (hint says how to install it).
func Tool(t testing.TB, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		SkipOrFail(t, "%s is not installed (%s)", name, hint)
	}
	return p
}
