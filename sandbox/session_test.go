package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/host/probe"
	"github.com/cordon-sandbox/cordon/internal/testenv"
	"github.com/cordon-sandbox/cordon/result"
)

// sessionRun runs script with sh in ws through ss and returns its result
// and output (stdout and stderr together).
func sessionRun(t *testing.T, ss *Session, ws, script string) (*result.Result, string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = ws
	cmd.Stdout, cmd.Stderr = &out, &out
	res, err := ss.Run(context.Background(), cmd)
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return res, out.String()
}

// hostGit runs git on the host in dir.
func hostGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestSession: many commands run in one sandbox (the pid namespace is
// the session's: the shells' pids grow, where a sandbox of its own gives
// each the same), each with its own streams, environment, directory and
// exit status, the policy applied to each.
func TestSession(t *testing.T) {
	home, ws := fakeHost(t)
	sb, err := New(WithWorkspace(ws), WithWritePaths(ws))
	if err != nil {
		t.Fatal(err)
	}
	ss := sb.NewSession()
	defer ss.Close()
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 20
	var pids []int
	for i := range n {
		var out, errb bytes.Buffer
		cmd := exec.Command("sh", "-c", `read -r line; echo "$$ $line $X $(pwd)"; cat "$HOME/.ssh/id_rsa"; echo x >> made; exit $N`)
		cmd.Dir = filepath.Join(ws, "sub")
		cmd.Env = []string{"X=x" + strconv.Itoa(i), "N=" + strconv.Itoa(i%3), "PATH=/usr/bin:/bin", "HOME=" + home}
		cmd.Stdin = strings.NewReader("in" + strconv.Itoa(i) + "\n")
		cmd.Stdout, cmd.Stderr = &out, &errb
		res, err := ss.Run(context.Background(), cmd)
		if err != nil {
			t.Fatal(i, err)
		}
		f := strings.Fields(out.String())
		if res.ExitCode != i%3 || len(f) != 4 || f[1] != "in"+strconv.Itoa(i) || f[2] != "x"+strconv.Itoa(i) || f[3] != filepath.Join(ws, "sub") {
			t.Fatalf("command %d: exit %d, stdout %q, stderr %q", i, res.ExitCode, out.String(), errb.String())
		}
		if !strings.Contains(errb.String(), "Permission denied") {
			t.Fatalf("command %d read the secret: %q", i, errb.String())
		}
		pid, _ := strconv.Atoi(f[0])
		pids = append(pids, pid)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "sub", "made")); strings.Count(string(b), "x") != n {
		t.Errorf("the commands' writes: %q", b)
	}
	st := ss.Stats()
	// The first sandbox is replaced once: its placeholders exist on the
	// host for the second command's plan.
	if st.Commands != n || st.Sandboxes > 2 {
		t.Errorf("stats %+v: the commands did not share the session's sandbox", st)
	}
	if pids[n-1] <= pids[n-2] {
		t.Errorf("pids %v: not one pid namespace", pids)
	}
}

// TestSessionGroupReused: with a cgroup for its limits (root here), a
// session's commands share one, each one's usage counted from the end of
// the one before: a command after one that burnt CPU and touched memory
// is charged neither.
func TestSessionGroupReused(t *testing.T) {
	_, ws := fakeHost(t)
	sb, err := New(WithWorkspace(ws), WithWritePaths(ws))
	if err != nil {
		t.Fatal(err)
	}
	ss := sb.NewSession()
	defer ss.Close()
	// The first sandbox is replaced once (TestSession): the heavy
	// command runs in the second, as the light ones after it.
	sessionRun(t, ss, ws, "true")
	sessionRun(t, ss, ws, "true")
	heavy, out := sessionRun(t, ss, ws, `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; head -c 100000000 /dev/zero | tail -c 1 >/dev/null; echo heavy`)
	if heavy.ExitCode != 0 || !strings.Contains(out, "heavy") {
		t.Fatalf("the heavy command: exit %d: %s", heavy.ExitCode, out)
	}
	if heavy.Usage.Cgroup == "" {
		if os.Geteuid() == 0 && testenv.CI() {
			t.Fatal("no cgroup for the session's commands as root under CI")
		}
		t.Skip("no cgroup for the limits here (rlimits)")
	}
	for i := range 3 {
		light, out := sessionRun(t, ss, ws, "echo light")
		if light.ExitCode != 0 || !strings.Contains(out, "light") {
			t.Fatalf("light command %d: exit %d: %s", i, light.ExitCode, out)
		}
		cpu, heavyCPU := light.Usage.User+light.Usage.System, heavy.Usage.User+heavy.Usage.System
		t.Logf("heavy %v, %d KB; light %v, %d KB", heavyCPU, heavy.Usage.PeakMemoryKB, cpu, light.Usage.PeakMemoryKB)
		if cpu >= heavyCPU/4 {
			t.Errorf("light command %d is charged %v of CPU, the heavy one %v: counted with it", i, cpu, heavyCPU)
		}
		if light.Usage.Cgroup == "" || len(light.LimitsReached) > 0 {
			t.Errorf("light command %d: cgroup %q, limits reached %+v", i, light.Usage.Cgroup, light.LimitsReached)
		}
	}
	if st := ss.Stats(); st.GroupsReused < 3 || st.Sandboxes > 2 {
		t.Errorf("stats %+v: the commands did not share a cgroup", st)
	}
}

// TestSessionKillsLeftovers: what a command leaves running, in its
// process group or in a session of its own (setsid), is killed when the
// command ends; on a timeout the whole tree is killed, and the next
// command runs in the same sandbox.
func TestSessionKillsLeftovers(t *testing.T) {
	_, ws := fakeHost(t)
	sb, err := New(WithWorkspace(ws), WithWritePaths(ws), WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ss := sb.NewSession()
	defer ss.Close()
	start := time.Now()
	res, out := sessionRun(t, ss, ws, `(sleep 3; echo late > bg) & setsid sh -c 'sleep 3; echo late > sid' & echo started`)
	if res.ExitCode != 0 || out != "started\n" {
		t.Fatalf("exit %d output %q", res.ExitCode, out)
	}
	// Killed after the timeout (1s) and the grace period (2s).
	res, out = sessionRun(t, ss, ws, `setsid sh -c 'sleep 4; echo late > tsid' & trap '' TERM; sleep 30`)
	if !res.TimedOut || res.ExitCode != result.ExitTimeout || time.Since(start) > 10*time.Second {
		t.Fatalf("timeout: %+v after %s, output %q", res, time.Since(start), out)
	}
	res, out = sessionRun(t, ss, ws, `echo again`)
	if res.ExitCode != 0 || out != "again\n" {
		t.Fatalf("after the timeout: exit %d output %q", res.ExitCode, out)
	}
	time.Sleep(time.Until(start.Add(5 * time.Second)))
	for _, f := range []string{"bg", "sid", "tsid"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			t.Errorf("%s: a process the command left ran on", f)
		}
	}
	if st := ss.Stats(); st.Commands != 3 || st.Sandboxes > 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestSessionPlantedAndRepos: a hook that a command plants in a
// repository it creates is disarmed before its result is returned; the
// next command's plan protects that repository's git directory, so the
// session's sandbox is replaced first and the command cannot write
// there. A change of the repository's config between commands
// (core.hooksPath) is noticed the same way.
func TestSessionPlantedAndRepos(t *testing.T) {
	_, ws := fakeHost(t)
	hostGit(t, ws, "init", "-q")
	sb, err := New(WithWorkspace(ws), WithWritePaths(ws))
	if err != nil {
		t.Fatal(err)
	}
	ss := sb.NewSession()
	defer ss.Close()
	sessionRun(t, ss, ws, `true`)
	sessionRun(t, ss, ws, `true`) // the placeholders' sandbox
	before := ss.Stats().Sandboxes
	res, out := sessionRun(t, ss, ws, `git init -q nested && printf '#!/bin/sh\necho pwned\n' > nested/.git/hooks/pre-commit && chmod +x nested/.git/hooks/pre-commit && echo planted`)
	if res.ExitCode != 0 || !strings.Contains(out, "planted") {
		t.Fatalf("exit %d output %q", res.ExitCode, out)
	}
	hook := filepath.Join(ws, "nested", ".git", "hooks", "pre-commit")
	if fi, err := os.Stat(hook); err == nil && fi.Mode()&0o111 != 0 {
		t.Errorf("the planted hook is still armed: %s %v", hook, fi.Mode())
	}
	disarmed := false
	for _, p := range res.Planted {
		disarmed = disarmed || p.Path == hook && p.Disarmed
	}
	if !disarmed {
		t.Errorf("planted %+v, output %q", res.Planted, out)
	}
	res, out = sessionRun(t, ss, ws, `touch nested/.git/hooks/post-checkout && echo wrote`)
	if res.ExitCode == 0 || strings.Contains(out, "wrote") {
		t.Errorf("the new repository's hooks were writable: exit %d output %q", res.ExitCode, out)
	}
	if st := ss.Stats(); st.Sandboxes != before+1 {
		t.Errorf("stats %+v: the new repository did not replace the sandbox (was %d)", st, before)
	}
	before = ss.Stats().Sandboxes
	hostGit(t, ws, "config", "core.hooksPath", filepath.Join(ws, "githooks"))
	res, out = sessionRun(t, ss, ws, `mkdir -p githooks; touch githooks/pre-commit && echo wrote`)
	if res.ExitCode == 0 || strings.Contains(out, "wrote") {
		t.Errorf("core.hooksPath set between commands was writable: exit %d output %q", res.ExitCode, out)
	}
	if st := ss.Stats(); st.Sandboxes != before+1 {
		t.Errorf("stats %+v: the config change did not replace the sandbox (was %d)", st, before)
	}
}

// settleWatch waits until the session's watcher vouches for the
// workspace and a command's walks read no directory: a directory's
// record is trusted once its ctime is 2 s older than a walk, and the
// session's sandbox changes the workspace as it starts (its
// placeholders).
func settleWatch(t *testing.T, ss *Session, ws string) {
	t.Helper()
	for i := range 8 {
		before := ss.Stats().WalksSpared
		sessionRun(t, ss, ws, `true`)
		if ss.Stats().WalksSpared > before {
			return
		}
		if i%2 == 1 {
			time.Sleep(2100 * time.Millisecond)
		}
	}
	t.Fatalf("stats %+v: the session's walks never read nothing", ss.Stats())
}

// TestSessionWatchSeesHostChanges: once the session's watcher spares
// its commands the walks of the workspace, a repository made on the host
// between two commands (below the top, whose change the walk would see
// without an event) is still protected in the next, a core.hooksPath
// set on the host too, and a hook a command plants in a repository it
// makes there is still disarmed before its result is returned.
func TestSessionWatchSeesHostChanges(t *testing.T) {
	_, ws := fakeHost(t)
	hostGit(t, ws, "init", "-q")
	if err := os.MkdirAll(filepath.Join(ws, "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	sb, err := New(WithWorkspace(ws), WithWritePaths(ws))
	if err != nil {
		t.Fatal(err)
	}
	ss := sb.NewSession()
	defer ss.Close()
	settleWatch(t, ss, ws)
	hostGit(t, ws, "init", "-q", "sub/deeper/nested")
	res, out := sessionRun(t, ss, ws, `touch sub/deeper/nested/.git/hooks/post-checkout && echo wrote`)
	if res.ExitCode == 0 || strings.Contains(out, "wrote") {
		t.Errorf("the hooks of a repository made on the host were writable: exit %d output %q", res.ExitCode, out)
	}
	settleWatch(t, ss, ws)
	hostGit(t, ws, "config", "core.hooksPath", filepath.Join(ws, "githooks"))
	res, out = sessionRun(t, ss, ws, `mkdir -p githooks; touch githooks/pre-commit && echo wrote`)
	if res.ExitCode == 0 || strings.Contains(out, "wrote") {
		t.Errorf("core.hooksPath set on the host was writable: exit %d output %q", res.ExitCode, out)
	}
	settleWatch(t, ss, ws)
	res, out = sessionRun(t, ss, ws, `cd sub/deeper && git init -q n2 && printf '#!/bin/sh\necho pwned\n' > n2/.git/hooks/pre-commit && chmod +x n2/.git/hooks/pre-commit && echo planted`)
	if res.ExitCode != 0 || !strings.Contains(out, "planted") {
		t.Fatalf("exit %d output %q", res.ExitCode, out)
	}
	hook := filepath.Join(ws, "sub", "deeper", "n2", ".git", "hooks", "pre-commit")
	if fi, err := os.Stat(hook); err == nil && fi.Mode()&0o111 != 0 {
		t.Errorf("the planted hook is still armed: %s %v", hook, fi.Mode())
	}
	disarmed := false
	for _, p := range res.Planted {
		disarmed = disarmed || p.Path == hook && p.Disarmed
	}
	if !disarmed {
		t.Errorf("planted %+v, output %q", res.Planted, out)
	}
}

// settleSnapshot runs commands until one reuses the snapshot of the one
// before (the watches of what it was read from are added by the first
// that reads it, and the session's sandbox changes the workspace as it
// starts).
func settleSnapshot(t *testing.T, ss *Session, ws string) {
	t.Helper()
	for range 6 {
		before := ss.Stats().SnapshotsReused
		if res, out := sessionRun(t, ss, ws, `true`); len(res.Planted) > 0 {
			t.Fatalf("planted %+v with no change, output %q", res.Planted, out)
		}
		if ss.Stats().SnapshotsReused > before {
			return
		}
	}
	t.Fatalf("stats %+v: no command reused the snapshot before it", ss.Stats())
}

// TestSessionSnapshotReuse: once a session's commands reuse the snapshot
// for the planted-files check, what the host changes between two commands
// (a virtual environment's .pth, a hook, the repository's config) is the
// user's, not reported as the next command's, and what a command plants
// is still found and disarmed.
func TestSessionSnapshotReuse(t *testing.T) {
	_, ws := fakeHost(t)
	hostGit(t, ws, "init", "-q")
	sp := filepath.Join(ws, ".venv", "lib", "python3.13", "site-packages")
	if err := os.MkdirAll(sp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".venv", "pyvenv.cfg"), []byte("home = /usr/bin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := New(WithWorkspace(ws), WithWritePaths(ws))
	if err != nil {
		t.Fatal(err)
	}
	ss := sb.NewSession()
	defer ss.Close()
	host := []struct {
		name   string
		change func() error
	}{
		{"a .pth", func() error {
			return os.WriteFile(filepath.Join(sp, "editable.pth"), []byte("import _editable\n"), 0o644)
		}},
		{"a hook", func() error {
			return os.WriteFile(filepath.Join(ws, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\nmake lint\n"), 0o755)
		}},
		{"the config", func() error {
			f, err := os.OpenFile(filepath.Join(ws, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("[core]\n\tfsmonitor = /usr/bin/true\n")
			return err
		}},
	}
	for _, h := range host {
		settleSnapshot(t, ss, ws)
		if err := h.change(); err != nil {
			t.Fatal(err)
		}
		if res, out := sessionRun(t, ss, ws, `true`); len(res.Planted) > 0 {
			t.Errorf("the host's change to %s was reported as the command's: %+v, output %q", h.name, res.Planted, out)
		}
	}
	settleSnapshot(t, ss, ws)
	res, out := sessionRun(t, ss, ws, `printf 'import os; os.system("id")\n' > .venv/lib/python3.13/site-packages/evil.pth && echo planted`)
	if res.ExitCode != 0 || !strings.Contains(out, "planted") {
		t.Fatalf("exit %d output %q", res.ExitCode, out)
	}
	pth := filepath.Join(sp, "evil.pth")
	disarmed := false
	for _, p := range res.Planted {
		disarmed = disarmed || p.Path == pth && p.Disarmed
	}
	if _, err := os.Stat(pth); !disarmed || err == nil {
		t.Errorf("a .pth planted after a reused snapshot: planted %+v, output %q", res.Planted, out)
	}
}

// TestSessionLandlock: on the Landlock-only backend (no bwrap, or a bwrap
// that cannot create a user namespace) a session runs each command in a
// sandbox of its own, as Run does.
func TestSessionLandlock(t *testing.T) {
	home, ws := fakeHost(t)
	if r := probe.Detect(probe.Options{}); r.Landlock.ABI < 1 {
		testenv.SkipOrFail(t, "Landlock is unavailable: the Landlock-only backend cannot run here")
	}
	noUserNS := filepath.Join(home, "bin", "bwrap")
	if err := os.MkdirAll(filepath.Dir(noUserNS), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(noUserNS, []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opt  Option
	}{
		{"landlock at once", withBwrapPath(filepath.Join(home, "no", "bwrap"))},
		{"fallback", withBwrapPath(noUserNS)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := New(WithWorkspace(ws), WithWritePaths(ws), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			ss := sb.NewSession()
			defer ss.Close()
			for i := range 3 {
				res, out := sessionRun(t, ss, ws, `echo ok; cat "$HOME/.ssh/id_rsa"; exit 2`)
				// stdout and stderr reach the one writer through two
				// pipes: their order is not kept.
				if res.ExitCode != 2 || !strings.Contains(out, "ok\n") || strings.Contains(out, "SECRET") || res.Backend != "landlock" {
					t.Fatalf("command %d: exit %d backend %s output %q", i, res.ExitCode, res.Backend, out)
				}
			}
			if st := ss.Stats(); st.Commands != 0 {
				t.Errorf("stats %+v: commands ran in a session's sandbox on the Landlock-only backend", st)
			}
		})
	}
}

// TestSessionServerKilled: a command that kills the session's server
// (same user, same sandbox: it can) ends the sandbox: Run returns an
// error, what the command planted is disarmed all the same, and the next
// command gets a new sandbox.
func TestSessionServerKilled(t *testing.T) {
	_, ws := fakeHost(t)
	sb, err := New(WithWorkspace(ws), WithWritePaths(ws))
	if err != nil {
		t.Fatal(err)
	}
	ss := sb.NewSession()
	defer ss.Close()
	sessionRun(t, ss, ws, `true`)
	sessionRun(t, ss, ws, `true`)
	before := ss.Stats().Sandboxes
	var out bytes.Buffer
	// (git through a variable: a command that names git init runs in a
	// sandbox of its own, where its config is a private copy.)
	cmd := exec.Command("sh", "-c", `g=git; $g init -q nested && printf '#!/bin/sh\necho pwned\n' > nested/.git/hooks/pre-commit && chmod +x nested/.git/hooks/pre-commit && kill -9 $PPID; sleep 10`)
	cmd.Dir, cmd.Stdout, cmd.Stderr = ws, &out, &out
	if res, err := ss.Run(context.Background(), cmd); err == nil {
		t.Fatalf("killing the server: no error, %+v %q", res, out.String())
	}
	if fi, err := os.Stat(filepath.Join(ws, "nested", ".git", "hooks", "pre-commit")); err != nil || fi.Mode()&0o111 != 0 {
		t.Errorf("the hook planted before the kill: %v %v", fi, err)
	}
	res, o := sessionRun(t, ss, ws, `echo again`)
	if res.ExitCode != 0 || o != "again\n" || ss.Stats().Sandboxes != before+1 {
		t.Errorf("after the kill: exit %d output %q stats %+v", res.ExitCode, o, ss.Stats())
	}
}

// TestSessionManyRepositories: in a workspace of many nested repositories
// the helper makes the protected paths' mounts (and, for a user, the
// command's user namespace), which a session's server does not: each
// command runs in a sandbox of its own, as Run runs it, and every nested
// repository's hooks stay read-only, the command its user's uid.
func TestSessionManyRepositories(t *testing.T) {
	_, ws := fakeHost(t)
	hostGit(t, ws, "init", "-q")
	for i := range 30 {
		g := filepath.Join(ws, "r"+strconv.Itoa(i), ".git")
		for _, d := range []string{"objects", "refs", "hooks"} {
			if err := os.MkdirAll(filepath.Join(g, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range []string{"HEAD", "config"} {
			if err := os.WriteFile(filepath.Join(g, f), []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	sb, err := New(WithWorkspace(ws), WithWritePaths(ws))
	if err != nil {
		t.Fatal(err)
	}
	ss := sb.NewSession()
	defer ss.Close()
	for range 2 {
		res, out := sessionRun(t, ss, ws, `id -u; touch r7/.git/hooks/pre-commit && echo wrote`)
		if res.ExitCode == 0 || strings.Contains(out, "wrote") || !slices.Contains(strings.Split(out, "\n"), strconv.Itoa(os.Getuid())) {
			t.Errorf("exit %d, output %q: the hooks were writable, or the uid is not %d", res.ExitCode, out, os.Getuid())
		}
	}
	if st := ss.Stats(); st.Commands != 0 {
		t.Errorf("stats %+v: a command ran in the session's sandbox", st)
	}
}
