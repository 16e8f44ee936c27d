package limits

import (
	"bufio"
	"bytes"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// CgroupMount is one cgroup or cgroup2 line of /proc/self/mountinfo.
type CgroupMount struct {
	// Root is the mount's root inside the hierarchy, Point where it is
	// mounted, FSType "cgroup" or "cgroup2".
	Root, Point, FSType string
	// Opts are the super options (a v1 hierarchy's controllers).
	Opts []string
}

// CgroupMounts returns the cgroup and cgroup2 mounts of a mountinfo
// table, with its octal escapes (\040 for a space) decoded. It is the one
// mountinfo parser: cordon status (probe) reads the table with it too.
func CgroupMounts(mountinfo []byte) []CgroupMount {
	var out []CgroupMount
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 || g[0] != "cgroup" && g[0] != "cgroup2" {
			continue
		}
		m := CgroupMount{Root: unescape(f[3]), Point: unescape(f[4]), FSType: g[0]}
		if len(g) >= 3 {
			m.Opts = strings.Split(g[2], ",")
		}
		out = append(out, m)
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// SelfCgroups parses /proc/self/cgroup: "0::/path" for v2 (key ""), and
// "N:ctrl1,ctrl2:/path" for v1 (one key per controller).
func SelfCgroups(data []byte) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// dirFor maps a cgroup path of /proc/self/cgroup to a directory under m.
func dirFor(m CgroupMount, cg string) (string, bool) {
	rel, ok := subpath.Rel(m.Root, cg)
	if !ok {
		return "", false
	}
	return filepath.Join(m.Point, rel), true
}
