package limits

import "slices"

// CPUView returns the group's view (see CPUView). ok is false when the
// processes of the group would not find their CPU cgroup through it: a
// group of cgroup v2 on a host whose cpu controller is on v1, or of v1
// without a directory in the cpu controller's hierarchy (New, not
// NewWithCPU, on a host that mounts cpu apart).
func (g *Group) CPUView() (v CPUView, ok bool) {
	if g == nil || g.kind == KindNone || g.closed {
		return CPUView{}, false
	}
	return g.cpuView, g.hasCPUView
}

// cpuView is the group's view, choosing the hierarchy as the Go runtime
// does (internal/runtime/cgroup): a v1 hierarchy holding cpu when
// /proc/self/cgroup lists one, else cgroup v2. The group's processes
// inherit our cgroups but for those of the group's hierarchies.
func cpuView(mounts []CgroupMount, self map[string]string, g *Group) (CPUView, bool) {
	if _, v1 := self["cpu"]; v1 {
		if g.kind != KindCgroup1 {
			return CPUView{}, false
		}
		for _, m := range mounts {
			if m.FSType != "cgroup" || !slices.Contains(m.Opts, "cpu") {
				continue
			}
			// The first such mount is the one Go would read; the group's
			// directory must be in its hierarchy.
			for _, c := range v1Controllers {
				if d, ok := g.dirs[c]; ok && slices.Contains(m.Opts, c) {
					return CPUView{Source: d, Target: m.Point}, true
				}
			}
			return CPUView{}, false
		}
		return CPUView{}, false
	}
	if _, v2 := self[""]; !v2 || g.kind != KindCgroup2 {
		return CPUView{}, false
	}
	for _, m := range mounts {
		if m.FSType == "cgroup2" {
			return CPUView{Source: g.dir, Target: m.Point}, true
		}
	}
	return CPUView{}, false
}
