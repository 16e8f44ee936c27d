package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/cordon-sandbox/cordon/internal/enforce/landlock"
	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"golang.org/x/sys/unix"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// execTimeout bounds each helper process Detect starts, so a wedged bwrap
// can never hang `cordon status`.
const execTimeout = 3 * time.Second

// Locations of the knobs that explain a failing user namespace.
const (
	sysctlMaxUserNS        = "/proc/sys/user/max_user_namespaces"
	sysctlAppArmorRestrict = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
	sysctlUnprivClone      = "/proc/sys/kernel/unprivileged_userns_clone"
)

// cgroupControllers are the controllers cordon's resource limits need in
// a cgroup v2 tree (package limits: memory and pids; cpu is used for
// accounting when present).
var cgroupControllers = []string{"memory", "pids"}

// Detect probes the host. It never fails: every problem is recorded in the
// report with a reason. The slow parts (creating a user namespace, running
// bwrap twice) run concurrently.
func Detect(opts Options) *Report {
	r := &Report{OS: runtime.GOOS, Arch: runtime.GOARCH, Root: os.Geteuid() == 0}

	var wg sync.WaitGroup
	var usernsErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		usernsErr = tryUserNS()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.Bwrap = detectBwrap(opts.BwrapPath)
	}()

	r.Kernel = kernelRelease()
	r.Landlock = detectLandlock()
	r.Seccomp = detectSeccomp()
	r.NoNewPrivsInherited = noNewPrivs()
	r.Cgroup = detectCgroup()
	r.Limits = detectLimits()
	r.Systemd, r.SystemdUser = detectSystemd()
	r.UserNS = UserNSInfo{
		MaxUserNamespaces: readIntKnob(sysctlMaxUserNS, -1),
		AppArmorRestrict:  readBoolKnob(sysctlAppArmorRestrict),
		UnprivilegedClone: readBoolKnob(sysctlUnprivClone),
	}

	wg.Wait()
	if usernsErr == nil {
		r.UserNS.Available = true
	} else {
		var errno syscall.Errno
		if errors.As(usernsErr, &errno) {
			r.UserNS.Errno = errnoName(errno)
		}
		r.UserNS.Reason = explainUserNS(usernsErr, r)
	}
	r.AutoBackend = chooseBackend(r)
	r.Remedies = remedies(r)
	return r
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// detectLandlock asks landlock_create_ruleset(NULL, 0, VERSION) for the ABI.
func detectLandlock() LandlockInfo {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return LandlockInfo{Errno: errnoName(errno), Reason: explainLandlock(errno)}
	}
	info := LandlockInfo{ABI: int(abi), Available: abi >= 1}
	info.Reason = landlock.Lacks(info.ABI)
	return info
}

// explainLandlock turns the errno of the version query into a reason.
func explainLandlock(errno syscall.Errno) string {
	name := errnoName(errno)
	switch errno {
	case unix.ENOSYS:
		return name + ": kernel too old (Landlock needs Linux 5.13+) or built without CONFIG_SECURITY_LANDLOCK"
	case unix.EOPNOTSUPP:
		return name + ": Landlock is built into the kernel but disabled at boot (not in the lsm= list)"
	case unix.EPERM:
		return name + ": the Landlock system calls are blocked, probably by a container's seccomp profile"
	default:
		return fmt.Sprintf("%s: landlock_create_ruleset: %v", name, errno)
	}
}

func detectSeccomp() SeccompInfo {
	info := SeccompInfo{Mode: -1, Filters: -1}
	if st, err := readStatus(); err == nil {
		if v, ok := st["Seccomp"]; ok {
			info.Mode, _ = strconv.Atoi(v)
		}
		if v, ok := st["Seccomp_filters"]; ok {
			info.Filters, _ = strconv.Atoi(v)
		}
	}
	mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	if err != nil {
		info.Reason = fmt.Sprintf("prctl(PR_GET_SECCOMP): %v: kernel built without CONFIG_SECCOMP", err)
		return info
	}
	if info.Mode < 0 {
		info.Mode = mode
	}
	// Filter mode is usable when the kernel knows the actions cordon's
	// filter returns.
	action := uint32(unix.SECCOMP_RET_ERRNO)
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if errno != 0 {
		info.Reason = fmt.Sprintf("seccomp(SECCOMP_GET_ACTION_AVAIL): %s: kernel built without CONFIG_SECCOMP_FILTER or the call is blocked", errnoName(errno))
		return info
	}
	info.Available = true
	if info.Mode == 2 {
		n := "a seccomp filter is"
		if info.Filters > 1 {
			n = fmt.Sprintf("%d seccomp filters are", info.Filters)
		}
		info.Reason = n + " already installed on this process (typical inside a container); cordon's filter stacks on top, but the existing one may block system calls cordon needs"
	}
	return info
}

// readStatus parses /proc/self/status into key/value pairs.
func readStatus() (map[string]string, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, fmt.Errorf("read process status: %w", err)
	}
	m := make(map[string]string)
	for line := range strings.SplitSeq(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m, nil
}

func noNewPrivs() bool {
	v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	return err == nil && v == 1
}

// truePath returns an absolute path of true(1).
func truePath() (string, error) {
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", errors.New("true(1) not found in /bin or /usr/bin")
}

// tryUserNS creates a user namespace for real: it starts /bin/true in a new
// user namespace with our uid and gid mapped to 0, as an unprivileged
// sandbox would. The child also unshares a mount namespace and makes "/"
// private, which needs CAP_SYS_ADMIN inside the new namespace: that catches
// restrictions which let the namespace be created but strip its
// capabilities (Ubuntu's AppArmor "unprivileged_userns" profile), exactly
// what makes bwrap fail there. It returns nil on success; a failure wraps
// the errno.
func tryUserNS() error {
	tp, err := truePath()
	if err != nil {
		return fmt.Errorf("cannot test user namespaces: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), execTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tp)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:   syscall.CLONE_NEWUSER,
		Unshareflags: syscall.CLONE_NEWNS,
		UidMappings:  []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:  []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		// Unprivileged gid_map writes require setgroups to be denied.
		GidMappingsEnableSetgroups: false,
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("create user namespace: %w", err)
	}
	return nil
}

// explainUserNS says why creating a user namespace failed, from the errno
// and the host knobs already stored in r.UserNS and r.Seccomp.
func explainUserNS(err error, r *Report) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	u := r.UserNS
	name := errnoName(errno)
	switch {
	case u.UnprivilegedClone != nil && !*u.UnprivilegedClone && !r.Root:
		return name + ": kernel.unprivileged_userns_clone=0 (unprivileged user namespaces disabled)"
	case u.MaxUserNamespaces == 0:
		return name + ": user.max_user_namespaces=0 (user namespaces disabled)"
	case u.AppArmorRestrict != nil && *u.AppArmorRestrict && !r.Root:
		return name + ": kernel.apparmor_restrict_unprivileged_userns=1 (AppArmor denies unprivileged user namespaces to unconfined programs)"
	case errno == unix.ENOSPC:
		return name + ": user namespace limit reached (user.max_user_namespaces of this or an enclosing namespace, or the nesting depth); probably already inside a sandbox or container that forbids nesting"
	case errno == unix.EPERM && r.Seccomp.Mode == 2:
		return name + ": a seccomp filter on this process (e.g. a container runtime's default profile, such as Docker's) blocks clone/unshare with CLONE_NEWUSER"
	case errno == unix.EPERM:
		return name + ": the kernel refused a new user namespace (running in a chroot, a container without the needed privileges, or an LSM policy)"
	case errno == unix.EINVAL || errno == unix.ENOSYS:
		return name + ": kernel built without user namespace support (CONFIG_USER_NS)"
	case errno == unix.EACCES:
		return name + ": permission denied writing the uid/gid map (an LSM policy such as AppArmor restricts user namespaces)"
	default:
		return fmt.Sprintf("%s: %v", name, err)
	}
}

func detectBwrap(configured string) BwrapInfo {
	var info BwrapInfo
	p, err := FindBwrap(configured)
	if err != nil {
		info.Reason = err.Error()
		return info
	}
	info.Path, info.Found = p, true
	if fi, err := os.Stat(p); err == nil {
		info.Setuid = fi.Mode()&os.ModeSetuid != 0 && statUID(fi) == 0
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		info.Version = bwrapVersion(p)
	}()
	runErr := runBwrap(p)
	wg.Wait()
	if runErr != nil {
		info.Reason = runErr.Error()
	} else {
		info.Works = true
	}
	return info
}

func statUID(fi os.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid
	}
	return ^uint32(0)
}

// bwrapVersion returns "0.8.0" from `bwrap --version` ("bubblewrap 0.8.0").
func bwrapVersion(p string) string {
	ctx, cancel := context.WithTimeout(context.Background(), execTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p, "--version")
	cmd.Env = []string{}
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// runBwrap checks that bwrap can build a minimal sandbox with a user
// namespace. The error carries bwrap's stderr.
func runBwrap(p string) error {
	tp, err := truePath()
	if err != nil {
		return fmt.Errorf("cannot test bwrap: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), execTimeout)
	defer cancel()
	// A pid namespace and its own /proc, as every run has: a container
	// that masks parts of its /proc (Docker's and Kubernetes' default)
	// lets the namespaces be made but not that /proc be mounted.
	cmd := exec.CommandContext(ctx, p, "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc", "--", tp)
	cmd.Env = []string{}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := firstLine(stderr.String())
		if msg == "" {
			return fmt.Errorf("%s --unshare-user: %w", p, err)
		}
		if strings.Contains(msg, "Can't mount proc") {
			msg += " (a container that masks parts of /proc: Docker's and Kubernetes' default; see docs/containers.md)"
		}
		return fmt.Errorf("%s --unshare-user: %w: %s", p, err, msg)
	}
	return nil
}

// firstLine returns the first non-empty line of s, at most 300 bytes.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > 300 {
				line = line[:300] + "..."
			}
			return line
		}
	}
	return ""
}

// readIntKnob reads an integer sysctl, def if it is missing or garbled.
func readIntKnob(path string, def int) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return def
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return def
	}
	return v
}

// readBoolKnob reads a 0/1 sysctl, nil if it does not exist.
func readBoolKnob(path string) *bool {
	v := readIntKnob(path, -1)
	if v < 0 {
		return nil
	}
	b := v != 0
	return &b
}

func detectCgroup() CgroupInfo {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return CgroupInfo{Reason: fmt.Sprintf("cannot read mount table: %v", err)}
	}
	pc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		pc = nil
	}
	return cgroupFrom(mi, pc)
}

// cgroupFrom inspects the cgroup v2 hierarchy given the contents of
// /proc/self/mountinfo and /proc/self/cgroup (nil if unreadable).
func cgroupFrom(mi, pc []byte) CgroupInfo {
	var info CgroupInfo
	var v2 *limits.CgroupMount
	v1 := false
	for _, m := range limits.CgroupMounts(mi) {
		switch {
		case m.FSType == "cgroup2" && v2 == nil:
			m := m
			v2 = &m
		case m.FSType == "cgroup":
			v1 = true
			for _, c := range []string{"pids", "memory"} {
				if slices.Contains(m.Opts, c) {
					if info.V1Mounts == nil {
						info.V1Mounts = map[string]string{}
					}
					info.V1Mounts[c] = m.Point
				}
			}
		}
	}
	switch {
	case v2 == nil && v1:
		info.Version = 1
		info.Reason = "only cgroup v1 is mounted; cordon uses cgroup v2 for limits (rlimits are used instead)"
		return info
	case v2 == nil:
		info.Reason = "no cgroup filesystem mounted (rlimits are used instead)"
		return info
	}
	info.Version, info.Hybrid = 2, v1

	if pc == nil {
		info.Reason = "cannot read /proc/self/cgroup"
		return info
	}
	cg, ok := limits.SelfCgroups(pc)[""]
	if !ok {
		info.Reason = "this process has no cgroup v2 membership in /proc/self/cgroup"
		return info
	}
	rel, ok := subpath.Rel(v2.Root, cg)
	if !ok {
		info.Reason = fmt.Sprintf("our cgroup %s is outside the mounted cgroup v2 tree (%s)", cg, v2.Root)
		return info
	}
	info.Path = filepath.Join(v2.Point, rel)
	info.Controllers = readFields(filepath.Join(info.Path, "cgroup.controllers"))
	info.SubtreeControl = readFields(filepath.Join(info.Path, "cgroup.subtree_control"))

	var missing []string
	for _, c := range cgroupControllers {
		if !slices.Contains(info.Controllers, c) {
			missing = append(missing, c)
		}
	}
	var problems []string
	if err := unix.Access(info.Path, unix.W_OK); err != nil {
		problems = append(problems, fmt.Sprintf("%s is not writable by us (%s)", info.Path, errnoName(errnoOf(err))))
	} else if err := unix.Access(filepath.Join(info.Path, "cgroup.procs"), unix.W_OK); err != nil {
		problems = append(problems, fmt.Sprintf("%s/cgroup.procs is not writable by us (%s)", info.Path, errnoName(errnoOf(err))))
	}
	if len(missing) > 0 {
		p := "controllers " + strings.Join(missing, ", ") + " not available in " + info.Path
		if info.Hybrid {
			p += " (hybrid hierarchy: they are bound to cgroup v1)"
		}
		problems = append(problems, p)
	}
	if len(problems) > 0 {
		info.Reason = strings.Join(problems, "; ")
		return info
	}
	info.Delegated = true
	return info
}

// errnoName is the symbolic name of e ("EPERM"). Landlock documents its
// "disabled" error as EOPNOTSUPP, which Linux shares with ENOTSUP, so that
// spelling is used.
func errnoName(e syscall.Errno) string {
	if e == unix.EOPNOTSUPP {
		return "EOPNOTSUPP"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

func readFields(p string) []string {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	return strings.Fields(string(data))
}

// detectSystemd reports whether systemd is the init system (as
// sd_booted(3) decides: /run/systemd/system exists), and whether this
// user has a systemd user manager (its private socket exists), which
// `systemd-run --user` needs.
func detectSystemd() (system, user bool) {
	if fi, err := os.Stat("/run/systemd/system"); err != nil || !fi.IsDir() {
		return false, false
	}
	_, err := os.Stat(fmt.Sprintf("/run/user/%d/systemd/private", os.Getuid()))
	return true, err == nil
}

// userNSLikely is a cheap check that a user namespace can be created,
// from the knobs that usually forbid it; when it says no, the full probe
// decides.
func userNSLikely() bool {
	read := func(p string) (int, bool) {
		b, err := os.ReadFile(p)
		if err != nil {
			return 0, false
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		return n, err == nil
	}
	if n, ok := read(sysctlMaxUserNS); ok && n == 0 {
		return false
	}
	if os.Geteuid() != 0 {
		if n, ok := read(sysctlAppArmorRestrict); ok && n != 0 {
			return false
		}
		if n, ok := read(sysctlUnprivClone); ok && n == 0 {
			return false
		}
	}
	// A seccomp filter on cordon itself usually means a container whose
	// profile blocks user namespaces.
	if b, err := os.ReadFile("/proc/self/status"); err == nil && strings.Contains(string(b), "\nSeccomp:\t2") {
		return false
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil && ProcMasked(b) {
		return false
	}
	return true
}

// ProcMasked reports whether the mount table mountinfo (the text of
// /proc/self/mountinfo) has a mount over a part of /proc, as a container
// runtime makes to mask /proc/kcore, /proc/keys, /proc/sys and the like
// (Docker's default, Kubernetes' procMount Default). The kernel then
// refuses a new /proc in a user namespace ("too revealing"), which every
// bubblewrap run mounts. binfmt_misc, mounted on an empty directory of
// /proc/sys on most hosts, masks nothing.
func ProcMasked(mountinfo []byte) bool {
	for line := range strings.SplitSeq(string(mountinfo), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := f[4]
		if strings.HasPrefix(mp, "/proc/") && mp != "/proc/sys/fs/binfmt_misc" {
			return true
		}
	}
	return false
}
