package limits

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// v1Controllers are the v1 hierarchies a cgroup1 Group uses, in order.
// pids and memory are required (when their limit is set); cpuacct is used
// for CPU accounting when writable; cpu only for NewWithCPU, when no other
// of the group's hierarchies holds it (see CPUView).
var v1Controllers = []string{"pids", "memory", "cpuacct", "cpu"}

// Timing of Kill and Close: retries with short sleeps, bounded well under
// the 2 s the launcher can afford.
const (
	retrySleep  = 10 * time.Millisecond
	killBudget  = 1500 * time.Millisecond
	rmdirBudget = 1500 * time.Millisecond
)

// host is what New reads from /proc; tests may substitute it.
type host struct {
	mountinfo []byte
	cgroup    []byte
}

func readHost() (host, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return host{}, err
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return host{}, err
	}
	return host{mountinfo: mi, cgroup: cg}, nil
}

// New creates the cgroup of one sandbox run. name identifies the run (it
// is sanitised and made unique with our pid and a random suffix, so two
// runs never share a group). When no cgroup can be used New returns a
// Group of KindNone and an *UnavailableError; other errors mean the
// arguments were invalid.
func New(name string, l Limits) (*Group, error) { return create(name, l, false) }

// NewWithCPU is New, and on cgroup v1 the group also gets a directory in
// the hierarchy of the cpu controller when that is mounted apart from the
// ones the group uses anyway (on most hosts cpu and cpuacct share one), so
// that CPUView has a directory to show. It costs one more directory, and
// one more write for each move into the group, on such hosts only.
func NewWithCPU(name string, l Limits) (*Group, error) { return create(name, l, true) }

func create(name string, l Limits, cpu bool) (*Group, error) {
	if l.MaxProcesses < 0 || l.MaxMemoryMB < 0 || l.MaxCPUSeconds < 0 {
		return nil, fmt.Errorf("limits: negative limit in %+v", l)
	}
	h, err := readHost()
	if err != nil {
		g := &Group{kind: KindNone, limits: l, fd: -1, reasons: []string{fmt.Sprintf("cannot read /proc: %v", err)}}
		return g, &UnavailableError{Reasons: g.reasons}
	}
	return newFrom(h, name, l, cpu)
}

func newFrom(h host, name string, l Limits, cpu bool) (*Group, error) {
	base, err := uniqueName(name)
	if err != nil {
		return nil, err
	}
	mounts := CgroupMounts(h.mountinfo)
	self := SelfCgroups(h.cgroup)
	var reasons []string
	g, err := tryV2(mounts, self, base, l)
	if err == nil {
		g.cpuView, g.hasCPUView = cpuView(mounts, self, g)
		return g, nil
	}
	reasons = append(reasons, "cgroup2: "+err.Error())
	g, err = tryV1(mounts, self, base, l, cpu)
	if err == nil {
		g.cpuView, g.hasCPUView = cpuView(mounts, self, g)
		return g, nil
	}
	reasons = append(reasons, "cgroup1: "+err.Error())
	g = &Group{kind: KindNone, name: base, limits: l, fd: -1, reasons: reasons}
	return g, &UnavailableError{Reasons: reasons}
}

// uniqueName is cordon-<name>-<pid>-<8 hex>.
func uniqueName(name string) (string, error) {
	var b strings.Builder
	for _, r := range name {
		if b.Len() >= 32 {
			break
		}
		if r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("limits: random name: %w", err)
	}
	s := "cordon-"
	if n := strings.Trim(b.String(), "."); n != "" {
		s += n + "-"
	}
	return s + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(rnd[:]), nil
}

// needed lists the controllers a group requires: memory and pids, for
// their limits and for the accounting Usage reports, even when the limit
// itself is zero.
func needed(Limits) []string { return []string{"memory", "pids"} }

func tryV2(mounts []CgroupMount, self map[string]string, base string, l Limits) (*Group, error) {
	var m *CgroupMount
	for i := range mounts {
		if mounts[i].FSType == "cgroup2" {
			m = &mounts[i]
			break
		}
	}
	if m == nil {
		return nil, errors.New("no cgroup2 mount")
	}
	cg, ok := self[""]
	if !ok {
		return nil, errors.New("no 0:: entry in /proc/self/cgroup")
	}
	parent, ok := dirFor(*m, cg)
	if !ok {
		return nil, fmt.Errorf("our cgroup %s is outside the cgroup2 mount at %s", cg, m.Point)
	}
	avail := readFields(filepath.Join(parent, "cgroup.controllers"))
	var missing []string
	for _, c := range needed(l) {
		if !slices.Contains(avail, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("controllers %s not available in %s", strings.Join(missing, ", "), parent)
	}
	if err := unix.Access(parent, unix.W_OK); err != nil {
		return nil, fmt.Errorf("%s is not writable: %v", parent, err)
	}
	// Enable what the leaf needs (and what is merely useful) in the
	// parent's subtree_control. This fails with EBUSY when the parent
	// holds processes (the "no internal processes" rule): then we cannot
	// use it without moving processes we do not own.
	enabled := readFields(filepath.Join(parent, "cgroup.subtree_control"))
	// cpu.stat exists without the cpu controller, so only these two are
	// enabled.
	for _, c := range needed(l) {
		if slices.Contains(enabled, c) {
			continue
		}
		if err := writeFile(filepath.Join(parent, "cgroup.subtree_control"), "+"+c); err != nil {
			hint := ""
			if errors.Is(err, unix.EBUSY) {
				hint = " (our cgroup has processes in it; run cordon in a delegated scope, e.g. systemd-run --user --scope -p Delegate=yes)"
			}
			return nil, fmt.Errorf("cannot enable %s in %s/cgroup.subtree_control: %v%s", c, parent, err, hint)
		}
	}
	dir := filepath.Join(parent, base)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create %s: %v", dir, err)
	}
	g := &Group{kind: KindCgroup2, name: base, limits: l, dir: dir, fd: -1, cgPaths: map[string]string{"": path.Join(cg, base)}}
	fail := func(err error) (*Group, error) {
		_ = unix.Rmdir(dir)
		return nil, err
	}
	if l.MaxProcesses > 0 {
		if err := writeFile(filepath.Join(dir, "pids.max"), strconv.Itoa(l.MaxProcesses)); err != nil {
			return fail(fmt.Errorf("pids.max: %v", err))
		}
	}
	if l.MaxMemoryMB > 0 {
		if err := writeFile(filepath.Join(dir, "memory.max"), strconv.FormatUint(uint64(l.MaxMemoryMB)<<20, 10)); err != nil {
			return fail(fmt.Errorf("memory.max: %v", err))
		}
		if exists(filepath.Join(dir, "memory.swap.max")) {
			if err := writeFile(filepath.Join(dir, "memory.swap.max"), "0"); err == nil {
				g.noSwap = true
			}
		}
	}
	if err := unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK); err != nil {
		return fail(fmt.Errorf("%s/cgroup.procs is not writable: %v", dir, err))
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		g.fd = fd
	}
	return g, nil
}

func tryV1(mounts []CgroupMount, self map[string]string, base string, l Limits, cpu bool) (*Group, error) {
	g := &Group{kind: KindCgroup1, name: base, limits: l, dirs: map[string]string{}, fd: -1, cgPaths: map[string]string{}}
	var created []string
	fail := func(err error) (*Group, error) {
		for _, d := range created {
			_ = unix.Rmdir(d)
		}
		return nil, err
	}
	for _, c := range v1Controllers {
		if c == "cpu" {
			if _, held := cpuView(mounts, self, g); !cpu || held {
				continue
			}
		}
		required := c == "pids" || c == "memory"
		dir, err := v1Dir(mounts, self, c, base)
		if err == nil {
			err = os.Mkdir(dir, 0o755)
			if err != nil {
				err = fmt.Errorf("cannot create %s: %v", dir, err)
			}
		}
		if err != nil {
			if required {
				return fail(err)
			}
			continue
		}
		created = append(created, dir)
		g.dirs[c] = dir
		g.cgPaths[c] = path.Join(self[c], base)
	}
	if d, ok := g.dirs["pids"]; ok && l.MaxProcesses > 0 {
		if err := writeFile(filepath.Join(d, "pids.max"), strconv.Itoa(l.MaxProcesses)); err != nil {
			return fail(fmt.Errorf("pids.max: %v", err))
		}
	}
	if d, ok := g.dirs["memory"]; ok && l.MaxMemoryMB > 0 {
		v := strconv.FormatUint(uint64(l.MaxMemoryMB)<<20, 10)
		if err := writeFile(filepath.Join(d, "memory.limit_in_bytes"), v); err != nil {
			return fail(fmt.Errorf("memory.limit_in_bytes: %v", err))
		}
		// memsw must be >= limit_in_bytes, so it is written second.
		if exists(filepath.Join(d, "memory.memsw.limit_in_bytes")) {
			if err := writeFile(filepath.Join(d, "memory.memsw.limit_in_bytes"), v); err != nil {
				return fail(fmt.Errorf("memory.memsw.limit_in_bytes: %v", err))
			}
			g.memsw = true
		}
	}
	return g, nil
}

// v1Dir is the directory for a new group base under our current cgroup in
// the v1 hierarchy of controller c.
func v1Dir(mounts []CgroupMount, self map[string]string, c, base string) (string, error) {
	for _, m := range mounts {
		if m.FSType != "cgroup" || !slices.Contains(m.Opts, c) {
			continue
		}
		cg, ok := self[c]
		if !ok {
			return "", fmt.Errorf("no %s entry in /proc/self/cgroup", c)
		}
		parent, ok := dirFor(m, cg)
		if !ok {
			return "", fmt.Errorf("our %s cgroup %s is outside the mount at %s", c, cg, m.Point)
		}
		if err := unix.Access(parent, unix.W_OK); err != nil {
			return "", fmt.Errorf("%s is not writable: %v", parent, err)
		}
		return filepath.Join(parent, base), nil
	}
	return "", fmt.Errorf("no cgroup v1 %s hierarchy mounted", c)
}

// FD returns an open descriptor of the group's directory for
// SysProcAttr.UseCgroupFD/CgroupFD (clone3 with CLONE_INTO_CGROUP), so the
// child starts inside the group with no window. Only cgroup v2 has one; it
// stays valid until Close.
func (g *Group) FD() (int, bool) {
	if g.kind != KindCgroup2 || g.fd < 0 || g.closed {
		return -1, false
	}
	return g.fd, true
}

// SetMaxProcesses writes the group's pids.max: from now on it holds at
// most n tasks (processes and threads). Tasks already above n stay; new
// ones are refused. A launcher whose own set-up processes start inside
// the group (bwrap, the helper's Go runtime threads) creates it with
// Limits.MaxProcesses 0 and calls SetMaxProcesses once they are done and
// before the command runs, so that a small limit never starves the
// set-up. Limits then reports n.
func (g *Group) SetMaxProcesses(n int) error {
	if n <= 0 {
		return fmt.Errorf("limits: invalid process limit %d", n)
	}
	d := g.dir
	if g.kind == KindCgroup1 {
		d = g.dirs["pids"]
	}
	if g.kind == KindNone || d == "" {
		return fmt.Errorf("limits: group %q has no pids controller", g.name)
	}
	if err := writeFile(filepath.Join(d, "pids.max"), strconv.Itoa(n)); err != nil {
		return fmt.Errorf("limits: pids.max of %s: %w", d, err)
	}
	g.limits.MaxProcesses = n
	return nil
}

// Add moves process pid (all its threads) into the group. Processes it
// forks afterwards are born inside the group; processes it forked before
// stay where they are, so call Add before the sandboxed command starts.
func (g *Group) Add(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("limits: invalid pid %d", pid)
	}
	s := strconv.Itoa(pid)
	for _, d := range g.Paths() {
		if err := writeFile(filepath.Join(d, "cgroup.procs"), s); err != nil {
			return fmt.Errorf("limits: move pid %d into %s: %w", pid, d, err)
		}
	}
	return nil
}

// Contains reports whether process pid is inside the group in every
// hierarchy the group uses, by reading /proc/PID/cgroup. Unlike Add it
// takes no kernel lock, so a caller that moved a parent early can check
// cheaply whether the children it forked since were born inside.
func (g *Group) Contains(pid int) (bool, error) {
	if g.kind == KindNone {
		return false, nil
	}
	if pid <= 0 {
		return false, fmt.Errorf("limits: invalid pid %d", pid)
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false, fmt.Errorf("limits: reading the cgroups of pid %d: %w", pid, err)
	}
	cur := SelfCgroups(data)
	if len(g.cgPaths) == 0 {
		return false, nil
	}
	for c, p := range g.cgPaths {
		if cur[c] != p {
			return false, nil
		}
	}
	return true, nil
}

// Pids lists the processes currently in the group.
func (g *Group) Pids() ([]int, error) {
	seen := map[int]bool{}
	var out []int
	var firstErr error
	for _, d := range g.Paths() {
		data, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) && firstErr == nil {
				firstErr = err
			}
			continue
		}
		for f := range strings.FieldsSeq(string(data)) {
			if p, err := strconv.Atoi(f); err == nil && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, firstErr
}

// Kill sends SIGKILL to every process in the group and waits (at most
// about 1.5 s) until none is left. On cgroup v2 it uses cgroup.kill when
// the kernel has it, which also catches processes forked meanwhile; else
// it kills the listed pids repeatedly until the list stays empty (pids.max
// bounds how many a fork bomb can add).
func (g *Group) Kill() error {
	if g.kind == KindNone || g.closed {
		return nil
	}
	if g.kind == KindCgroup2 && exists(filepath.Join(g.dir, "cgroup.kill")) {
		_ = writeFile(filepath.Join(g.dir, "cgroup.kill"), "1")
	}
	deadline := time.Now().Add(killBudget)
	for {
		pids, err := g.Pids()
		if err != nil {
			return fmt.Errorf("limits: kill: %w", err)
		}
		if len(pids) == 0 {
			return nil
		}
		for _, p := range pids {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("limits: kill: %d processes still in the group after %v", len(pids), killBudget)
		}
		time.Sleep(retrySleep)
	}
}

// Close kills what is left in the group (see Kill) and removes its
// directories, retrying with short sleeps while the kernel still holds
// them (total well under 2 s). It is safe to call more than once.
func (g *Group) Close() error {
	if g.kind == KindNone || g.closed {
		return nil
	}
	killErr := g.Kill()
	if g.peak != nil {
		g.peak.Close()
		g.peak = nil
	}
	if g.fd >= 0 {
		_ = unix.Close(g.fd)
		g.fd = -1
	}
	var errs []error
	deadline := time.Now().Add(rmdirBudget)
	for _, d := range g.Paths() {
		for {
			err := unix.Rmdir(d)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("limits: remove %s: %w", d, err))
				break
			}
			time.Sleep(retrySleep)
		}
	}
	g.closed = len(errs) == 0
	if len(errs) > 0 && killErr != nil {
		errs = append(errs, killErr)
	}
	return errors.Join(errs...)
}

// Usage reads what the group used so far. Values a kind cannot provide are
// left zero and named in Usage.Missing; the error is only for a group that
// is gone.
func (g *Group) Usage() (Usage, error) {
	var u Usage
	switch g.kind {
	case KindNone:
		u.Missing = []string{"all (no cgroup)"}
		return u, nil
	case KindCgroup2:
		if !exists(g.dir) {
			return u, fmt.Errorf("limits: usage: %s is gone", g.dir)
		}
		d := g.dir
		if g.peak != nil {
			u.PeakMemoryBytes = g.peakBytes(&u) // since Reuse reset it
		} else {
			u.PeakMemoryBytes = readUint(&u, d, "memory.peak")
		}
		st := readKV(filepath.Join(d, "cpu.stat"))
		if v, ok := st["usage_usec"]; ok {
			u.CPUTotal = time.Duration(v) * time.Microsecond
			u.CPUUser = time.Duration(st["user_usec"]) * time.Microsecond
			u.CPUSystem = time.Duration(st["system_usec"]) * time.Microsecond
		} else {
			u.Missing = append(u.Missing, "cpu.stat")
		}
		u.Processes = int(readUint(&u, d, "pids.current"))
		u.PeakProcesses = int(readUintOpt(d, "pids.peak"))
		u.ForkFailures = int(readKV(filepath.Join(d, "pids.events"))["max"])
		ev := readKV(filepath.Join(d, "memory.events"))
		u.OOMKills = int(ev["oom_kill"])
		u.MemoryLimitHits = int(ev["max"])
	case KindCgroup1:
		if d, ok := g.dirs["memory"]; ok {
			u.PeakMemoryBytes = readUint(&u, d, "memory.max_usage_in_bytes")
			oc := readKV(filepath.Join(d, "memory.oom_control"))
			u.OOMKills = int(oc["oom_kill"])
			u.MemoryLimitHits = int(max(readUintOpt(d, "memory.failcnt"), readUintOpt(d, "memory.memsw.failcnt")))
		} else {
			u.Missing = append(u.Missing, "memory")
		}
		if d, ok := g.dirs["pids"]; ok {
			u.Processes = int(readUint(&u, d, "pids.current"))
			u.PeakProcesses = int(readUintOpt(d, "pids.peak"))
			u.ForkFailures = int(readKV(filepath.Join(d, "pids.events"))["max"])
		} else {
			u.Missing = append(u.Missing, "pids")
		}
		if d, ok := g.dirs["cpuacct"]; ok {
			u.CPUTotal = time.Duration(readUint(&u, d, "cpuacct.usage")) // ns
			st := readKV(filepath.Join(d, "cpuacct.stat"))               // USER_HZ ticks
			u.CPUUser = ticks(st["user"])
			u.CPUSystem = ticks(st["system"])
		} else {
			u.Missing = append(u.Missing, "cpuacct")
		}
		for _, d := range g.dirs {
			if !exists(d) {
				return u, fmt.Errorf("limits: usage: %s is gone", d)
			}
		}
	}
	return u, nil
}

// ticks converts USER_HZ clock ticks (100 per second on Linux) to a
// duration.
func ticks(n uint64) time.Duration { return time.Duration(n) * (time.Second / 100) }

// writeFile writes s to an existing cgroup file (no O_CREAT: a missing
// file is a missing feature, not something to create).
func writeFile(p, s string) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readFields(p string) []string {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	return strings.Fields(string(data))
}

// readUint reads a one-number file, noting it in u.Missing when absent.
func readUint(u *Usage, dir, name string) uint64 {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		u.Missing = append(u.Missing, name)
		return 0
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		u.Missing = append(u.Missing, name)
		return 0
	}
	return v
}

func readUintOpt(dir, name string) uint64 {
	var u Usage
	return readUint(&u, dir, name)
}

// readKV parses "key value" lines (cpu.stat, memory.events, ...).
func readKV(p string) map[string]uint64 {
	out := map[string]uint64{}
	data, err := os.ReadFile(p)
	if err != nil {
		return out
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if v, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			out[f[0]] = v
		}
	}
	return out
}
