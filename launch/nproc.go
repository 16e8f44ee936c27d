package launch

import (
	"bytes"
	"os"
	"strconv"

	"github.com/cordon-sandbox/cordon/helperspec"
	"golang.org/x/sys/unix"
)

// nprocOnTop raises an RLIMIT_NPROC of rl by the tasks the user uid
// already has. Without a user namespace (the Landlock-only backend) and
// without a cgroup, the kernel counts against RLIMIT_NPROC every task of
// the user on the host: a limit of 64 with a desktop session of 300 made
// every fork of the command fail ("Cannot fork"). The limit then means
// --max-procs tasks more than the user had when the run started (other
// processes of the user starting or ending during the run move it; root
// is exempt from RLIMIT_NPROC whatever it says).
func nprocOnTop(rl []helperspec.Rlimit, uid int) []helperspec.Rlimit {
	i := -1
	for j, r := range rl {
		if r.Resource == unix.RLIMIT_NPROC {
			i = j
		}
	}
	if i < 0 || uid == 0 {
		return rl
	}
	out := append([]helperspec.Rlimit(nil), rl...)
	out[i].Value += uint64(userTasks(uid))
	return out
}

// userTasks counts the tasks (threads) of the processes whose owner is uid,
// from /proc; a process that ends while it is read is skipped.
func userTasks(uid int) int {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0
	}
	n := 0
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+name, &st) != nil || int(st.Uid) != uid {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		n += statThreads(b)
	}
	return n
}

// statThreads is num_threads, field 20 of /proc/PID/stat, or 1.
func statThreads(b []byte) int {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 1
	}
	f := bytes.Fields(b[i+1:])
	// Fields after the name start with state (field 3): num_threads is
	// field 20, index 17 here.
	if len(f) < 18 {
		return 1
	}
	t, err := strconv.Atoi(string(f[17]))
	if err != nil || t < 1 {
		return 1
	}
	return t
}
