//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMCPSession: the real cordon mcp, with cordon-helper beside it,
// runs run_command's calls in one sandbox on bubblewrap (the helper's
// session server and the helper it starts ahead are the installed
// binary's): the shells' pids grow in the session's pid namespace, where
// a sandbox of each call's own gives every shell pid 2, and a setsid
// process a call leaves is killed before the call returns. On the
// Landlock-only backend every call runs in a sandbox of its own, and
// answers the same.
func TestMCPSession(t *testing.T) {
	t.Parallel()
	eachBackend(t, testMCPSession)
}

func testMCPSession(t *testing.T, e *sandboxEnv, backend string) {
	bin := installBins(e, "bin", helperName, mcpName)
	asker := startMCPAsker(t, e, bin, false, "", "--backend", backend)
	pid := func(out string) int {
		t.Helper()
		// The pid is the line of digits (a process left behind may
		// write after it on the Landlock-only backend).
		for _, l := range strings.Split(out, "\n") {
			if n, err := strconv.Atoi(l); err == nil && strings.HasPrefix(out, "exit code: 0\n") {
				return n
			}
		}
		t.Fatalf("run_command: %q", out)
		return 0
	}
	start := time.Now()
	var pids []int
	// The first sandbox is replaced at the second call, once its
	// placeholders exist on the host.
	for _, c := range []string{"echo $$", "echo $$", "setsid sh -c 'sleep 2; echo late > late' & echo $$", "echo $$"} {
		out, _ := asker.run(t, nil, "sh", "-c", c)
		pids = append(pids, pid(out))
	}
	if backend != "bwrap" {
		return
	}
	if pids[1] <= 2 || pids[2] <= pids[1] || pids[3] <= pids[2] {
		t.Errorf("pids %v: the calls did not share a sandbox", pids)
	}
	time.Sleep(time.Until(start.Add(3 * time.Second)))
	if _, err := os.Stat(filepath.Join(e.ws, "late")); err == nil {
		t.Error("a process a call left in a session of its own ran on")
	}
}
