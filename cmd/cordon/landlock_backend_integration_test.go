//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testenv"
	"golang.org/x/sys/unix"
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
	t.Parallel()
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

// TestAutoFallsBackToLandlock runs cordon where bubblewrap cannot build
// its sandbox, as in a container (docs/containers.md): inside bwrap
// --disable-userns (a nested namespace is refused, as in a pod whose
// runtime forbids nesting), inside bwrap with a seccomp profile like
// Docker's and containerd's default (clone and unshare with a namespace
// flag, setns, mount and pivot_root refused with EPERM, clone3 with ENOSYS),
// and inside bwrap with parts of /proc masked (no new /proc can be
// mounted in a user namespace). --backend auto must pick the Landlock-only backend,
// cordon status must say why, the run must print its one degraded line,
// and the guarantees docs/containers.md lists must hold: secrets hidden,
// writes outside the workspace refused, the network denied, a planted
// hook disarmed.
func TestAutoFallsBackToLandlock(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	requireLandlock(t)
	for _, tc := range []struct {
		name   string
		flags  []string
		filter []unix.SockFilter
		reason string // in cordon status's user namespaces line
		// direct: auto sees it at once (a seccomp filter on cordon, a
		// mount over /proc) and never tries bwrap first.
		direct bool
	}{
		{"disable-userns", []string{"--disable-userns"}, nil, "user namespace", false},
		{"docker-default-seccomp", nil, dockerLikeFilter(t), "seccomp filter on this process", true},
		// Parts of /proc masked as Docker and Kubernetes (procMount
		// Default) do: namespaces can be made, a new /proc cannot.
		{"masked-proc", []string{"--ro-bind", "/dev/null", "/proc/timer_list", "--ro-bind", "/proc/sys", "/proc/sys"}, nil, "a container that masks parts of /proc", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			writeFile(t, filepath.Join(e.home, ".ssh", "id_rsa"), "AUTO-SECRET-9d2")
			if out, err := exec.Command("git", "init", "-q", e.ws).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v: %s", err, out)
			}
			ln := testenv.Listen(t)
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					_, _ = c.Write([]byte("HOST-SERVER-REACHED\n"))
					c.Close()
				}
			}()
			port := ln.Addr().(*net.TCPAddr).Port
			inside := func(args ...string) runResult {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
				defer cancel()
				bw := []string{"--unshare-user", "--die-with-parent",
					"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
					"--bind", e.root, e.root, "--ro-bind", cordonBin, cordonBin,
					"--chdir", e.ws}
				if isRoot() {
					// A container's root: Docker's default capabilities,
					// CAP_SYS_ADMIN not among them.
					bw = append(bw, "--cap-drop", "ALL")
					for _, c := range []string{"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
						"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"} {
						bw = append(bw, "--cap-add", "CAP_"+c)
					}
				}
				bw = append(bw, tc.flags...)
				var extra []*os.File
				if tc.filter != nil {
					extra = append(extra, bpfFile(t, tc.filter))
					bw = append(bw, "--seccomp", "3")
				}
				cmd := exec.CommandContext(ctx, "/usr/bin/bwrap", append(append(bw, "--", cordonBin), args...)...)
				cmd.Env = e.environ()
				cmd.ExtraFiles = extra
				var stdout, stderr strings.Builder
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				r := runResult{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
				if err != nil && r.code < 0 {
					t.Fatalf("cordon inside bwrap: %v\n%s", err, r)
				}
				return r
			}
			st := inside("status")
			if !strings.Contains(st.stdout, "backend (auto)   landlock") || !strings.Contains(st.stdout, tc.reason) {
				t.Errorf("cordon status inside: want the landlock backend and %q:\n%s", tc.reason, st)
			}
			r := inside("run", "--net", "deny", "--", "sh", "-c", `cat "$HOME/.ssh/id_rsa"; echo auto > made; touch /etc/cordon-auto; `+
				`echo planted > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; `+
				fmt.Sprintf("curl -sS -m 5 telnet://127.0.0.1:%d </dev/null; ", port)+`echo done`)
			if tc.direct && strings.Contains(r.stderr, "sandbox setup failed") {
				t.Errorf("auto tried bwrap first: %s", r)
			}
			if strings.Count(r.stderr, "cordon: degraded: no pid namespace") != 1 {
				t.Errorf("want one degraded line naming the missing pid namespace: %s", r)
			}
			seen := map[string]bool{}
			for _, line := range strings.Split(r.stderr, "\n") {
				if strings.HasPrefix(line, "cordon: ") && seen[line] {
					t.Errorf("said twice: %s\n%s", line, r)
				}
				seen[line] = true
			}
			if !strings.Contains(r.stdout, "done") {
				t.Fatalf("the command did not run to its end: %s", r)
			}
			for _, leak := range []string{"AUTO-SECRET-9d2", "HOST-SERVER-REACHED"} {
				if strings.Contains(r.all(), leak) {
					t.Errorf("%s inside a container-like host: %s", leak, r)
				}
			}
			if readFile(t, filepath.Join(e.ws, "made")) != "auto\n" || exists("/etc/cordon-auto") {
				t.Errorf("writes were not confined as expected: %s", r)
			}
			if fi, err := os.Stat(filepath.Join(e.ws, ".git", "hooks", "pre-commit")); err == nil && fi.Mode()&0o111 != 0 {
				t.Errorf("a hook planted inside is executable on the host: %s", r)
			}
		})
	}
}

// dockerLikeFilter is a seccomp program that refuses what the default
// profile of Docker and containerd refuses a container without
// CAP_SYS_ADMIN and that bubblewrap needs: clone with any namespace flag,
// unshare, setns, mount and pivot_root (EPERM), and clone3 (ENOSYS, so
// that callers fall back to clone).
func dockerLikeFilter(t *testing.T) []unix.SockFilter {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		t.Skipf("no seccomp architecture for %s in this test", runtime.GOARCH)
	}
	const (
		nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
			unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	refused := []uint32{unix.SYS_UNSHARE, unix.SYS_SETNS, unix.SYS_MOUNT, unix.SYS_PIVOT_ROOT}
	// Layout: arch check, the refused calls, clone3, clone's flags, then
	// the three answers: allow, EPERM, ENOSYS.
	n := 2 + 1 + len(refused) + 1 + 1 + 2
	allow, eperm, enosys := n, n+1, n+2
	var f []unix.SockFilter
	jump := func(code uint16, k uint32, to int) {
		f = append(f, unix.SockFilter{Code: code, K: k, Jt: uint8(to - len(f) - 1)})
	}
	f = append(f, unix.SockFilter{Code: ld, K: 4}) // arch
	f = append(f, unix.SockFilter{Code: jeq, K: arch, Jt: 0, Jf: uint8(allow - 2)})
	f = append(f, unix.SockFilter{Code: ld, K: 0}) // syscall number
	for _, nr := range refused {
		jump(jeq, uint32(nr), eperm)
	}
	jump(jeq, unix.SYS_CLONE3, enosys)
	f = append(f, unix.SockFilter{Code: jeq, K: unix.SYS_CLONE, Jt: 0, Jf: uint8(allow - len(f) - 1)})
	f = append(f, unix.SockFilter{Code: ld, K: 16}) // clone's flags (args[0], low half)
	jump(jset, nsFlags, eperm)
	if len(f) != n {
		t.Fatalf("filter layout: %d instructions before the answers, want %d", len(f), n)
	}
	f = append(f,
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)})
	return f
}

// bpfFile is a file holding prog as bubblewrap's --seccomp reads it: the
// instructions, back to back.
func bpfFile(t *testing.T, prog []unix.SockFilter) *os.File {
	f, err := os.CreateTemp(t.TempDir(), "seccomp-*.bpf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	b := make([]byte, 0, 8*len(prog))
	for _, ins := range prog {
		b = binary.NativeEndian.AppendUint16(b, ins.Code)
		b = append(b, ins.Jt, ins.Jf)
		b = binary.NativeEndian.AppendUint32(b, ins.K)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	return f
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
