//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runJSON is the --json line cordon run prints last on stderr.
type runJSON struct {
	ExitCode int    `json:"exit_code"`
	Backend  string `json:"backend"`
	Usage    struct {
		Cgroup string `json:"cgroup"`
	} `json:"usage"`
	LimitsReached []struct {
		Limit   string `json:"limit"`
		Killed  bool   `json:"killed"`
		Certain bool   `json:"certain"`
	} `json:"limits_reached"`
}

// jsonOut is a file for a run's --json-out, in the test's temporary
// directory.
func jsonOut(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "result.json")
}

// readJSON decodes the --json-out file of run r; the run's stderr holds
// no JSON (it is the command's).
func readJSON(t *testing.T, file string, r runResult) runJSON {
	t.Helper()
	var res runJSON
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("--json-out: %v\n%s", err, r)
	}
	if err := json.Unmarshal(b, &res); err != nil || strings.Count(strings.TrimSpace(string(b)), "\n") != 0 {
		t.Fatalf("--json-out %q: want one JSON object on one line: %v\n%s", b, err, r)
	}
	if strings.Contains(r.stderr, `"exit_code"`) {
		t.Fatalf("the result's JSON reached the command's stderr:\n%s", r)
	}
	return res
}

// cordonLines returns the stderr lines starting "cordon: " but for the
// degraded notices and the --json line.
func cordonLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "cordon: ") && !strings.HasPrefix(l, "cordon: degraded:") {
			out = append(out, l)
		}
	}
	return out
}

// TestLimitLines: a command stopped by a resource limit gets one line
// naming it, decided from the kernel's evidence; a SIGKILL or an exit
// status anyone could produce names no limit. Memory and process limits
// leave evidence only in a cgroup (the run's usage says whether it had
// one); without it memory stays silent, and processes are named only when
// the tasks were seen at RLIMIT_NPROC. Both backends.
func TestLimitLines(t *testing.T) {
	e := newEnv(t)
	limitLine := regexp.MustCompile(`limit of .* reached \(--max-`)
	for _, tc := range []struct {
		name   string
		flags  []string
		script string
		code   int
		want   string // the limit line, or "" for none; "cgroup:" prefix: only with a cgroup
		exact  bool   // the line is "cordon: killed: ..." where the command's own status is known
	}{
		{"cpu", []string{"--max-cpu", "1"}, `while :; do :; done`, 137, "CPU time limit of 1 s reached (--max-cpu)", true},
		{"cpu through a shell", []string{"--max-cpu", "1"}, `sh -c 'while :; do :; done'; exit $?`, 137, "probably killed: CPU time limit of 1 s reached (--max-cpu): the command exited with 137", false},
		{"SIGKILL before the CPU limit", []string{"--max-cpu", "30"}, `kill -9 $$`, 137, "", false},
		{"file size", []string{"--max-file-size", "1"}, `exec head -c 5000000 /dev/zero > big`, 153, "file size limit of 1 MB reached (--max-file-size)", true},
		{"exit 153 is no evidence", []string{"--max-file-size", "1"}, `exit 153`, 153, "", false},
		{"a shell reports SIGXFSZ", []string{"--max-file-size", "1"}, `head -c 5000000 /dev/zero > big`, 153, "", false},
		{"memory", []string{"--max-memory", "64"}, `head -c 400000000 /dev/zero | tail -c 400000000 > /dev/null`, -1, "cgroup:memory limit of 64 MB reached (--max-memory)", false},
		{"processes", []string{"--max-procs", "10"}, `i=0; while [ $i -lt 40 ]; do sleep 3 & i=$((i+1)); done; wait`, -1, "cgroup?:process limit of 10 reached (--max-procs)", false},
		{"timeout", []string{"--timeout", "1s", "--max-cpu", "30"}, `sleep 8`, 124, "", false},
	} {
		for _, backend := range []string{"bwrap", "landlock"} {
			t.Run(tc.name+"/"+backend, func(t *testing.T) {
				if backend == "landlock" {
					requireLandlock(t)
				}
				jf := jsonOut(t)
				flags := append([]string{"--json-out", jf, "--backend", backend, "--timeout", "20s"}, tc.flags...)
				r := e.sh(tc.script, flags...)
				res := readJSON(t, jf, r)
				if tc.code >= 0 && r.code != tc.code {
					t.Errorf("exit %d, want %d: %s", r.code, tc.code, r)
				}
				var got []string
				for _, l := range cordonLines(r.stderr) {
					if limitLine.MatchString(l) {
						got = append(got, l)
					}
				}
				want, cgroupOnly := strings.CutPrefix(tc.want, "cgroup:")
				if cgroupOnly && res.Usage.Cgroup == "" {
					want = "" // rlimits leave no evidence: stay silent
				}
				// Without a cgroup, dash's first refused fork ends the
				// run before the tasks are seen at RLIMIT_NPROC, mostly:
				// a line then is optional, but names the limit
				// (TestProcessLimitWithoutCgroup).
				maybe, rlimitMaybe := strings.CutPrefix(tc.want, "cgroup?:")
				if rlimitMaybe {
					want = maybe
					if res.Usage.Cgroup == "" && len(got) == 0 {
						want = ""
					}
				}
				switch {
				case want == "" && len(got) > 0:
					t.Errorf("a limit named without evidence: %q\n%s", got, r)
				case want == "":
				case len(got) != 1 || !strings.Contains(got[0], want):
					t.Errorf("want one line with %q, got %q\n%s", want, got, r)
				case tc.exact && (backend == "landlock" || kernelAtLeast(6, 15)) && !strings.HasPrefix(got[0], "cordon: killed: "):
					t.Errorf("the command's own status is known, yet: %q", got[0])
				}
				if len(got) != len(res.LimitsReached) {
					t.Errorf("--json limits_reached %+v, lines %q", res.LimitsReached, got)
				}
				t.Logf("%s (cgroup %q): %q", backend, res.Usage.Cgroup, got)
			})
		}
	}
}

// TestMemoryLimitIsTheGroups: where a cgroup holds the run, --max-memory is
// the group's limit on the memory used, not also RLIMIT_DATA on each
// process's reservations: the two raced (a command could fail on malloc
// before the group's OOM killer acted, and no line named the limit), and a
// program reserving more than it touches (a runtime's heap arena) failed
// though it used little. Without a cgroup the rlimit is all there is.
func TestMemoryLimitIsTheGroups(t *testing.T) {
	e := newEnv(t)
	script := `import mmap; m = mmap.mmap(-1, 300 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS); m[0] = 1; print("reserved")`
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "landlock" {
				requireLandlock(t)
			}
			jf := jsonOut(t)
			r := e.run("run", "--json-out", jf, "--backend", backend, "--max-memory", "64", "--", "python3", "-c", script)
			res := readJSON(t, jf, r)
			if res.Usage.Cgroup == "" {
				if r.code == 0 {
					t.Errorf("without a cgroup RLIMIT_DATA of 64 MB let a 300 MB mapping through: %s", r)
				}
				return
			}
			if r.code != 0 || !strings.Contains(r.stdout, "reserved") {
				t.Errorf("with a cgroup (%s), a 300 MB reservation touching one page failed: %s", res.Usage.Cgroup, r)
			}
		})
	}
}

// kernelAtLeast reports whether the running kernel is major.minor or
// later (PIDFD_INFO_EXIT, which tells a death by signal from an exit with
// 128+N under bwrap, is Linux 6.15).
func kernelAtLeast(major, minor int) bool {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	var a, c int
	if err != nil {
		return false
	}
	if _, err := fmt.Sscanf(string(b), "%d.%d", &a, &c); err != nil {
		return false
	}
	return a > major || a == major && c >= minor
}

// TestGitInitHint: git init of the workspace fails inside (its .git is a
// read-only placeholder), and cordon says why in one line; git init of a
// new directory works and gets no hint, and so does git init of an
// existing repository (it rewrites the private copy of its config, and
// the host's stays as it was).
func TestGitInitHint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run("run", "--", "git", "init")
	want := "cordon: git init: " + filepath.Join(e.ws, ".git") + " cannot be created inside the sandbox: cordon keeps it a read-only placeholder there"
	if r.code == 0 || !strings.Contains(r.stderr, want) || strings.Count(r.stderr, "cordon: git init:") != 1 {
		t.Errorf("git init of the workspace, want exit != 0 and %q:\n%s", want, r)
	}
	if exists(filepath.Join(e.ws, ".git")) {
		t.Errorf("a .git was left in the workspace")
	}
	r = e.run("run", "--", "git", "init", "-q", "sub")
	if r.code != 0 || strings.Contains(r.stderr, "cordon: git init") {
		t.Errorf("git init of a new directory: %s", r)
	}
	// Initialised outside, as the hint says; a second git init inside
	// rewrites only the private copy of the config.
	host := exec.Command("git", "init", "-q", e.ws)
	host.Env = e.environ()
	if out, err := host.CombinedOutput(); err != nil {
		t.Fatalf("git init on the host: %v\n%s", err, out)
	}
	config := readFile(t, filepath.Join(e.ws, ".git", "config"))
	r = e.run("run", "--", "git", "init")
	if r.code != 0 || strings.Contains(r.stderr, "cordon: git init") || strings.Contains(r.stderr, "cordon: warning") {
		t.Errorf("git init of an existing repository:\n%s", r)
	}
	if got := readFile(t, filepath.Join(e.ws, ".git", "config")); got != config {
		t.Errorf("git init inside changed the host's config:\n%s\nwas:\n%s", got, config)
	}
	if r := e.run("run", "--", "git", "status", "--short"); r.code != 0 || strings.Contains(r.stderr, "cordon: git init") {
		t.Errorf("git status: %s", r)
	}
}

// TestPathFlagMessages: a flag that names no usable path is one clear
// line, never bwrap's "Can't chdir": an error where the run cannot make
// sense (an empty path, a deny of the workspace), a warning where it can
// (a relative or missing allow, an allow of a denied path), and what the
// warning says is what the run then does.
func TestPathFlagMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, ".ssh", "id_rsa"), "KEY-9d1")
	missing := filepath.Join(e.root, "missing")
	for _, tc := range []struct {
		name   string
		flags  []string
		script string
		code   int    // 125: refused
		line   string // the one cordon: line (error or warning)
		check  func(t *testing.T, r runResult)
	}{
		{"deny empty", []string{"--deny", ""}, "true", 125, `cordon: --deny "": empty; give a path or a pattern such as **/.env`, nil},
		{"allow-write empty", []string{"--allow-write="}, "true", 125, `cordon: --allow-write "": empty; give a path`, nil},
		{"deny the workspace", []string{"--deny", "."}, "true", 125, `cordon: --deny ".": denies the workspace ` + e.ws + ` itself: the command runs in the workspace`, nil},
		{"deny a parent", []string{"--deny", e.home}, "true", 125, `cordon: --deny "` + e.home + `": hides the workspace ` + e.ws + `, which it contains`, nil},
		{"relative allow-write", []string{"--allow-write", "out"}, "mkdir out && echo ok > out/f", 0, `cordon: warning: --allow-write "out": relative to the current directory, it names ` + filepath.Join(e.ws, "out"), nil},
		{"missing allow-write", []string{"--allow-write", missing}, "mkdir -p " + missing + "/x", -1,
			`cordon: warning: --allow-write "` + missing + `": ` + missing + ` does not exist, so this allows nothing: create it first`,
			func(t *testing.T, r runResult) {
				// Inside, the path may lie on the sandbox's private
				// tmpfs; on the host it must not appear.
				if exists(missing) {
					t.Errorf("the missing write path was created on the host: %s", r)
				}
			}},
		{"missing allow-read", []string{"--allow-read", missing}, "true", 0, `cordon: warning: --allow-read "` + missing + `": ` + missing + ` does not exist, so this allows nothing: create it first`, nil},
		{"allow-read of a denied path", []string{"--allow-read", "~/.ssh"}, `cat "$HOME/.ssh/id_rsa"; echo rc=$?`, 0,
			`cordon: warning: --allow-read "~/.ssh": ` + e.home + `/.ssh is denied (` + e.home + `/.ssh): the deny wins, so it stays unreadable`,
			func(t *testing.T, r runResult) {
				if strings.Contains(r.stdout, "KEY-9d1") || strings.Contains(r.stdout, "rc=0") {
					t.Errorf("the denied file was read: %s", r)
				}
			}},
		{"allow-write of a denied path", []string{"--allow-write", "~/.ssh"}, `echo x > "$HOME/.ssh/new"; echo rc=$?`, 0,
			`cordon: warning: --allow-write "~/.ssh": ` + e.home + `/.ssh is denied (` + e.home + `/.ssh): the deny wins, so it stays neither readable nor writable`,
			func(t *testing.T, r runResult) {
				if strings.Contains(r.stdout, "rc=0") || exists(filepath.Join(e.home, ".ssh", "new")) {
					t.Errorf("the denied directory was written: %s", r)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.sh(tc.script, tc.flags...)
			if tc.code >= 0 && r.code != tc.code {
				t.Errorf("exit %d, want %d: %s", r.code, tc.code, r)
			}
			lines := cordonLines(r.stderr)
			if len(lines) != 1 || !strings.HasPrefix(lines[0], tc.line) {
				t.Errorf("want one cordon line starting %q, got %q\n%s", tc.line, lines, r)
			}
			if strings.Contains(r.stderr, "chdir") {
				t.Errorf("bwrap's chdir error leaked: %s", r)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// TestHelpMarksNotBuilt: every flag value that is refused as not built yet
// is marked so in --help, and no other flag is.
func TestHelpMarksNotBuilt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	help := e.run("run", "--help")
	if help.code != 0 {
		t.Fatalf("cordon run --help: %s", help)
	}
	marked := map[string]bool{}
	for _, l := range strings.Split(help.stdout, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && strings.HasPrefix(f[0], "--") && strings.Contains(l, "not built yet") {
			marked[f[0]] = true
		}
	}
	// Nothing a flag takes is refused as not built any more (mode
	// permissive exists); cordon shell still is.
	notBuilt := map[string]string{}
	for flag, val := range notBuilt {
		r := e.run("run", flag, val, "--", "true")
		if r.code != 125 || !strings.Contains(r.stderr, "not built yet") {
			t.Errorf("%s %s: want exit 125 saying not built yet: %s", flag, val, r)
		}
		if !marked[flag] {
			t.Errorf("--help does not mark %s as not built yet:\n%s", flag, help.stdout)
		}
	}
	for flag := range marked {
		if _, ok := notBuilt[flag]; !ok {
			t.Errorf("--help marks %s as not built yet, but nothing of it is refused here", flag)
		}
	}
	if root := e.run("--help"); strings.Contains(root.stdout, "not built yet") {
		t.Errorf("cordon --help marks a command not built yet, but every one is:\n%s", root.stdout)
	}
}

// TestWorkspaceProfileTightens: a .cordon.yaml may pick a tighter profile
// (untrusted: read-only workspace, strict), never a looser one.
func TestWorkspaceProfileTightens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.ws, ".cordon.yaml"), "sandbox:\n  profile: untrusted\n")
	if p := e.run("policy"); p.code != 0 || !strings.Contains(p.stdout, "profile: untrusted") || !strings.Contains(p.stdout, "mode: strict") {
		t.Errorf("cordon policy with profile: untrusted in .cordon.yaml: %s", p)
	}
	r := e.sh("echo x > made; echo rc=$?")
	if r.code != 0 || strings.Contains(r.stdout, "rc=0") || exists(filepath.Join(e.ws, "made")) {
		t.Errorf("the untrusted profile left the workspace writable: %s", r)
	}
	writeFile(t, filepath.Join(e.ws, ".cordon.yaml"), "sandbox:\n  profile: development\n")
	r = e.run("run", "--profile", "ci", "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "sandbox.profile: development (not as tight as the current ci; minimal or untrusted would be) cannot be set by a file inside the workspace") {
		t.Errorf("a looser profile from .cordon.yaml: %s", r)
	}
	checkOneCordonLine(t, r)
}

// TestMaxProcsOnTopOfTheUsers: on the Landlock-only backend without a
// cgroup, the kernel counts every task of the user against RLIMIT_NPROC;
// --max-procs is then that many tasks more than the user had at the start,
// so a user with many processes (a desktop session) can still run a
// command that forks. Root is exempt from RLIMIT_NPROC: there only the
// first half holds.
func TestMaxProcsOnTopOfTheUsers(t *testing.T) {
	requireLandlock(t)
	e := newEnv(t)
	// 60 processes of this user, for the duration of the test.
	var held []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range held {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	for range 60 {
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	jf := jsonOut(t)
	r := e.sh(`sleep 0.1 & sleep 0.1 & wait; echo forked`, "--json-out", jf, "--backend", "landlock", "--max-procs", "20")
	res := readJSON(t, jf, r)
	if r.code != 0 || !strings.Contains(r.stdout, "forked") {
		t.Fatalf("two forks under --max-procs 20 with 60 processes of the user running: %s", r)
	}
	if os.Geteuid() == 0 || res.Usage.Cgroup != "" {
		return // root is exempt; a cgroup counts the sandbox only
	}
	r = e.sh(`i=0; while [ $i -lt 30 ]; do sleep 2 & i=$((i+1)); done; wait; echo all`, "--backend", "landlock", "--max-procs", "10")
	if strings.Contains(r.stdout, "all") && r.code == 0 && !strings.Contains(r.stderr, "fork") {
		t.Errorf("30 forks under --max-procs 10 all succeeded: %s", r)
	}
}

// TestProcessLimitWithoutCgroup: a command that holds its processes at
// --max-procs 5 gets the process-limit line with or without a cgroup: the
// cgroup's count of refused forks, or else the tasks seen at
// RLIMIT_NPROC. Root without a cgroup is exempt from RLIMIT_NPROC:
// nothing limits it, and nothing is said. Both backends.
//
// The command is holdAtLimit, not a shell: on the Landlock-only backend
// the limit counts every task of the user, raised by those running at the
// start, and the tests of other packages (as this user) come and go. A
// shell's background jobs either found room when those ended (nothing
// refused) or, with bash retrying a refused fork after 1, 2, 4 and 8 s,
// outlasted the run's time limit when they started (a full run as an
// unprivileged user). holdAtLimit keeps forking for 1.5 s, filling any
// room that appears, so the tasks stay at the limit through the watch's
// samples whatever the others do, and it says how many forks were
// refused, so the test knows the limit was met.
func TestProcessLimitWithoutCgroup(t *testing.T) {
	requireTool(t, "python3")
	e := newEnv(t)
	for _, be := range []string{"bwrap", "landlock"} {
		t.Run(be, func(t *testing.T) {
			if be == "landlock" {
				requireLandlock(t)
			}
			jf := jsonOut(t)
			r := e.run("run", "--json-out", jf, "--backend", be, "--max-procs", "5", "--timeout", "30s", "--",
				"python3", "-c", holdAtLimit)
			res := readJSON(t, jf, r)
			var kids, refused int
			if _, err := fmt.Sscanf(r.stdout, "held %d refused %d", &kids, &refused); err != nil {
				t.Fatalf("the command did not finish: %v\n%s", err, r)
			}
			var got []string
			for _, l := range cordonLines(r.stderr) {
				if strings.Contains(l, "limit of") {
					got = append(got, l)
				}
			}
			want := "cordon: process limit of 5 reached (--max-procs): "
			if isRoot() && res.Usage.Cgroup == "" {
				want = "" // exempt from RLIMIT_NPROC: no limit was reached
			}
			if (want != "") != (refused > 0) {
				t.Fatalf("%d of the command's forks refused with the limit line %q expected\n%s", refused, want, r)
			}
			switch {
			case want == "" && len(got) > 0:
				t.Errorf("a limit named where none applies: %q\n%s", got, r)
			case want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], want)):
				t.Errorf("want one line %q..., got %q\n%s", want, got, r)
			}
			if len(got) != len(res.LimitsReached) {
				t.Errorf("--json limits_reached %+v, lines %q", res.LimitsReached, got)
			}
			t.Logf("%s (cgroup %q): %d children, %d forks refused: %q", be, res.Usage.Cgroup, kids, refused, got)
		})
	}
}

// holdAtLimit forks children that wait on a pipe, for 1.5 s and at most
// 64, retrying a refused fork every 10 ms; then closes the pipe, reaps
// them and prints how many it held and how many forks were refused.
const holdAtLimit = `import os, time
r, w = os.pipe()
kids = refused = 0
end = time.monotonic() + 1.5
while time.monotonic() < end and kids < 64:
    try:
        pid = os.fork()
    except BlockingIOError:
        refused += 1
        time.sleep(0.01)
        continue
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    kids += 1
os.close(w)
for _ in range(kids):
    os.wait()
print("held", kids, "refused", refused)
`
