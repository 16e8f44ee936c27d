//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requireLandlock skips (or fails under CI) when the kernel lacks Landlock.
func requireLandlock(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/security/landlock"); err == nil {
		return
	}
	// securityfs may not be mounted: ask the kernel through cordon.
	out, _ := exec.Command(cordonBin, "status", "--json").Output()
	if !strings.Contains(string(out), `"available": true`) {
		skipOrFail(t, "the kernel has no Landlock")
	}
}

// TestLandlockBackend runs the Landlock-only backend directly: no
// namespaces, but secrets, writes and the network are still confined, what
// it cannot enforce is printed, and strict mode refuses it.
func TestLandlockBackend(t *testing.T) {
	e := newEnv(t)
	requireLandlock(t)
	writeFile(t, filepath.Join(e.home, ".ssh", "id_rsa"), "LL-SECRET-5c1")
	outside := filepath.Join(e.root, "outside")
	mkdir(t, outside)
	r := e.sh(`cat "$HOME/.ssh/id_rsa"; cat ../other/notes.txt; echo ok > made && cat made; touch `+outside+`/x; touch /etc/cordon-ll; echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t"; bash -c 'exec 3<>/dev/tcp/127.0.0.1/9' ; echo end`,
		"--backend", "landlock", "--net", "deny")
	all := r.all()
	for _, bad := range []string{"LL-SECRET-5c1", "SIBLING-SECRET-7f3a"} {
		if strings.Contains(all, bad) {
			t.Errorf("%s leaked: %s", bad, r)
		}
	}
	for _, want := range []string{"ok\n", "tmp\n", "end\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q: %s", want, r)
		}
	}
	for _, want := range []string{"cordon: degraded: no pid namespace", "Permission denied", "socket: Operation not permitted"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q: %s", want, r)
		}
	}
	if exists(filepath.Join(outside, "x")) || exists("/etc/cordon-ll") {
		t.Error("the Landlock backend let a write outside through")
	}
	// Without a pid namespace host processes are visible, but not their
	// environments (Landlock's ptrace scoping).
	host := exec.Command("sleep", "30")
	host.Env = []string{"HOST_SECRET_ENV=LL-ENV-8e7"}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = host.Process.Kill(); _ = host.Wait() }()
	env := e.sh(fmt.Sprintf("cat /proc/%d/environ; echo rc=$?", host.Process.Pid), "--backend", "landlock")
	if strings.Contains(env.all(), "LL-ENV-8e7") || !strings.Contains(env.stderr, "Permission denied") {
		t.Errorf("a host process's environment was readable: %s", env)
	}
	// No capabilities, also when cordon runs as root (then the bounding set
	// is emptied too; a normal user's cannot be, and no_new_privs keeps
	// setuid and file capabilities from refilling it).
	sets := "Eff|Prm|Amb"
	if isRoot() {
		sets += "|Bnd"
	}
	if c := e.sh("grep -E '^Cap("+sets+"):' /proc/self/status", "--backend", "landlock"); strings.Count(c.stdout, "0000000000000000") != strings.Count(sets, "|")+1 {
		t.Errorf("capabilities left on the Landlock backend: %s", c)
	}
	if s := e.sh("true", "--backend", "landlock", "--mode", "strict"); s.code != 125 || !strings.Contains(s.stderr, "strict mode refuses") {
		t.Errorf("strict on landlock: %s", s)
	}
}

// TestAutoFallsBackToLandlock simulates a host without user namespaces by
// running cordon inside bwrap --disable-userns: --backend auto must pick
// the Landlock-only backend, say what is degraded, and still confine.
func TestAutoFallsBackToLandlock(t *testing.T) {
	e := newEnv(t)
	requireLandlock(t)
	writeFile(t, filepath.Join(e.home, ".ssh", "id_rsa"), "AUTO-SECRET-9d2")
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	args := []string{"--unshare-user", "--disable-userns", "--die-with-parent",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--bind", e.root, e.root, "--ro-bind", cordonBin, cordonBin,
		"--chdir", e.ws, "--",
		cordonBin, "run", "--", "sh", "-c", `cat "$HOME/.ssh/id_rsa"; echo auto > made; touch /etc/cordon-auto; echo done`}
	cmd := exec.CommandContext(ctx, "/usr/bin/bwrap", args...)
	cmd.Env = e.environ()
	out, err := cmd.CombinedOutput()
	s := string(out)
	if err != nil && !strings.Contains(s, "done") {
		t.Fatalf("cordon inside bwrap --disable-userns: %v\n%s", err, s)
	}
	if !strings.Contains(s, "cordon: degraded: no pid namespace") {
		t.Fatalf("auto did not fall back to the Landlock backend (or did not say so):\n%s", s)
	}
	if strings.Contains(s, "AUTO-SECRET-9d2") || !strings.Contains(s, "done") {
		t.Fatalf("output:\n%s", s)
	}
	if readFile(t, filepath.Join(e.ws, "made")) != "auto\n" || exists("/etc/cordon-auto") {
		t.Fatal("writes were not confined as expected")
	}
}

// TestLandlockBackendLeavesNothing: without a pid namespace, cordon run (a
// child subreaper that owns its children) still kills what is left of the
// command's tree when the command ends or times out, processes that left
// its process group with setsid included.
func TestLandlockBackendLeavesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	requireLandlock(t)
	for _, tc := range []struct {
		name   string
		script func(a, b string) string
		flags  []string
		code   int
	}{
		{"command ends", func(a, b string) string {
			return fmt.Sprintf(`setsid sleep %s & nohup sleep %s >/dev/null 2>&1 & echo started`, a, b)
		}, nil, 0},
		{"timeout", func(a, b string) string { return fmt.Sprintf(`setsid sleep %s & echo started; exec sleep %s`, a, b) }, []string{"--timeout", "1s"}, 124},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := uniqueSleep(311), uniqueSleep(312)
			markers := []string{"sleep " + a, "sleep " + b}
			t.Cleanup(func() { killLeftovers(waitNoProcs(markers, 0)) })
			args := append([]string{"run", "--backend", "landlock"}, tc.flags...)
			r := e.run(append(args, "--", "sh", "-c", tc.script(a, b))...)
			if r.code != tc.code || !strings.Contains(r.stdout, "started") {
				t.Fatalf("want exit %d: %s", tc.code, r)
			}
			if left := waitNoProcs(markers, 3*time.Second); len(left) > 0 {
				t.Errorf("processes of the command survived cordon run on the Landlock backend: %v", left)
			}
		})
	}
}
