//go:build unix

package probe

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
)

// writeScript creates an executable file name in dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFindBwrapConfigured(t *testing.T) {
	dir := t.TempDir()
	exe := writeScript(t, dir, "bwrap", "#!/bin/sh\nexit 0\n")
	noexec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noexec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		configured string
		want       string
		errHas     []string
	}{
		{"absolute", exe, exe, nil},
		{"unclean absolute", filepath.Join(dir, "sub", "..", "bwrap"), exe, nil},
		{"relative", "bin/bwrap", "", []string{"absolute"}},
		{"bare name", "bwrap", "", []string{"absolute"}},
		{"missing", filepath.Join(dir, "nope"), "", []string{"no such file", "apt-get install bubblewrap"}},
		{"directory", dir, "", []string{"not a regular file"}},
		{"not executable", noexec, "", []string{"not executable"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FindBwrap(tc.configured)
			if tc.errHas == nil {
				if err != nil || got != tc.want {
					t.Fatalf("FindBwrap(%q) = %q, %v; want %q", tc.configured, got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("FindBwrap(%q) = %q, want an error", tc.configured, got)
			}
			if !errors.Is(err, ErrBwrapNotFound) {
				t.Errorf("error %v does not wrap ErrBwrapNotFound", err)
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

func TestFindBwrapSearch(t *testing.T) {
	// A bwrap on $PATH must never be chosen.
	pathDir := t.TempDir()
	fake := writeScript(t, pathDir, "bwrap", "#!/bin/sh\nexit 0\n")
	t.Setenv("PATH", pathDir)

	t.Run("fixed locations", func(t *testing.T) {
		got, err := FindBwrap("")
		if err != nil {
			if !strings.Contains(err.Error(), "apt-get install bubblewrap") {
				t.Errorf("error %q lacks the install hint", err)
			}
			return
		}
		if got == fake || !slices.Contains(bwrapSearchPaths, got) {
			t.Errorf("FindBwrap(\"\") = %q, want one of %v", got, bwrapSearchPaths)
		}
	})

	t.Run("none installed", func(t *testing.T) {
		empty := t.TempDir()
		old := bwrapSearchPaths
		t.Cleanup(func() { bwrapSearchPaths = old })
		bwrapSearchPaths = []string{filepath.Join(empty, "a", "bwrap"), filepath.Join(empty, "b", "bwrap")}

		got, err := FindBwrap("")
		if err == nil {
			t.Fatalf("FindBwrap(\"\") = %q, want an error", got)
		}
		if !errors.Is(err, ErrBwrapNotFound) {
			t.Errorf("error %v does not wrap ErrBwrapNotFound", err)
		}
		want := "bubblewrap (bwrap) not found in " + filepath.Join(empty, "a") + ", " + filepath.Join(empty, "b") +
			": install it with `sudo apt-get install bubblewrap` (Debian/Ubuntu) or `sudo dnf install bubblewrap` (Fedora), or set sandbox.bwrap_path"
		if err.Error() != want {
			t.Errorf("error\n %q\nwant\n %q", err, want)
		}
	})

	t.Run("default message", func(t *testing.T) {
		old := bwrapSearchPaths
		t.Cleanup(func() { bwrapSearchPaths = old })
		dir := t.TempDir()
		bwrapSearchPaths = []string{filepath.Join(dir, "usr/bin/bwrap"), filepath.Join(dir, "usr/local/bin/bwrap"), filepath.Join(dir, "bin/bwrap")}
		_, err := FindBwrap("")
		if err == nil || !strings.Contains(err.Error(), "usr/bin, "+dir+"/usr/local/bin, "+dir+"/bin: install it with") {
			t.Errorf("error %v", err)
		}
	})
}

func TestChooseBackend(t *testing.T) {
	tests := []struct {
		name string
		r    Report
		want backend.Name
	}{
		{"all", Report{OS: "linux", UserNS: UserNSInfo{Available: true}, Bwrap: BwrapInfo{Found: true, Works: true}, Landlock: LandlockInfo{ABI: 6, Available: true}}, backend.Bwrap},
		{"bwrap without landlock", Report{OS: "linux", UserNS: UserNSInfo{Available: true}, Bwrap: BwrapInfo{Found: true, Works: true}}, backend.Bwrap},
		{"userns but bwrap broken", Report{OS: "linux", UserNS: UserNSInfo{Available: true}, Bwrap: BwrapInfo{Found: true}, Landlock: LandlockInfo{ABI: 1, Available: true}}, backend.Landlock},
		{"setuid bwrap without userns", Report{OS: "linux", Bwrap: BwrapInfo{Found: true, Works: true, Setuid: true}, Landlock: LandlockInfo{ABI: 3, Available: true}}, backend.Landlock},
		{"nothing", Report{OS: "linux"}, backend.None},
		{"mac", Report{OS: "darwin", Seatbelt: &SeatbeltInfo{Available: true}}, backend.Seatbelt},
		{"mac without sandbox-exec", Report{OS: "darwin", Seatbelt: &SeatbeltInfo{}}, backend.None},
		{"windows", Report{OS: "windows"}, backend.Job},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := chooseBackend(&tc.r); got != tc.want {
				t.Errorf("chooseBackend = %q, want %q", got, tc.want)
			}
		})
	}
}

// fullReport is a Linux host where everything works.
func fullReport() *Report {
	return &Report{
		OS: "linux", Arch: "amd64", Kernel: "6.12.0",
		Landlock: LandlockInfo{ABI: 6, Available: true},
		Seccomp:  SeccompInfo{Available: true},
		UserNS:   UserNSInfo{Available: true, MaxUserNamespaces: 1000},
		Bwrap:    BwrapInfo{Path: "/usr/bin/bwrap", Version: "0.11.0", Found: true, Works: true},
		Cgroup:   CgroupInfo{Version: 2, Delegated: true, Path: "/sys/fs/cgroup/user.slice/x"},
		Limits:   LimitsInfo{Mechanism: MechanismCgroup2},
	}
}

func TestWriteText(t *testing.T) {
	yes := true
	tests := []struct {
		name    string
		mutate  func(r *Report)
		lines   []string // each must appear on some line, in this form: name + status
		has     []string
		hasNot  []string
		backend backend.Name
	}{
		{
			name:    "everything works",
			mutate:  func(*Report) {},
			lines:   []string{"landlock ok", "seccomp ok", "user namespaces ok", "bubblewrap ok", "cgroups ok", "no_new_privs ok", "backend (auto) bwrap"},
			has:     []string{"kernel 6.12.0", "ABI 6", "/usr/bin/bwrap 0.11.0"},
			hasNot:  []string{"Remedies:"},
			backend: backend.Bwrap,
		},
		{
			name: "ubuntu 24.04 apparmor, no bwrap",
			mutate: func(r *Report) {
				r.UserNS = UserNSInfo{Errno: "EACCES", AppArmorRestrict: &yes, MaxUserNamespaces: 1000}
				r.UserNS.Reason = "EACCES: kernel.apparmor_restrict_unprivileged_userns=1 (AppArmor denies ...)"
				r.Bwrap = BwrapInfo{Reason: "bubblewrap (bwrap) not found"}
			},
			lines:   []string{"user namespaces missing", "bubblewrap missing", "landlock ok", "backend (auto) landlock"},
			has:     []string{"Remedies:", "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or install an AppArmor profile for bwrap", "sudo apt-get install bubblewrap", "bubblewrap: not installed"},
			backend: backend.Landlock,
		},
		{
			name: "old kernel, cgroup v1",
			mutate: func(r *Report) {
				r.Landlock = LandlockInfo{Errno: "ENOSYS", Reason: "ENOSYS: kernel too old"}
				r.Cgroup = CgroupInfo{Version: 1, Reason: "only cgroup v1 is mounted"}
				r.Limits = LimitsInfo{Mechanism: MechanismRlimits, Reason: "no usable cgroup: cgroup2: not mounted; cgroup1: no pids hierarchy"}
				r.UserNS = UserNSInfo{Errno: "EPERM", Reason: "EPERM: seccomp filter", MaxUserNamespaces: 100}
				r.Seccomp.Mode = 2
				r.Seccomp.Reason = "a seccomp filter is already installed"
				r.Bwrap.Works = false
				r.Bwrap.Reason = "bwrap: Creating new namespace failed: Operation not permitted"
			},
			lines:   []string{"landlock missing", "cgroups degraded", "user namespaces missing", "bubblewrap missing", "seccomp ok", "backend (auto) none"},
			has:     []string{"upgrade to Linux 5.13", "mount the cgroup v1 pids and memory hierarchies", "seccomp=unconfined", "fix user namespaces (see above)", "already installed"},
			hasNot:  []string{"systemd-run"},
			backend: backend.None,
		},
		{
			name: "old landlock ABI",
			mutate: func(r *Report) {
				r.Landlock = LandlockInfo{ABI: 3, Available: true, Reason: "ABI 3 lacks TCP port rules (ABI 4, Linux 6.7)"}
			},
			lines:   []string{"landlock degraded", "backend (auto) bwrap"},
			has:     []string{"TCP port rules", "upgrade to Linux 6.12"},
			backend: backend.Bwrap,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := fullReport()
			tc.mutate(r)
			r.AutoBackend = chooseBackend(r)
			r.Remedies = remedies(r)
			if r.AutoBackend != tc.backend {
				t.Errorf("AutoBackend = %q, want %q", r.AutoBackend, tc.backend)
			}
			var buf bytes.Buffer
			if err := r.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			var squeezed []string
			for line := range strings.SplitSeq(out, "\n") {
				squeezed = append(squeezed, strings.Join(strings.Fields(line), " "))
			}
			for _, want := range tc.lines {
				found := false
				for _, l := range squeezed {
					found = found || strings.HasPrefix(l, want+" ") || l == want
				}
				if !found {
					t.Errorf("no line starting %q in:\n%s", want, out)
				}
			}
			for _, s := range tc.has {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(out, s) {
					t.Errorf("output has %q:\n%s", s, out)
				}
			}
			// Every missing or degraded feature has a remedy.
			for _, f := range r.Features() {
				if f.Status != StatusMissing && f.Status != StatusDegraded {
					continue
				}
				found := false
				for _, rm := range r.Remedies {
					found = found || strings.HasPrefix(f.Name, rm.Feature)
				}
				if !found {
					t.Errorf("feature %q is %s without a remedy", f.Name, f.Status)
				}
			}
		})
	}
}

func TestWriteTextAligned(t *testing.T) {
	var buf bytes.Buffer
	r := fullReport()
	r.AutoBackend = chooseBackend(r)
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")[1:]
	col := -1
	for _, l := range lines {
		i := strings.Index(l, " ok ")
		if i < 0 {
			i = strings.Index(l, " bwrap ")
		}
		if col == -1 {
			col = i
		}
		if i != col {
			t.Errorf("status column not aligned:\n%s", buf.String())
			break
		}
	}
}

type failWriter struct{}

var errDiskFull = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestWriteTextError(t *testing.T) {
	r := fullReport()
	if err := r.WriteText(failWriter{}); !errors.Is(err, errDiskFull) {
		t.Errorf("WriteText error = %v, want it to wrap %v", err, errDiskFull)
	}
}

// TestCgroupsRemedy: the fix for a missing cgroup fits the host: it names
// systemd-run only where systemd is the init system (with --user only
// where the user has a manager), and an administrator's cgroup elsewhere.
func TestCgroupsRemedy(t *testing.T) {
	v1 := map[string]string{"pids": "/sys/fs/cgroup/pids", "memory": "/sys/fs/cgroup/memory"}
	for _, tc := range []struct {
		name                   string
		cg                     CgroupInfo
		root, systemd, sysUser bool
		has, hasNot            []string
	}{
		{"pure v2, user with a manager", CgroupInfo{Version: 2}, false, true, true,
			[]string{"systemd-run --user --scope -p Delegate=yes"}, []string{"unified_cgroup_hierarchy", "sudo mkdir"}},
		{"pure v2, user without a manager", CgroupInfo{Version: 2}, false, true, false,
			[]string{"loginctl enable-linger", "systemd-run --user"}, nil},
		{"pure v2, root with systemd", CgroupInfo{Version: 2}, true, true, false,
			[]string{"`systemd-run --scope -p Delegate=yes cordon ...`", "does not hold root"}, []string{"--user"}},
		{"pure v2, no systemd", CgroupInfo{Version: 2}, false, false, false,
			[]string{"have root create a cgroup for you", "+memory +pids"}, []string{"systemd"}},
		{"hybrid, user, no systemd", CgroupInfo{Version: 2, Hybrid: true, V1Mounts: v1}, false, false, false,
			[]string{"sudo mkdir /sys/fs/cgroup/pids/$USER /sys/fs/cgroup/memory/$USER", "echo $$ > /sys/fs/cgroup/pids/$USER/cgroup.procs"}, []string{"systemd"}},
		{"hybrid, user, systemd", CgroupInfo{Version: 2, Hybrid: true, V1Mounts: v1}, false, true, true,
			[]string{"sudo mkdir", "systemd.unified_cgroup_hierarchy=1"}, nil},
		{"hybrid, root, systemd", CgroupInfo{Version: 2, Hybrid: true, V1Mounts: v1}, true, true, false,
			[]string{"systemd.unified_cgroup_hierarchy=1", "does not hold root"}, []string{"--user", "sudo mkdir"}},
		{"v1 only, root, no systemd", CgroupInfo{Version: 1}, true, false, false,
			[]string{"mount the cgroup v1 pids and memory hierarchies"}, []string{"systemd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fullReport()
			r.Cgroup, r.Root, r.Systemd, r.SystemdUser = tc.cg, tc.root, tc.systemd, tc.sysUser
			r.Limits = LimitsInfo{Mechanism: MechanismRlimits, Reason: "no usable cgroup: ..."}
			var rm *Remedy
			for _, x := range remedies(r) {
				if x.Feature == FeatureCgroups {
					rm = &x
				}
			}
			if rm == nil {
				t.Fatalf("no cgroups remedy: %+v", remedies(r))
			}
			for _, s := range tc.has {
				if !strings.Contains(rm.Fix, s) {
					t.Errorf("fix lacks %q: %s", s, rm.Fix)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(rm.Fix, s) {
					t.Errorf("fix has %q: %s", s, rm.Fix)
				}
			}
		})
	}
	// With a usable cgroup there is nothing to fix.
	for _, m := range []string{MechanismCgroup1, MechanismCgroup2} {
		r := fullReport()
		r.Cgroup, r.Limits = CgroupInfo{Version: 2, Hybrid: true, Reason: "controllers bound to v1"}, LimitsInfo{Mechanism: m}
		for _, x := range remedies(r) {
			if x.Feature == FeatureCgroups {
				t.Errorf("%s: remedy %+v", m, x)
			}
		}
		for _, f := range r.Features() {
			if f.Name == FeatureCgroups && f.Status != StatusOK {
				t.Errorf("%s: cgroups line %+v", m, f)
			}
		}
	}
}

// TestWriteTextWindows checks that cordon status on Windows says the Job
// backend and, in one line, what it does not confine.
func TestWriteTextWindows(t *testing.T) {
	r := &Report{OS: "windows", Arch: "amd64"}
	r.AutoBackend = chooseBackend(r)
	r.Remedies = remedies(r)
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"  job  ", "Windows Job Object", "warning: " + backend.JobWarning + "\n", "no file or network confinement on windows"} {
		if !strings.Contains(out, want) {
			t.Errorf("status on Windows lacks %q:\n%s", want, out)
		}
	}
}
