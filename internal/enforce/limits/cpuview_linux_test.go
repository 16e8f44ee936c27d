package limits

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// TestCPUViewChoice: the view is the group's directory in the hierarchy
// the Go runtime reads, a v1 one holding cpu when /proc/self/cgroup lists
// one, else cgroup v2; none when the group has no directory there.
func TestCPUViewChoice(t *testing.T) {
	const (
		v1Apart = "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n" +
			"36 31 0:33 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n" +
			"37 31 0:34 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n" +
			"38 31 0:35 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n" +
			"39 31 0:36 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
		v1Together = "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n" +
			"36 31 0:33 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n" +
			"37 31 0:34 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
		v2 = "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n"
	)
	v1Dirs := func(cs ...string) *Group {
		g := &Group{kind: KindCgroup1, dirs: map[string]string{}}
		for _, c := range cs {
			g.dirs[c] = "/sys/fs/cgroup/" + c + "/g"
		}
		return g
	}
	for _, tc := range []struct {
		name, mounts, cgroup string
		g                    *Group
		want                 CPUView
		ok                   bool
	}{
		{"v1, cpu apart, a cpu directory", v1Apart, "4:memory:/\n3:pids:/\n2:cpuacct:/\n1:cpu:/\n0::/\n",
			v1Dirs("pids", "memory", "cpuacct", "cpu"), CPUView{"/sys/fs/cgroup/cpu/g", "/sys/fs/cgroup/cpu"}, true},
		{"v1, cpu apart, no cpu directory (New)", v1Apart, "4:memory:/\n3:pids:/\n2:cpuacct:/\n1:cpu:/\n0::/\n",
			v1Dirs("pids", "memory", "cpuacct"), CPUView{}, false},
		{"v1, cpu with cpuacct", v1Together, "4:memory:/\n3:pids:/\n2:cpu,cpuacct:/user.slice\n",
			v1Dirs("pids", "memory", "cpuacct"), CPUView{"/sys/fs/cgroup/cpuacct/g", "/sys/fs/cgroup/cpu,cpuacct"}, true},
		{"v1, no cpu hierarchy mounted", v1Together[:strings.Index(v1Together, "37 ")], "4:memory:/\n3:pids:/\n1:cpu:/\n",
			v1Dirs("pids", "memory"), CPUView{}, false},
		{"v2", v2, "0::/user.slice/x.scope\n",
			&Group{kind: KindCgroup2, dir: "/sys/fs/cgroup/user.slice/x.scope/g"}, CPUView{"/sys/fs/cgroup/user.slice/x.scope/g", "/sys/fs/cgroup"}, true},
		{"a v2 group where Go reads v1's cpu", v1Apart, "1:cpu:/\n0::/\n",
			&Group{kind: KindCgroup2, dir: "/sys/fs/cgroup/unified/g"}, CPUView{}, false},
		{"a v1 group on a host of v2 only", v2, "0::/\n", v1Dirs("pids", "memory"), CPUView{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := cpuView(CgroupMounts([]byte(tc.mounts)), SelfCgroups([]byte(tc.cgroup)), tc.g)
			if got != tc.want || ok != tc.ok {
				t.Errorf("cpuView = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestNewWithCPUHierarchies feeds New and NewWithCPU a host of v1
// hierarchies in temporary directories: NewWithCPU adds a directory in
// the cpu hierarchy only when it is mounted apart, never a second one in
// a hierarchy the group uses anyway, and Close removes it.
func TestNewWithCPUHierarchies(t *testing.T) {
	for _, tc := range []struct {
		name     string
		together bool
		withCPU  bool
		wantCPU  bool // a directory made in the cpu hierarchy apart
		wantView bool
		wantDirs int
	}{
		{"apart, New", false, false, false, false, 3},
		{"apart, NewWithCPU", false, true, true, true, 4},
		{"together, New", true, false, false, true, 3},
		{"together, NewWithCPU", true, true, false, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			hier := []string{"pids", "memory", "cpuacct", "cpu"}
			if tc.together {
				hier = []string{"pids", "memory", "cpu,cpuacct"}
			}
			var mi, cg strings.Builder
			for i, h := range hier {
				d := filepath.Join(root, h)
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&mi, "%d 1 0:%d / %s rw - cgroup cgroup rw,%s\n", 40+i, 40+i, d, h)
				fmt.Fprintf(&cg, "%d:%s:/\n", i+1, h)
			}
			g, err := newFrom(host{mountinfo: []byte(mi.String()), cgroup: []byte(cg.String())}, "v", Limits{}, tc.withCPU)
			if err != nil {
				t.Fatalf("newFrom: %v", err)
			}
			_, gotCPU := g.dirs["cpu"]
			if gotCPU != tc.wantCPU {
				t.Errorf("a directory in the cpu hierarchy: %v, want %v (dirs %v)", gotCPU, tc.wantCPU, g.dirs)
			}
			v, ok := g.CPUView()
			if ok != tc.wantView {
				t.Fatalf("CPUView ok %v, want %v", ok, tc.wantView)
			}
			if ok {
				cpuHier := hier[len(hier)-1]
				if v.Target != filepath.Join(root, cpuHier) || filepath.Dir(v.Source) != v.Target {
					t.Errorf("view %+v is not a group directory of %s", v, cpuHier)
				}
				if fi, err := os.Stat(v.Source); err != nil || !fi.IsDir() {
					t.Errorf("view source %s: %v", v.Source, err)
				}
			}
			if n := len(g.Paths()); n != tc.wantDirs {
				t.Errorf("%d directories %v, want %d", n, g.Paths(), tc.wantDirs)
			}
			if err := g.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if _, ok := g.CPUView(); ok {
				t.Error("a closed group still has a view")
			}
			for _, h := range hier {
				if ents, _ := os.ReadDir(filepath.Join(root, h)); len(ents) != 0 {
					t.Errorf("left in %s: %v", h, ents)
				}
			}
		})
	}
}

// TestCPUViewOfThisHost: where this host gives a group (root on a host
// with cgroups, in CI), NewWithCPU's group has a view, and a process
// moved into the group is in the view's directory for the cpu
// controller, as /proc/PID/cgroup shows it: what a Go program started in
// it looks for.
func TestCPUViewOfThisHost(t *testing.T) {
	g, err := NewWithCPU("view", Limits{MaxProcesses: 100})
	if errors.Is(err, ErrUnavailable) {
		if has, why := hostHasV1(); has && testenv.CI() {
			t.Fatalf("writable cgroup v1 hierarchies, but no group: %v", err)
		} else {
			t.Logf("no group here (%v; %s): no view", err, why)
		}
		if _, ok := g.CPUView(); ok {
			t.Error("a group of kind none has a view")
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	v, ok := g.CPUView()
	if !ok {
		t.Fatalf("group %s has no view", g.Describe())
	}
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	self := SelfCgroups(data)
	key := "cpu"
	if _, v1 := self[key]; !v1 {
		key = ""
	}
	if !strings.HasSuffix(v.Source, self[key]) || filepath.Base(v.Source) != g.Name() {
		t.Errorf("view %+v, but the process's cpu cgroup is %q", v, self[key])
	}
	procs, err := os.ReadFile(filepath.Join(v.Source, "cgroup.procs"))
	if err != nil || !strings.Contains(" "+strings.Join(strings.Fields(string(procs)), " ")+" ", fmt.Sprintf(" %d ", cmd.Process.Pid)) {
		t.Errorf("%s/cgroup.procs = %q (%v), want pid %d", v.Source, procs, err, cmd.Process.Pid)
	}
}
