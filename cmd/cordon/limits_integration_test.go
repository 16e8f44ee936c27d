//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestResourceBombs runs a fork bomb, a memory bomb and a disk-filling write
// under small limits: each must end within its limit and quickly, leaving
// the host responsive. As root on a host with writable cgroups the limits
// are a cgroup's; as a normal user they are rlimits.
func TestResourceBombs(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		flags  []string
		script string
		check  func(t *testing.T, r runResult)
	}{
		{"fork bomb", []string{"--max-procs", "30", "--timeout", "20s"},
			// Bounded: 300 sleepers if nothing stopped it.
			`i=0; while [ $i -lt 300 ]; do sleep 3 & i=$((i+1)); done; wait`,
			func(t *testing.T, r runResult) {
				if !strings.Contains(r.stderr, "fork") {
					t.Errorf("expected refused forks: %s", r)
				}
			}},
		{"memory bomb", []string{"--max-memory", "64", "--timeout", "20s"},
			// tail keeps the one endless line in memory.
			`head -c 400000000 /dev/zero | tail -c 400000000 > /dev/null; echo "rc=$?"`,
			func(t *testing.T, r runResult) {
				if strings.Contains(r.stdout, "rc=0") {
					t.Errorf("400 MB held under a 64 MB limit: %s", r)
				}
			}},
		{"disk fill", []string{"--max-file-size", "1", "--timeout", "20s"},
			`head -c 5000000 /dev/zero > big; echo "rc=$?"`,
			func(t *testing.T, r runResult) {
				if strings.Contains(r.stdout, "rc=0") {
					t.Errorf("5 MB written under a 1 MB limit: %s", r)
				}
				fi, err := os.Stat(filepath.Join(e.ws, "big"))
				if err != nil || fi.Size() > 1<<20 {
					t.Errorf("file size %v (%v), want <= 1 MiB", fi, err)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := e.sh(tc.script, tc.flags...)
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("took %s", d)
			}
			if r.code == 124 {
				t.Fatalf("the limit did not stop it; the timeout did: %s", r)
			}
			tc.check(t, r)
			// The host is still responsive.
			probe := time.Now()
			if q := e.sh("true"); q.code != 0 || time.Since(probe) > 5*time.Second {
				t.Fatalf("host not responsive after the bomb: %s", q)
			}
		})
	}
}

// TestRunJSONUsage checks that --json reports the run's resource usage,
// the command's CPU time included, on both backends.
func TestRunJSONUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	jf := jsonOut(t)
	r := e.run("run", "--json-out", jf, "--", "sh", "-c", "exit 4")
	b, _ := os.ReadFile(jf)
	if r.code != 4 || !strings.Contains(string(b), `"exit_code":4`) || !strings.Contains(string(b), `"wall_ns"`) || !strings.Contains(string(b), `"max_rss_kb"`) {
		t.Fatalf("--json-out %q: %s", b, r)
	}
	// --json alone is refused: the run's stdout and stderr are the command's.
	if r := e.run("run", "--json", "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "--json-out FILE") {
		t.Errorf("run --json: %s", r)
	}
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "landlock" {
				requireLandlock(t)
			}
			// A shell loop that burns CPU in the command itself.
			jf := jsonOut(t)
			r := e.run("run", "--json-out", jf, "--backend", backend, "--", "sh", "-c", `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done`)
			if r.code != 0 {
				t.Fatalf("busy loop: %s", r)
			}
			var res struct {
				Usage struct {
					Wall       int64    `json:"wall_ns"`
					User       int64    `json:"user_cpu_ns"`
					System     int64    `json:"system_cpu_ns"`
					Incomplete []string `json:"incomplete"`
				} `json:"usage"`
			}
			line, _ := os.ReadFile(jf)
			if err := json.Unmarshal(line, &res); err != nil {
				t.Fatalf("--json-out %q: %v", line, err)
			}
			u := res.Usage
			cpu := u.User + u.System
			// The loop costs well over 100 ms of CPU however loaded the
			// machine is; uncounted, the figure is a few milliseconds.
			// Wall time says nothing under load.
			if cpu < int64(50*time.Millisecond) || len(u.Incomplete) > 0 {
				t.Errorf("CPU time %v of a %v CPU-bound run (incomplete: %q): the command's own time is missing", time.Duration(cpu), time.Duration(u.Wall), u.Incomplete)
			}
		})
	}
}

// TestSmallProcessLimit runs a command under the smallest process limits,
// on both backends. The sandbox's own set-up (bwrap's processes, the
// helper's Go runtime threads) must not count against them: with a cgroup
// (as root) the limit was set before bwrap started, and a run failed at
// random with "bwrap: Can't fork", a Go runtime panic of the helper, or a
// false "user namespaces look unavailable" and a fallback to the
// Landlock-only backend. The limit still holds for the command: under
// --max-procs 1 its first fork is refused.
func TestSmallProcessLimit(t *testing.T) {
	e := newEnv(t)
	backends := []string{"bwrap"}
	if landlockAvailable() {
		backends = append(backends, "landlock")
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			for n := 1; n <= 6; n++ {
				for i := 0; i < 5; i++ {
					r := e.sh("echo ok", "--backend", be, "--max-procs", strconv.Itoa(n))
					if r.code != 0 || r.stdout != "ok\n" || strings.Contains(r.stderr, "setup failed") || strings.Contains(r.stderr, "user namespaces") {
						t.Fatalf("--max-procs %d, run %d: %s", n, i+1, r)
					}
				}
			}
			r := e.sh("/bin/true && echo forked", "--backend", be, "--max-procs", "1")
			if strings.Contains(r.stdout, "forked") || !strings.Contains(r.stderr, "fork") {
				t.Errorf("a fork under --max-procs 1 was not refused: %s", r)
			}
		})
	}
}
