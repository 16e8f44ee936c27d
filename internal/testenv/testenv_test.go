package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// TestFakeHome: the fake home lies under the test's temporary directory,
// with its workspace and XDG directories made, and Env names them all.
func TestFakeHome(t *testing.T) {
	h := FakeHome(t)
	for _, d := range []string{h.Dir, h.Workspace, filepath.Join(h.Dir, ".config"), filepath.Join(h.Dir, ".local", "state")} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || !strings.HasPrefix(d, h.Root+"/") {
			t.Errorf("%s: %v", d, err)
		}
	}
	env := strings.Join(h.Env(), "\n")
	for _, k := range []string{"HOME=" + h.Dir, "XDG_CONFIG_HOME=", "XDG_STATE_HOME=", "XDG_CACHE_HOME="} {
		if !strings.Contains(env, k) {
			t.Errorf("Env lacks %s: %q", k, env)
		}
	}
	if home, _ := os.UserHomeDir(); home != "" && strings.HasPrefix(h.Dir, home+"/") {
		t.Errorf("the fake home %s lies in the real one", h.Dir)
	}
}

// TestListen: the listener is on the loopback only.
func TestListen(t *testing.T) {
	ln := Listen(t)
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		t.Errorf("listening on %v", ln.Addr())
	}
}

// TestInotify: a start that fails for want of inotify instances (EMFILE)
// is tried again until it succeeds; another error is not.
func TestInotify(t *testing.T) {
	tries := 0
	Inotify(t, func() error {
		if tries++; tries < 3 {
			return fmt.Errorf("starting an inotify instance: %w", syscall.EMFILE)
		}
		return nil
	})
	if tries != 3 {
		t.Errorf("started %d times, want 3", tries)
	}
	if os.Getenv("TESTENV_CHILD") == "inotify" {
		Inotify(t, func() error { return errors.New("no inotify here") })
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInotify$", "-test.v")
	cmd.Env = append(os.Environ(), "TESTENV_CHILD=inotify", "CI=")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), "no inotify here") {
		t.Errorf("another error is not skipped at once:\n%s", out)
	}
}
