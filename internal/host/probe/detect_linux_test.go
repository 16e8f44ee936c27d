package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/enforce/landlock"
	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// childEnv makes the test binary act as a probe child: TestMain runs
// Detect (after preparing the scenario named by the value) and prints the
// report as JSON instead of running tests.
const childEnv = "CORDON_PROBE_TEST_CHILD"

func TestMain(m *testing.M) {
	if scenario := os.Getenv(childEnv); scenario != "" {
		os.Exit(runChild(scenario))
	}
	os.Exit(m.Run())
}

func runChild(scenario string) int {
	switch scenario {
	case "plain":
	case "seccomp":
		if err := installUserNSBlocker(); err != nil {
			fmt.Fprintln(os.Stderr, "install seccomp filter:", err)
			return 3
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown scenario", scenario)
		return 2
	}
	if err := json.NewEncoder(os.Stdout).Encode(Detect(Options{})); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// installUserNSBlocker installs, on all threads, a seccomp filter like a
// container runtime's default profile: clone and unshare with CLONE_NEWUSER
// fail with EPERM, clone3 with ENOSYS (so libc falls back to clone).
func installUserNSBlocker() error {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return fmt.Errorf("no test filter for %s", runtime.GOARCH)
	}
	const (
		ldAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		enosy = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	prog := []unix.SockFilter{
		/* 0 */ {Code: ldAbs, K: 4}, // seccomp_data.arch
		/* 1 */ {Code: jeq, K: arch, Jt: 1, Jf: 0},
		/* 2 */ {Code: ret, K: allow},
		/* 3 */ {Code: ldAbs, K: 0}, // seccomp_data.nr
		/* 4 */ {Code: jeq, K: unix.SYS_CLONE3, Jt: 0, Jf: 1},
		/* 5 */ {Code: ret, K: enosy},
		/* 6 */ {Code: jeq, K: unix.SYS_CLONE, Jt: 2, Jf: 0},
		/* 7 */ {Code: jeq, K: unix.SYS_UNSHARE, Jt: 1, Jf: 0},
		/* 8 */ {Code: ret, K: allow},
		/* 9 */ {Code: ldAbs, K: 16}, // low half of args[0] (little endian)
		/* 10 */ {Code: jset, K: unix.CLONE_NEWUSER, Jt: 0, Jf: 1},
		/* 11 */ {Code: ret, K: eperm},
		/* 12 */ {Code: ret, K: allow},
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER): %w", errno)
	}
	return nil
}

// runProbeChild runs this test binary as a probe child, optionally inside
// wrapper (e.g. a bwrap command line ending in "--"), and decodes its report.
func runProbeChild(t *testing.T, scenario string, wrapper ...string) *Report {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append([]string{}, wrapper...), exe)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"="+scenario)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("probe child %q: %v\nstderr: %s", argv, err, stderr.String())
	}
	var r Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("decode child report: %v\n%s", err, stdout.String())
	}
	return &r
}

// hostUserNSWorks is the test's own oracle, independent of Detect: run
// bwrap with a user namespace directly.
func hostUserNSWorks(t *testing.T) (bool, string) {
	t.Helper()
	p, err := FindBwrap("")
	if err != nil {
		return false, err.Error()
	}
	out, err := exec.Command(p, "--unshare-user", "--ro-bind", "/", "/", "--", "/bin/true").CombinedOutput()
	if err != nil {
		return false, fmt.Sprintf("%v: %s", err, out)
	}
	return true, ""
}

// skipUnlessCI skips (or, with CI=true, fails) a test that needs a host
// feature this machine lacks.
func skipUnlessCI(t *testing.T, format string, args ...any) {
	t.Helper()
	testenv.SkipOrFail(t, format, args...)
}

func TestDetectHost(t *testing.T) {
	start := time.Now()
	r := Detect(Options{})
	elapsed := time.Since(start)
	t.Logf("Detect took %v (root=%v)", elapsed, r.Root)
	if elapsed > 2*time.Second {
		t.Errorf("Detect took %v, want well under a second", elapsed)
	}

	if r.OS != "linux" || r.Arch != runtime.GOARCH {
		t.Errorf("OS/Arch = %s/%s", r.OS, r.Arch)
	}
	osrelease, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	if r.Kernel == "" || r.Kernel != strings.TrimSpace(string(osrelease)) {
		t.Errorf("Kernel = %q, /proc says %q", r.Kernel, osrelease)
	}
	if r.Root != (os.Geteuid() == 0) {
		t.Errorf("Root = %v", r.Root)
	}
	if !r.Seccomp.Available || (r.Seccomp.Mode != 0 && r.Seccomp.Mode != 2) {
		t.Errorf("Seccomp = %+v", r.Seccomp)
	}
	if r.Cgroup.Version == 2 && r.Cgroup.Path == "" && r.Cgroup.Reason == "" {
		t.Errorf("cgroup v2 without path or reason: %+v", r.Cgroup)
	}
	if !r.Cgroup.Delegated && r.Cgroup.Reason == "" {
		t.Errorf("cgroup not delegated and no reason: %+v", r.Cgroup)
	}
	switch m := r.Limits; {
	case m.Mechanism == MechanismCgroup2 && !r.Cgroup.Delegated:
		t.Errorf("limits in a cgroup v2 that is not delegated: %+v, %+v", m, r.Cgroup)
	case m.Mechanism == MechanismRlimits && m.Reason == "":
		t.Errorf("rlimits without a reason: %+v", m)
	case m.Mechanism != MechanismCgroup2 && m.Mechanism != MechanismCgroup1 && m.Mechanism != MechanismRlimits:
		t.Errorf("limits mechanism %q", m.Mechanism)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", text.String())

	t.Run("landlock", func(t *testing.T) {
		if !r.Landlock.Available {
			if r.Landlock.Reason == "" || r.Landlock.ABI != 0 {
				t.Errorf("unavailable Landlock needs ABI 0 and a reason: %+v", r.Landlock)
			}
			skipUnlessCI(t, "kernel %s lacks Landlock: %s", r.Kernel, r.Landlock.Reason)
		}
		if r.Landlock.ABI < 1 {
			t.Errorf("Landlock = %+v", r.Landlock)
		}
	})

	t.Run("userns and bwrap", func(t *testing.T) {
		ok, why := hostUserNSWorks(t)
		if !ok {
			if r.UserNS.Available && r.Bwrap.Works {
				t.Errorf("Detect says bwrap works but running it failed: %s", why)
			}
			skipUnlessCI(t, "this host cannot run bwrap with a user namespace: %s", why)
		}
		if !r.UserNS.Available || r.UserNS.Reason != "" || r.UserNS.Errno != "" {
			t.Errorf("UserNS = %+v", r.UserNS)
		}
		if !r.Bwrap.Found || !r.Bwrap.Works || r.Bwrap.Path == "" || r.Bwrap.Version == "" {
			t.Errorf("Bwrap = %+v", r.Bwrap)
		}
		if r.AutoBackend != backend.Bwrap {
			t.Errorf("AutoBackend = %q, want bwrap", r.AutoBackend)
		}
		for _, rm := range r.Remedies {
			if rm.Feature == "user namespaces" || rm.Feature == "bubblewrap" {
				t.Errorf("unexpected remedy %+v", rm)
			}
		}
	})

	t.Run("json", func(t *testing.T) {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"os", "arch", "kernel", "landlock", "seccomp", "userns", "bwrap", "cgroup", "no_new_privs_inherited", "limits", "systemd", "auto_backend", "remedies"} {
			if _, ok := m[k]; !ok {
				t.Errorf("JSON lacks key %q: %s", k, data)
			}
		}
		for obj, keys := range map[string][]string{
			"landlock": {"abi", "available"},
			"seccomp":  {"available", "mode"},
			"userns":   {"available", "max_user_namespaces"},
			"bwrap":    {"found", "works"},
			"cgroup":   {"version", "delegated"},
			"limits":   {"mechanism"},
		} {
			sub, _ := m[obj].(map[string]any)
			for _, k := range keys {
				if _, ok := sub[k]; !ok {
					t.Errorf("JSON %s lacks %q: %s", obj, k, data)
				}
			}
		}
	})
}

// TestDetectRestricted runs the probe in places where user namespaces
// cannot be created, as in a nested sandbox or a container with a seccomp
// profile, and checks the report says so and why.
func TestDetectRestricted(t *testing.T) {
	if ok, why := hostUserNSWorks(t); !ok {
		skipUnlessCI(t, "needs a host where bwrap and user namespaces work: %s", why)
	}
	bwrap, _ := FindBwrap("")
	tests := []struct {
		name       string
		scenario   string
		wrapper    []string
		errno      string
		reason     string // substring of UserNS.Reason
		bwrapFound bool
		seccomp    int
		remedy     string // substring of the user namespaces remedy's fix
	}{
		{
			name:     "nested bwrap --disable-userns",
			scenario: "plain",
			wrapper: []string{bwrap, "--unshare-user", "--disable-userns", "--ro-bind", "/", "/",
				"--dev", "/dev", "--proc", "/proc", "--"},
			errno:      "ENOSPC",
			reason:     "limit",
			bwrapFound: true,
			seccomp:    0,
			remedy:     "outside the enclosing sandbox",
		},
		{
			name:       "container-style seccomp filter",
			scenario:   "seccomp",
			errno:      "EPERM",
			reason:     "seccomp",
			bwrapFound: true,
			seccomp:    2,
			remedy:     "seccomp",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.scenario == "seccomp" && runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
				t.Skipf("no test seccomp filter for %s", runtime.GOARCH)
			}
			r := runProbeChild(t, tc.scenario, tc.wrapper...)
			if r.UserNS.Available || r.UserNS.Reason == "" {
				t.Fatalf("UserNS = %+v, want unavailable with a reason", r.UserNS)
			}
			if r.UserNS.Errno != tc.errno || !strings.Contains(r.UserNS.Reason, tc.reason) {
				t.Errorf("UserNS = %+v, want errno %s and reason containing %q", r.UserNS, tc.errno, tc.reason)
			}
			if r.Bwrap.Found != tc.bwrapFound || r.Bwrap.Works || r.Bwrap.Reason == "" {
				t.Errorf("Bwrap = %+v, want found=%v, not working, with a reason", r.Bwrap, tc.bwrapFound)
			}
			if r.Seccomp.Mode != tc.seccomp {
				t.Errorf("Seccomp.Mode = %d, want %d", r.Seccomp.Mode, tc.seccomp)
			}
			want := backend.Landlock
			if !r.Landlock.Available {
				want = backend.None
			}
			if r.AutoBackend != want {
				t.Errorf("AutoBackend = %q, want %q", r.AutoBackend, want)
			}
			var fix string
			for _, rm := range r.Remedies {
				if rm.Feature == "user namespaces" {
					fix = rm.Fix
				}
			}
			if !strings.Contains(fix, tc.remedy) || !strings.Contains(fix, "--backend landlock") {
				t.Errorf("user namespaces remedy %q, want it to mention %q and --backend landlock", fix, tc.remedy)
			}
			var text bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "user namespaces") || !strings.Contains(text.String(), StatusMissing) {
				t.Errorf("text report lacks the missing user namespaces line:\n%s", text.String())
			}
			t.Logf("report:\n%s", text.String())
		})
	}
}

// TestDetectBwrapOption checks Detect uses the configured bwrap and reports
// its failure, and that $PATH never supplies bwrap.
func TestDetectBwrapOption(t *testing.T) {
	dir := t.TempDir()
	fake := writeScript(t, dir, "bwrap", "#!/bin/sh\necho 'fake bwrap refuses' >&2\nexit 1\n")
	t.Setenv("PATH", dir)

	r := Detect(Options{BwrapPath: fake})
	if !r.Bwrap.Found || r.Bwrap.Works || r.Bwrap.Path != fake || !strings.Contains(r.Bwrap.Reason, "fake bwrap refuses") {
		t.Errorf("configured failing bwrap: %+v", r.Bwrap)
	}
	if r.AutoBackend == backend.Bwrap {
		t.Errorf("AutoBackend = bwrap with a broken bwrap")
	}
	found := false
	for _, rm := range r.Remedies {
		found = found || rm.Feature == "bubblewrap"
	}
	if !found {
		t.Errorf("no bubblewrap remedy: %+v", r.Remedies)
	}

	r = Detect(Options{})
	if r.Bwrap.Path == fake {
		t.Errorf("Detect took bwrap from $PATH: %+v", r.Bwrap)
	}
	if r.Bwrap.Found && !strings.HasPrefix(r.Bwrap.Path, "/usr/bin/") && !strings.HasPrefix(r.Bwrap.Path, "/usr/local/bin/") && !strings.HasPrefix(r.Bwrap.Path, "/bin/") {
		t.Errorf("Detect found bwrap outside the fixed locations: %+v", r.Bwrap)
	}
}

func TestExplainUserNS(t *testing.T) {
	yes, no := true, false
	perm := fmt.Errorf("create user namespace: %w", &os.PathError{Op: "fork/exec", Path: "/bin/true", Err: syscall.EPERM})
	tests := []struct {
		name   string
		err    error
		userns UserNSInfo
		root   bool
		mode   int
		want   string
		fix    string
	}{
		{"apparmor", perm, UserNSInfo{MaxUserNamespaces: 100, AppArmorRestrict: &yes}, false, 0,
			"EPERM: kernel.apparmor_restrict_unprivileged_userns=1", "apparmor_restrict_unprivileged_userns=0"},
		{"apparmor ignored for root", perm, UserNSInfo{MaxUserNamespaces: 100, AppArmorRestrict: &yes}, true, 0,
			"EPERM: the kernel refused", "enable unprivileged user namespaces"},
		{"max zero", syscall.ENOSPC, UserNSInfo{MaxUserNamespaces: 0, AppArmorRestrict: &no}, false, 0,
			"user.max_user_namespaces=0", "sudo sysctl -w user.max_user_namespaces="},
		{"debian knob", perm, UserNSInfo{MaxUserNamespaces: 100, UnprivilegedClone: &no}, false, 0,
			"kernel.unprivileged_userns_clone=0", "unprivileged_userns_clone=1"},
		{"seccomp", perm, UserNSInfo{MaxUserNamespaces: 100}, false, 2,
			"seccomp filter", "seccomp=unconfined"},
		{"nested", syscall.ENOSPC, UserNSInfo{MaxUserNamespaces: 100}, false, 0,
			"ENOSPC: user namespace limit reached", "outside the enclosing sandbox"},
		{"no kernel support", syscall.EINVAL, UserNSInfo{MaxUserNamespaces: -1}, false, 0,
			"CONFIG_USER_NS", "--backend landlock"},
		{"not an errno", errors.New("true(1) not found"), UserNSInfo{MaxUserNamespaces: 100}, false, 0,
			"true(1) not found", "--backend landlock"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{OS: "linux", Root: tc.root, UserNS: tc.userns, Seccomp: SeccompInfo{Available: true, Mode: tc.mode}}
			var errno syscall.Errno
			if errors.As(tc.err, &errno) {
				r.UserNS.Errno = errnoName(errno)
			}
			r.UserNS.Reason = explainUserNS(tc.err, r)
			if !strings.Contains(r.UserNS.Reason, tc.want) {
				t.Errorf("reason %q, want it to contain %q", r.UserNS.Reason, tc.want)
			}
			if fix := usernsRemedy(r).Fix; !strings.Contains(fix, tc.fix) {
				t.Errorf("fix %q, want it to contain %q", fix, tc.fix)
			}
		})
	}
}

func TestExplainLandlock(t *testing.T) {
	tests := []struct {
		errno syscall.Errno
		want  string
		fix   string
	}{
		{unix.ENOSYS, "kernel too old", "upgrade to Linux 5.13"},
		{unix.EOPNOTSUPP, "disabled at boot", "lsm="},
		{unix.EPERM, "seccomp", "seccomp profile"},
	}
	for _, tc := range tests {
		t.Run(errnoName(tc.errno), func(t *testing.T) {
			r := &Report{OS: "linux", Landlock: LandlockInfo{Errno: errnoName(tc.errno), Reason: explainLandlock(tc.errno)}}
			if !strings.Contains(r.Landlock.Reason, tc.want) {
				t.Errorf("reason %q, want %q", r.Landlock.Reason, tc.want)
			}
			var fix string
			for _, rm := range remedies(r) {
				if rm.Feature == "landlock" {
					fix = rm.Fix
				}
			}
			if !strings.Contains(fix, tc.fix) {
				t.Errorf("fix %q, want %q", fix, tc.fix)
			}
		})
	}
}

func TestLandlockLimits(t *testing.T) {
	tests := []struct {
		abi  int
		want []string
	}{
		{0, nil},
		{1, []string{"ABI 2", "ABI 3", "TCP port rules", "scoping"}},
		{3, []string{"TCP port rules", "scoping"}},
		{4, []string{"scoping"}},
		{6, nil},
		{7, nil},
	}
	for _, tc := range tests {
		got := landlock.Lacks(tc.abi)
		if (got == "") != (len(tc.want) == 0) {
			t.Errorf("landlock.Lacks(%d) = %q", tc.abi, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("landlock.Lacks(%d) = %q, want %q", tc.abi, got, w)
			}
		}
	}
}

func TestParseCgroupFiles(t *testing.T) {
	mi := `22 1 0:21 / /proc rw,nosuid - proc proc rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 /sub /sys/fs/cgroup/my\040dir rw,relatime shared:5 - cgroup2 cgroup2 rw
`
	// The probe reads the table with the limits package's parser, the
	// one a run uses.
	got := limits.CgroupMounts([]byte(mi))
	want := []limits.CgroupMount{
		{Root: "/", Point: "/sys/fs/cgroup/memory", FSType: "cgroup", Opts: []string{"rw", "memory"}},
		{Root: "/sub", Point: "/sys/fs/cgroup/my dir", FSType: "cgroup2", Opts: []string{"rw"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("CgroupMounts = %+v, want %+v", got, want)
	}

	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"0::/user.slice/user-1000.slice/session-2.scope\n", "/user.slice/user-1000.slice/session-2.scope", true},
		{"12:pids:/x\n1:name=systemd:/y\n0::/\n", "/", true},
		{"4:memory:/a\n", "", false},
	} {
		p, ok := limits.SelfCgroups([]byte(tc.in))[""]
		if p != tc.want || ok != tc.ok {
			t.Errorf("SelfCgroups(%q)[\"\"] = %q, %v", tc.in, p, ok)
		}
	}
}

// BenchmarkDetect measures a full probe, including the processes it starts.
func BenchmarkDetect(b *testing.B) {
	for b.Loop() {
		Detect(Options{})
	}
}

// TestCgroupFrom checks the delegation rules against a directory laid out
// like a cgroup v2 tree (a real delegated cgroup is not available on every
// test host).
func TestCgroupFrom(t *testing.T) {
	root := t.TempDir()
	mk := func(rel, controllers, subtree string, mode os.FileMode) {
		dir := filepath.Join(root, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string]string{"cgroup.controllers": controllers, "cgroup.subtree_control": subtree, "cgroup.procs": ""} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) }) // let TempDir remove it
	}
	mk("user.slice/me", "cpuset cpu io memory pids\n", "memory pids\n", 0o755)
	mk("limited", "cpu io\n", "\n", 0o755)
	mk("readonly", "cpu memory pids\n", "\n", 0o555)

	v2 := fmt.Sprintf("30 23 0:26 / %s rw,nosuid - cgroup2 cgroup2 rw\n", root)
	v1 := "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
	root0 := os.Geteuid() == 0
	tests := []struct {
		name, mountinfo, cgroup string
		version                 int
		delegated, hybrid       bool
		path, reason            string
	}{
		{"delegated", v2, "0::/user.slice/me\n", 2, true, false, root + "/user.slice/me", ""},
		{"missing controllers", v2, "0::/limited\n", 2, false, false, root + "/limited", "controllers memory, pids not available"},
		{"hybrid", v2 + v1, "4:memory:/x\n0::/limited\n", 2, false, true, root + "/limited", "hybrid"},
		{"read-only dir", v2, "0::/readonly\n", 2, root0, false, root + "/readonly", map[bool]string{true: "", false: "not writable by us (EACCES)"}[root0]},
		{"v1 only", v1, "4:memory:/x\n", 1, false, false, "", "only cgroup v1"},
		{"no cgroupfs", "", "", 0, false, false, "", "no cgroup filesystem"},
		{"outside the mount", strings.Replace(v2, " / ", " /sub ", 1), "0::/other\n", 2, false, false, "", "outside the mounted cgroup v2 tree"},
		{"no v2 membership", v2, "4:memory:/x\n", 2, false, false, "", "no cgroup v2 membership"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := cgroupFrom([]byte(tc.mountinfo), []byte(tc.cgroup))
			if got.Version != tc.version || got.Delegated != tc.delegated || got.Hybrid != tc.hybrid || got.Path != tc.path {
				t.Errorf("cgroupFrom = %+v, want version %d delegated %v hybrid %v path %q", got, tc.version, tc.delegated, tc.hybrid, tc.path)
			}
			if !strings.Contains(got.Reason, tc.reason) || (tc.reason == "") != (got.Reason == "") {
				t.Errorf("reason %q, want %q", got.Reason, tc.reason)
			}
		})
	}
}

// TestProcMasked: a mount over part of /proc (as container runtimes mask
// /proc/kcore, /proc/keys or /proc/sys) is seen; the host's own /proc, its
// sub-mounts elsewhere and binfmt_misc are not.
func TestProcMasked(t *testing.T) {
	const host = `22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
23 22 0:22 / /proc/sys/fs/binfmt_misc rw,relatime shared:13 - autofs systemd-1 rw
24 1 0:5 / /dev rw,nosuid shared:2 - devtmpfs udev rw
25 1 8:1 / /processes rw - ext4 /dev/sda1 rw
`
	for _, tc := range []struct {
		name string
		mi   string
		want bool
	}{
		{"host", host, false},
		{"empty", "", false},
		{"docker kcore", host + "400 22 0:5 /null /proc/kcore rw,nosuid - devtmpfs udev rw\n", true},
		{"docker acpi tmpfs", host + "401 22 0:60 / /proc/acpi ro,relatime - tmpfs tmpfs ro\n", true},
		{"read-only sys", host + "402 22 0:21 /sys /proc/sys ro,nosuid - proc proc rw\n", true},
		{"short line", "1 2 3\n", false},
	} {
		if got := ProcMasked([]byte(tc.mi)); got != tc.want {
			t.Errorf("%s: ProcMasked = %v, want %v", tc.name, got, tc.want)
		}
	}
}
