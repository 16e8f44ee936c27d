//go:build linux

package monitor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/enforce/seccomp"
	"golang.org/x/sys/unix"
)

// reply is the supervisor's answer to one call.
type reply struct {
	kind  replyKind
	val   int64
	errno unix.Errno
	// fd is the descriptor to hand in (replyFd), closed once sent.
	fd      int
	cloexec bool
	// async: the call is answered later, by another goroutine (an open
	// of a FIFO, which waits for its other end).
	async func(send func(reply))
}

type replyKind int

const (
	replyContinue replyKind = iota
	replyVal
	replyFd
	replyAsync
)

func fail(e unix.Errno) reply { return reply{kind: replyVal, errno: e} }
func done(v int64) reply      { return reply{kind: replyVal, val: v} }

// supervisor performs the supervised calls of a sandboxed process tree
// (Options.Supervise).
type supervisor struct {
	pol Policy
	// root is "/" (O_PATH): the callers' root, which they cannot change
	// (no chroot without capabilities); rootStat identifies it.
	root     int
	rootStat unix.Stat_t
	// self is this process's id: its own /proc entries are never the
	// caller's.
	self int
	// redirects are Options.Redirects.
	redirects []Redirect
	// sharedUmask is the process's umask when the serving thread could
	// not get a file-system context of its own (prepareThread): the
	// kernel then applies it to what the supervisor creates, on top of
	// the caller's, and fixMode gives back the bits the caller asked for.
	sharedUmask uint32
}

func newSupervisor(pol Policy, redirects []Redirect) (*supervisor, error) {
	if err := SuperviseAvailable(); err != nil {
		return nil, err
	}
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	s := &supervisor{pol: pol, root: root, self: os.Getpid(), redirects: redirects}
	if err := unix.Fstat(root, &s.rootStat); err != nil {
		unix.Close(root)
		return nil, err
	}
	return s, nil
}

func (s *supervisor) close() { unix.Close(s.root) }

// SuperviseAvailable says why this kernel cannot serve Options.Supervise,
// or nil: the supervisor hands each file it opens in with its answer
// (SECCOMP_ADDFD_FLAG_SEND, Linux 5.14). A release it cannot read counts
// as new enough (the supervised calls would then fail and say so).
func SuperviseAvailable() error {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return nil
	}
	rel := unix.ByteSliceToString(u.Release[:])
	var major, minor int
	if _, err := fmt.Sscanf(rel, "%d.%d", &major, &minor); err != nil {
		return nil
	}
	if major > 5 || major == 5 && minor >= 14 {
		return nil
	}
	return fmt.Errorf("this kernel (%s) cannot hand an opened file to the command with its answer (SECCOMP_ADDFD_FLAG_SEND needs Linux 5.14)", rel)
}

// prepareThread makes the calling thread, locked to the serving goroutine
// for good (it ends with it), act with no more rights than the sandboxed
// process: its effective capabilities are cleared (root's
// CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN would reach files the command,
// whose capabilities the helper dropped, cannot), and its umask is 0 in a
// file-system context of its own, the caller's umask being applied by
// hand. Where unshare is refused (the default seccomp profile of Docker
// and containerd refuses it to a container without CAP_SYS_ADMIN), the
// umask stays the process's and is reported as shared: s.fixMode then
// corrects what it took away.
func prepareThread() (shared bool, err error) {
	runtime.LockOSThread()
	if err := unshareFS(unix.CLONE_FS); err != nil {
		if !errors.Is(err, unix.EPERM) {
			return false, err
		}
		shared = true
	} else {
		unix.Umask(0)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return shared, err
	}
	if data[0].Effective == 0 && data[1].Effective == 0 {
		return shared, nil
	}
	data[0].Effective, data[1].Effective = 0, 0
	return shared, unix.Capset(&hdr, &data[0])
}

// unshareFS is unix.Unshare; a test makes it fail as a container's
// seccomp profile does.
var unshareFS = unix.Unshare

// fixMode gives a file the supervisor just created (fd, or else the name
// in the directory pfd) the permission bits want when the process's umask,
// shared with the serving thread, took some of them away. The file was
// created with fewer bits than asked, never more.
func (s *supervisor) fixMode(fd, pfd int, name string, want uint32) {
	want &= 0o7777
	if s.sharedUmask&want == 0 {
		return
	}
	if fd >= 0 {
		_ = unix.Fchmod(fd, want)
		return
	}
	o, e := openat2(pfd, name, unix.O_PATH|unix.O_NOFOLLOW, 0, unix.RESOLVE_BENEATH)
	if e != 0 {
		return
	}
	defer unix.Close(o)
	_ = unix.Fchmodat(unix.AT_FDCWD, fdPath(o), want, 0)
}

// answer sends r for notification id on the listener fd.
func answer(fd int, id uint64, r reply) {
	switch r.kind {
	case replyContinue:
		_ = proceed(fd, id)
	case replyVal:
		_ = respond(fd, id, r.val, r.errno)
	case replyFd:
		if err := sendFd(fd, id, r.fd, r.cloexec); err != nil {
			var e unix.Errno
			if errors.As(err, &e) && e != unix.ENOENT {
				_ = respond(fd, id, 0, e)
			}
		}
		unix.Close(r.fd)
	case replyAsync:
		// The goroutine's thread keeps its capabilities: what it does
		// was decided here, and the FIFO's open was checked as the
		// caller (the object's policy); the kernel checks its mode
		// again for the supervisor.
		go r.async(func(r reply) { answer(fd, id, r) })
	}
}

// handle decides the call n (of the supervised call c) and says how to
// answer it. valid is checked after the caller's memory and /proc
// entries were read and before anything is performed: the caller is
// still the one that made the call.
func (s *supervisor) handle(n *notif, c seccomp.Call, valid func() bool) reply {
	tid := int(n.Pid)
	switch c.Kind {
	case seccomp.CallExec, seccomp.CallAddr:
		// The kernel's layers decide; the path or address only names
		// what they check (an executable is opened by the kernel, which
		// Landlock confines; a script's interpreter opens it through
		// here).
		return reply{kind: replyContinue}
	case seccomp.CallOpen, seccomp.CallOpenHow:
		return s.open(tid, n, c, valid)
	case seccomp.CallMetaFd:
		return s.metaFd(tid, n, c, valid)
	}
	switch c.Name {
	case "creat":
		return s.open(tid, n, c, valid)
	case "truncate":
		return s.truncate(tid, n, valid)
	case "chmod", "fchmodat", "fchmodat2", "chown", "lchown", "fchownat",
		"utimensat", "utime", "utimes", "futimesat",
		"setxattr", "lsetxattr", "removexattr", "lremovexattr":
		return s.meta(tid, n, c, valid)
	}
	return s.name(tid, n, c, valid)
}

// at returns the descriptor a path of thread tid is walked from, and
// whether the walk may follow /proc's magic links. An absolute path is
// walked from the root, after /proc/self, /proc/thread-self, /dev/fd and
// /dev/std* are named by the caller's own ids (walked here, they would
// name the supervisor's); only a path into the caller's own /proc entries
// may follow magic links. A relative one is walked from the caller's
// working directory or dirfd. The descriptor is closed by the caller of
// at unless it is s.root.
func (s *supervisor) at(tid int, dirfd int32, p string) (base int, walk string, magic bool, e unix.Errno) {
	if p == "" {
		return -1, "", false, unix.ENOENT
	}
	if p[0] == '/' {
		var st unix.Stat_t
		if unix.Stat("/proc/"+strconv.Itoa(tid)+"/root", &st) != nil || st.Dev != s.rootStat.Dev || st.Ino != s.rootStat.Ino {
			return -1, "", false, unix.EACCES
		}
		p, magic = s.ownProc(tid, p)
		return s.root, strings.TrimLeft(p, "/"), magic, 0
	}
	name := "cwd"
	if dirfd != unix.AT_FDCWD {
		if dirfd < 0 {
			return -1, "", false, unix.EBADF
		}
		name = "fd/" + strconv.Itoa(int(dirfd))
	}
	fd, err := unix.Open("/proc/"+strconv.Itoa(tid)+"/"+name, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if dirfd != unix.AT_FDCWD {
			return -1, "", false, unix.EBADF
		}
		return -1, "", false, errnoOf(err)
	}
	return fd, p, false, 0
}

// ownProc rewrites an absolute path into the caller's own /proc entries
// with its ids, and reports whether it leads there.
func (s *supervisor) ownProc(tid int, p string) (string, bool) {
	rewrite := func(prefix, with string) (string, bool) {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			return with + p[len(prefix):], true
		}
		return p, false
	}
	var ok bool
	for _, r := range [...]struct{ prefix, self string }{
		{"/proc/self", ""}, {"/proc/thread-self", "task"},
		{"/dev/fd", "fd"}, {"/dev/stdin", "fd/0"}, {"/dev/stdout", "fd/1"}, {"/dev/stderr", "fd/2"},
	} {
		if !strings.HasPrefix(p, r.prefix) {
			continue
		}
		tg := tgidOf(tid)
		if tg <= 0 {
			return p, false
		}
		with := "/proc/" + strconv.Itoa(tg)
		switch r.self {
		case "":
		case "task":
			with += "/task/" + strconv.Itoa(tid)
		default:
			with += "/" + r.self
		}
		if p, ok = rewrite(r.prefix, with); ok {
			return p, true
		}
	}
	if rest, found := strings.CutPrefix(p, "/proc/"); found {
		id, _, _ := strings.Cut(rest, "/")
		if n, err := strconv.Atoi(id); err == nil && (n == tid || n == tgidOf(tid)) {
			return p, true
		}
	}
	return p, false
}

// tgidOf is the process (thread group) id of thread tid, 0 if unknown.
func tgidOf(tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0
	}
	return statusField(b, "Tgid:")
}

// umaskOf is thread tid's umask (0o777 if it cannot be read: what it
// creates is then private to it).
func umaskOf(tid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0o777
	}
	i := bytes.Index(b, []byte("Umask:"))
	if i < 0 {
		return 0o777
	}
	line, _, _ := bytes.Cut(b[i+len("Umask:"):], []byte("\n"))
	u, err := strconv.ParseUint(string(bytes.TrimSpace(line)), 8, 32)
	if err != nil {
		return 0o777
	}
	return u
}

func statusField(b []byte, key string) int {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0
	}
	line, _, _ := bytes.Cut(b[i+len(key):], []byte("\n"))
	n, _ := strconv.Atoi(string(bytes.TrimSpace(line)))
	return n
}

// openat2 opens p below dir, retrying where the kernel asks to.
func openat2(dir int, p string, flags, mode, resolve uint64) (int, unix.Errno) {
	if p == "" {
		p = "."
	}
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolve}
	for {
		fd, err := unix.Openat2(dir, p, &how)
		if err == nil {
			return fd, 0
		}
		e := errnoOf(err)
		if e != unix.EAGAIN && e != unix.EINTR {
			return -1, e
		}
	}
}

func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EACCES
}

// realPath is the path descriptor fd leads to, read back from the kernel;
// false when fd is no file of the tree (a pipe, a socket, an anonymous
// inode, a memfd).
func realPath(fd int) (string, bool) {
	var buf [unix.PathMax]byte
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf[:])
	if err != nil || n == 0 || buf[0] != '/' {
		return "", false
	}
	p := string(buf[:n])
	if strings.HasPrefix(p, "/memfd:") {
		var sfs unix.Statfs_t
		if unix.Fstatfs(fd, &sfs) == nil && sfs.Type != unix.TMPFS_MAGIC && sfs.Type != unix.HUGETLBFS_MAGIC {
			return p, true // a file of that name
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Nlink == 0 {
			return "", false // memfd_create's, on the kernel's internal mount
		}
	}
	return p, true
}

// procEntries are the entries of another process's /proc directory the
// supervisor opens for a caller: those any process may read (ps, top).
// The rest (environ, fd, mem, maps, ...) the kernel grants to whoever
// may trace the process, which Landlock scopes to the sandbox and the
// supervisor is not.
var procEntries = map[string]bool{"stat": true, "status": true, "statm": true, "cmdline": true, "comm": true}

// procAllowed reports whether the caller tid may be given the /proc file
// p: its own process's entries, the global ones, and procEntries (and the
// directories) of another process.
func procAllowed(tid int, p string, dir bool) bool {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return true
	}
	id, sub, _ := strings.Cut(rest, "/")
	n, err := strconv.Atoi(id)
	if err != nil {
		return true // /proc/cpuinfo, /proc/sys/...
	}
	if n == tid || tgidOf(n) == tgidOf(tid) {
		return true
	}
	if sub == "" || dir {
		return true
	}
	if t, rest, ok := strings.Cut(sub, "/"); ok && t == "task" {
		if _, e, ok := strings.Cut(rest, "/"); ok {
			sub = e
		}
	}
	return procEntries[sub]
}

// allow asks the policy about the object fd (a path, or no file of the
// tree, which any access may use) for thread tid.
func (s *supervisor) allow(tid, fd int, a Access) bool {
	p, ok := realPath(fd)
	if !ok {
		return true
	}
	if strings.HasPrefix(p, "/proc/") {
		var st unix.Stat_t
		dir := unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
		if !procAllowed(tid, p, dir) {
			return false
		}
	}
	return s.pol.Allow(p, a)
}

// allowName asks the policy about name in the directory pfd.
func (s *supervisor) allowName(pfd int, name string, a Access) bool {
	p, ok := realPath(pfd)
	if !ok {
		return false
	}
	if p == "/" {
		return s.pol.Allow("/"+name, a)
	}
	return s.pol.Allow(p+"/"+name, a)
}

// allowMove asks the policy about renaming name in odir to nname in ndir.
func (s *supervisor) allowMove(odir int, oname string, ndir int, nname string) bool {
	from, ok1 := realPath(odir)
	to, ok2 := realPath(ndir)
	if !ok1 || !ok2 {
		return false
	}
	join := func(d, n string) string {
		if d == "/" {
			return "/" + n
		}
		return d + "/" + n
	}
	return s.pol.AllowMove(join(from, oname), join(to, nname))
}

// fdPath is the path through which the supervisor reopens its own
// descriptor fd (a magic link: no path string of the caller in it).
func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }
