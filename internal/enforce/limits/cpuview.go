package limits

// CPUView is a read-only bind mount that shows a sandbox the group's
// directory of the cgroup hierarchy holding the cpu controller, where a
// program inside looks for its CPU limit.
//
// Why: as it starts, every Go program (since Go 1.25) reads
// /proc/self/cgroup, then /proc/self/mountinfo until the first cgroup
// mount that holds its CPU cgroup: with none, the whole table. A
// sandbox of many protected paths has a thousand mounts and no cgroup
// mount, and the kernel formats each line for that read: an empty Go
// program took 9.2 ms to run there against 1.7 ms with few mounts. Mounted
// before the protected paths, the view ends the read within its first
// lines.
//
// It shows only the group's own directory (its processes, limits and
// usage), read-only: no other cgroup's name or figures.
type CPUView struct {
	// Source is the group's directory in that hierarchy, on the host.
	Source string
	// Target is where the host mounts the hierarchy (/sys/fs/cgroup, or
	// /sys/fs/cgroup/cpu,cpuacct on cgroup v1), where it goes inside too.
	Target string
}
