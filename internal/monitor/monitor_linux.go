//go:build linux

package monitor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cordon-sandbox/cordon/internal/enforce/seccomp"
	"github.com/cordon-sandbox/cordon/internal/subpath"
	"golang.org/x/sys/unix"
)

// Monitor serves one listener.
type Monitor struct {
	fd    int
	stopR int
	stopW int
	calls map[uint32]seccomp.Call
	emit  func(Event)
	opts  Options
	// comms caches the name of each thread's program (Event.Comm), read
	// once, and again after it executes another; at most maxComms.
	comms    map[int]string
	done     chan struct{}
	stopOnce sync.Once
	// sup, when not nil, performs or refuses each supervised call
	// (Options.Supervise).
	sup   *supervisor
	stats struct{ calls, unresolved, tree atomic.Int64 }
	// askFns feeds the thread that walks and opens files on the host for
	// Options.Ask (onCallerThread), started once; Stop closes it.
	askOnce sync.Once
	askFns  chan func()
	// askUmask is the process's umask when that thread shares it (see
	// prepareThread), else 0.
	askUmask uint32
}

// Start serves the listener fd (it takes ownership) in a goroutine of its
// own, calling emit (when not nil) for each Event, in the order the calls
// came, after the call has been answered. It returns an error if it could
// not start; then fd is closed and the watched calls fail with ENOSYS.
func Start(fd int, emit func(Event), opts Options) (*Monitor, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		unix.Close(fd)
		return nil, err
	}
	m := &Monitor{fd: fd, stopR: p[0], stopW: p[1], calls: map[uint32]seccomp.Call{}, emit: emit, opts: opts, comms: map[int]string{}, done: make(chan struct{})}
	calls := seccomp.Watched()
	if opts.Supervise != nil {
		s, err := newSupervisor(opts.Supervise, opts.Redirects)
		if err != nil {
			unix.Close(fd)
			unix.Close(p[0])
			unix.Close(p[1])
			return nil, err
		}
		s.ask = opts.Ask
		m.sup = s
		calls = seccomp.Supervised()
	}
	for _, c := range calls {
		m.calls[c.Nr] = c
	}
	// The caller blocks on every watched call until the answer: waking
	// this thread synchronously (Linux 6.6; older kernels refuse the
	// flag and wake it as any other) cut a shell loop's added time per
	// call by about a third (internal/bench/monitor).
	_ = setSyncWakeUp(fd)
	if m.sup == nil {
		go m.serve()
		return m, nil
	}
	ready := make(chan error, 1)
	go func() {
		// The thread stays locked to this goroutine and ends with it:
		// what prepareThread changed never serves another.
		shared, err := prepareThread()
		if err != nil {
			ready <- err
			close(m.done)
			return
		}
		if shared {
			// This thread's own umask, which the kernel applies to what
			// it creates (the main thread's may differ: a supervisor
			// that ran there before kept its own context).
			m.sup.sharedUmask = uint32(umaskOf(unix.Gettid()))
		}
		ready <- nil
		m.serve()
	}()
	if err := <-ready; err != nil {
		m.sup.close()
		unix.Close(fd)
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, fmt.Errorf("preparing the supervisor's thread: %w", err)
	}
	return m, nil
}

// Stop stops serving, closes the listener and returns what was seen. Calls
// still pending then fail with ENOSYS. It waits for the last Event to be
// emitted; it may be called more than once.
func (m *Monitor) Stop() Stats {
	m.stopOnce.Do(func() {
		_, _ = unix.Write(m.stopW, []byte{0})
		<-m.done
		unix.Close(m.stopW)
		unix.Close(m.stopR)
		unix.Close(m.fd)
		if m.sup != nil {
			m.sup.close()
		}
		m.askOnce.Do(func() {}) // no thread starts after this
		if m.askFns != nil {
			close(m.askFns)
		}
	})
	return Stats{Calls: m.stats.calls.Load(), Unresolved: m.stats.unresolved.Load(), TreeChanges: m.stats.tree.Load()}
}

// TreeChanges is Stats.TreeChanges so far, read while the monitor serves: a
// caller that runs one command after another under the same listener
// takes it before and after each, and a command whose processes are all
// gone with the count unchanged added no name to any directory and
// changed no file's permissions.
func (m *Monitor) TreeChanges() int64 { return m.stats.tree.Load() }

// Done is closed when the monitor has stopped serving: Stop was called,
// or every process of the filter has exited.
func (m *Monitor) Done() <-chan struct{} { return m.done }

func (m *Monitor) serve() {
	defer close(m.done)
	fds := []unix.PollFd{{Fd: int32(m.fd), Events: unix.POLLIN}, {Fd: int32(m.stopR), Events: unix.POLLIN}}
	var n notif
	var evs []Event
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			// POLLHUP: no process of the filter is left.
			return
		}
		if err := recv(m.fd, &n); err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				continue // the caller died meanwhile
			}
			return
		}
		if seccomp.ChangesTree(uint32(n.Data.Nr), n.Data.Args) {
			// Counted before it goes on: Stop's Stats have it.
			m.stats.tree.Add(1)
		}
		if m.sup != nil {
			m.supervise(&n, &evs)
			continue
		}
		if m.emit == nil && m.opts.Ask == nil && !m.redirected(&n) {
			// Only counted (Stats.TreeChanges): nothing to read.
			_ = proceed(m.fd, n.ID)
			m.stats.calls.Add(1)
			continue
		}
		if m.opts.Ask != nil {
			if r, ok := m.askOpen(&n); ok {
				// Asked about: the answer's record is the asker's.
				answer(m.fd, n.ID, r)
				m.stats.calls.Add(1)
				continue
			}
		}
		evs = evs[:0]
		if m.emit != nil {
			// (Without emit, the monitor only performs renames onto a
			// copy: Options.Redirects.)
			evs = m.events(&n, evs)
		}
		if len(evs) > 0 {
			comm := m.comm(int(n.Pid))
			for i := range evs {
				evs[i].Comm = comm
			}
		}
		if c, ok := m.calls[uint32(n.Data.Nr)]; ok && c.Kind == seccomp.CallExec {
			// The program changes: its name is read again at its next
			// call.
			delete(m.comms, int(n.Pid))
		}
		// The process is still the one that made the call: its memory
		// and /proc entries were read from it, not from a successor.
		// (Without emit, nothing read is passed on: not asked.)
		valid := m.emit == nil || idValid(m.fd, n.ID)
		if c, ok := m.calls[uint32(n.Data.Nr)]; ok && c.Path2 != seccomp.NoArg && len(m.opts.Redirects) > 0 {
			// A rename: onto a copy bound in the sandbox, the monitor
			// performs it (Options.Redirects).
			if r, mine := m.renameInto(&n, c); mine {
				answer(m.fd, n.ID, r)
				if r.kind == replyVal && r.errno == 0 {
					// Written into the copy, as the run may: no
					// denial to report (the after-run merge decides
					// what reaches the host).
					evs = evs[:0]
				}
			} else {
				_ = proceed(m.fd, n.ID)
			}
		} else {
			_ = proceed(m.fd, n.ID)
		}
		m.stats.calls.Add(1)
		if !valid {
			m.stats.unresolved.Add(1)
			continue
		}
		for _, ev := range evs {
			// Links are followed once the call went on: the caller
			// does not wait for it, and a link changed meanwhile can at
			// worst mislabel the event.
			m.emit(m.resolved(ev))
		}
	}
}

// redirected reports whether n is a rename the monitor may perform
// itself (Options.Redirects).
func (m *Monitor) redirected(n *notif) bool {
	c, ok := m.calls[uint32(n.Data.Nr)]
	return ok && c.Path2 != seccomp.NoArg && len(m.opts.Redirects) > 0
}

// supervise answers the notification n as the supervisor decides, and
// emits its events (when the monitor also watches); evs is scratch.
func (m *Monitor) supervise(n *notif, evs *[]Event) {
	c, ok := m.calls[uint32(n.Data.Nr)]
	if m.emit != nil {
		*evs = m.events(n, (*evs)[:0])
		if len(*evs) > 0 {
			comm := m.comm(int(n.Pid))
			for i := range *evs {
				(*evs)[i].Comm = comm
			}
		}
		if ok && c.Kind == seccomp.CallExec {
			delete(m.comms, int(n.Pid))
		}
	}
	m.stats.calls.Add(1)
	if !ok {
		_ = proceed(m.fd, n.ID)
		return
	}
	alive := true
	valid := func() bool {
		alive = idValid(m.fd, n.ID)
		return alive
	}
	m.sup.committed = false
	answer(m.fd, n.ID, m.sup.handle(n, c, valid))
	if m.sup.committed {
		// Written into a redirect's copy, as the run may.
		*evs = (*evs)[:0]
	}
	if !alive {
		m.stats.unresolved.Add(1)
		return
	}
	for _, ev := range *evs {
		m.emit(m.resolved(ev))
	}
}

// events decodes the notification n into evs: none when the call does not
// access anything (O_PATH), or when its path could not be read.
func (m *Monitor) events(n *notif, evs []Event) []Event {
	c, ok := m.calls[uint32(n.Data.Nr)]
	if !ok {
		return evs
	}
	pid := int(n.Pid)
	args := n.Data.Args
	ev := Event{Pid: pid, Call: c.Name}
	switch c.Kind {
	case seccomp.CallOpen, seccomp.CallOpenHow:
		flags := args[c.Flags]
		if c.Kind == seccomp.CallOpenHow {
			var b [8]byte
			if !readMem(pid, args[c.Flags], b[:]) {
				m.stats.unresolved.Add(1)
				return evs
			}
			flags = binary.NativeEndian.Uint64(b[:])
		}
		op, ok := openOp(flags)
		if !ok {
			return evs
		}
		ev.Op = op
	case seccomp.CallWrite, seccomp.CallMeta:
		ev.Op = OpWrite
	case seccomp.CallMetaFd:
		return evs
	case seccomp.CallExec:
		ev.Op = OpExec
	case seccomp.CallAddr:
		ev.Op = OpConnect
		if c.Name == "bind" {
			ev.Op = OpBind
		}
		ok := m.address(pid, args[c.Addr], args[c.AddrLen], &ev)
		if !ok {
			return evs
		}
		return append(evs, ev)
	}
	p, ok := m.path(pid, args, c.Dirfd, c.Path)
	if !ok {
		m.stats.unresolved.Add(1)
		return evs
	}
	if (c.Name == "mkdir" || c.Name == "mkdirat") && isDirIn(pid, p) {
		// A directory that is there: mkdir fails with EEXIST and writes
		// nothing (mkdir -p).
		return evs
	}
	ev.Path, ev.follow = p, followsLast(c.Name)
	evs = append(evs, ev)
	if c.Path2 != seccomp.NoArg {
		if p2, ok := m.path(pid, args, c.Dirfd2, c.Path2); ok {
			ev.Path, ev.follow = p2, false
			evs = append(evs, ev)
		} else {
			m.stats.unresolved.Add(1)
		}
	}
	return evs
}

// resolved is ev with Resolved set when its Path lies in Options.FollowIn
// and leads through a symbolic link (the last component's only when the
// call follows it).
func (m *Monitor) resolved(ev Event) Event {
	p := ev.Path
	if p == "" {
		return ev
	}
	for _, dir := range m.opts.FollowIn {
		if subpath.Within(p, dir) {
			if r, ok := resolveIn(ev.Pid, p, ev.follow); ok && r != p {
				ev.Resolved = r
			}
			break
		}
	}
	return ev
}

// maxComms bounds the program names the monitor keeps: past it, the cache
// starts again.
const maxComms = 4096

// comm is the name of pid's program (/proc/PID/comm), read while its call
// waits for the answer, so that a program that ends at once is still
// named; "" if it cannot be read.
func (m *Monitor) comm(pid int) string {
	if c, ok := m.comms[pid]; ok {
		return c
	}
	var buf [64]byte
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/comm", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	n, _ := unix.Read(fd, buf[:])
	unix.Close(fd)
	c := strings.TrimSpace(string(buf[:max(n, 0)]))
	if len(m.comms) >= maxComms {
		clear(m.comms)
	}
	m.comms[pid] = c
	return c
}

// openOp says what an open with flags does: it writes with an access mode
// other than O_RDONLY, or O_CREAT, O_TRUNC or O_TMPFILE; O_PATH accesses
// nothing.
func openOp(flags uint64) (Op, bool) {
	f := int(flags)
	switch {
	case f&unix.O_PATH != 0:
		return "", false
	case f&unix.O_ACCMODE != unix.O_RDONLY, f&(unix.O_CREAT|unix.O_TRUNC) != 0, f&unix.O_TMPFILE == unix.O_TMPFILE:
		return OpWrite, true
	}
	return OpRead, true
}

// path reads the path argument pathArg of pid's call and resolves it
// against the dirfd argument dirArg (NoArg: the working directory).
func (m *Monitor) path(pid int, args [6]uint64, dirArg, pathArg int) (string, bool) {
	p, ok := readString(pid, args[pathArg])
	if !ok {
		return "", false
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), true
	}
	dir := "cwd"
	if dirArg != seccomp.NoArg {
		if fd := int32(args[dirArg]); fd != unix.AT_FDCWD {
			dir = "fd/" + strconv.Itoa(int(fd))
		}
	}
	base, ok := procLink(pid, dir)
	if !ok {
		return "", false
	}
	return filepath.Join(base, p), true
}

// reaches reports whether the absolute path p, opened below root as
// openIn does, is the file want describes; a walk refused for permission
// (EACCES) is taken as yes.
//
// A /proc link's name (a descriptor's, the working directory's) is the
// kernel's, written from the mounts up and from the reader's root: for a
// file on a mount that was detached (every mount of a sandbox once its
// last process ends) it is the path within that mount, "/" for its top;
// for a process whose root is not a mount's top (a chroot), it starts
// above that root. Either names another file in the process's view.
func reaches(root int, p string, want *unix.Stat_t) bool {
	fd, err := openIn(root, p)
	if errors.Is(err, unix.EACCES) {
		return true
	}
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino
}

// address decodes the socket address at addr, n bytes long, into ev: an
// internet address, or a pathname unix socket resolved against the
// working directory. Abstract and unnamed unix sockets and other families
// are not reported.
func (m *Monitor) address(pid int, addr, n uint64, ev *Event) bool {
	if addr == 0 || n < 2 {
		return false
	}
	n = min(n, unix.SizeofSockaddrUnix)
	b := make([]byte, n)
	if !readMem(pid, addr, b) {
		m.stats.unresolved.Add(1)
		return false
	}
	switch binary.NativeEndian.Uint16(b) {
	case unix.AF_INET:
		if n < unix.SizeofSockaddrInet4 {
			return false
		}
		ip := netip.AddrFrom4([4]byte(b[4:8]))
		ev.Addr = netip.AddrPortFrom(ip, binary.BigEndian.Uint16(b[2:4]))
		return true
	case unix.AF_INET6:
		if n < unix.SizeofSockaddrInet6 {
			return false
		}
		ip := netip.AddrFrom16([16]byte(b[8:24])).Unmap()
		ev.Addr = netip.AddrPortFrom(ip, binary.BigEndian.Uint16(b[2:4]))
		return true
	case unix.AF_UNIX:
		name := b[2:]
		if len(name) == 0 || name[0] == 0 {
			return false // unnamed or abstract
		}
		if i := indexNUL(name); i >= 0 {
			name = name[:i]
		}
		p := string(name)
		if !filepath.IsAbs(p) {
			base, ok := procLink(pid, "cwd")
			if !ok {
				m.stats.unresolved.Add(1)
				return false
			}
			p = filepath.Join(base, p)
		}
		ev.Path, ev.follow = filepath.Clean(p), true
		return true
	}
	return false
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// procLink reads /proc/PID/NAME (cwd, fd/N): the path as the process sees
// it; false if it is not a path (a pipe, a socket, a deleted file) or out
// of reach.
func procLink(pid int, name string) (string, bool) {
	var buf [unix.PathMax]byte
	n, err := unix.Readlink("/proc/"+strconv.Itoa(pid)+"/"+name, buf[:])
	if err != nil || n == 0 || buf[0] != '/' {
		return "", false
	}
	s := string(buf[:n])
	if len(s) > len(deleted) && s[len(s)-len(deleted):] == deleted {
		return "", false
	}
	return s, true
}

const deleted = " (deleted)"

// readString reads the NUL-terminated string at addr in pid's memory, at
// most PATH_MAX bytes: first firstRead bytes (most paths are shorter, and
// the kernel copies what it is asked for), then a page at a time, never
// across the end of a page in one read (a string may end just before an
// unmapped page).
func readString(pid int, addr uint64) (string, bool) {
	if addr == 0 {
		return "", false
	}
	var out []byte
	var buf [unix.PathMax]byte
	for len(out) < unix.PathMax {
		chunk := pageSize - int(addr%uint64(pageSize))
		chunk = min(chunk, unix.PathMax-len(out))
		if len(out) == 0 {
			chunk = min(chunk, firstRead)
		}
		if !readMem(pid, addr, buf[:chunk]) {
			return "", false
		}
		if i := indexNUL(buf[:chunk]); i >= 0 {
			return string(append(out, buf[:i]...)), true
		}
		out = append(out, buf[:chunk]...)
		addr += uint64(chunk)
	}
	return "", false
}

var pageSize = unix.Getpagesize()

// firstRead is how much readString reads first.
const firstRead = 256

// readMem fills b from pid's memory at addr.
func readMem(pid int, addr uint64, b []byte) bool {
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	return err == nil && n == len(b)
}

// isDirIn reports whether path is a directory in pid's view of the files
// (its root, /proc/PID/root).
func isDirIn(pid int, path string) bool {
	fi, err := os.Stat(procRoot(pid) + path)
	return err == nil && fi.IsDir()
}

func procRoot(pid int) string { return "/proc/" + strconv.Itoa(pid) + "/root" }

// resolveIn follows the symbolic links of the absolute, clean path p in
// pid's view of the files, as the kernel does: openat2 with
// RESOLVE_IN_ROOT from pid's root (/proc/PID/root), so a link's absolute
// target starts there, then the path the kernel reached, read back from
// the descriptor. The last component is followed only when followLast is
// set. Where the kernel cannot resolve it (a missing file being created, a
// link to a denied path), resolveWalk does, a component at a time. False
// if pid's root is out of reach or the links loop.
func resolveIn(pid int, p string, followLast bool) (string, bool) {
	root, err := unix.Open(procRoot(pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer unix.Close(root)
	dir, last := p, ""
	if !followLast && p != "/" {
		dir, last = filepath.Dir(p), filepath.Base(p)
	}
	fd, err := openIn(root, dir)
	if err != nil {
		// Where the kernel cannot go (a missing or masked directory),
		// the walk still names what the path leads to.
		return resolveWalk(pid, p, followLast)
	}
	defer unix.Close(fd)
	var buf [unix.PathMax]byte
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf[:])
	if err != nil || n == 0 || buf[0] != '/' {
		return "", false
	}
	// The process went on: it may have ended, and its sandbox's mounts
	// been detached, since the descriptor was opened. The name read back
	// then names another file (see reaches), as it does for a process in
	// a chroot.
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || !reaches(root, string(buf[:n]), &st) {
		return "", false
	}
	return filepath.Join(string(buf[:n]), last), true
}

// openIn opens the absolute path p with O_PATH below root as if root were
// "/" (RESOLVE_IN_ROOT), never through a /proc magic link.
func openIn(root int, p string) (int, error) {
	rel := strings.TrimPrefix(p, "/")
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(root, rel, &how)
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// followsLast reports whether the system call follows a symbolic link in
// the last component of its path: opening, executing, truncating and
// changing a file do; creating, removing, renaming and linking a name, and
// lchown, do not.
func followsLast(call string) bool {
	switch call {
	case "open", "openat", "openat2", "creat", "execve", "execveat", "truncate",
		"chmod", "fchmodat", "fchmodat2", "chown", "fchownat", "connect", "sendto":
		return true
	}
	return false
}

// maxLinks bounds the symbolic links resolveWalk follows, as the kernel's
// ELOOP does.
const maxLinks = 40

// resolveWalk is resolveIn one component at a time, for a path the kernel
// could not resolve (a directory the process may not search, such as a
// mask over a denied one): it follows the symbolic links of p in
// pid's view of the files, as the kernel will (a link's absolute target
// from pid's root), the last component's only when followLast is set; a
// missing component ends the walk, the rest taken as written. False if
// pid's root is out of reach or the links loop.
func resolveWalk(pid int, p string, followLast bool) (string, bool) {
	root := procRoot(pid)
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur, links := "/", 0
	for i := 0; i < len(parts); i++ {
		next := filepath.Join(cur, parts[i])
		fi, err := os.Lstat(root + next)
		if err != nil {
			return filepath.Join(append([]string{next}, parts[i+1:]...)...), true
		}
		if fi.Mode()&os.ModeSymlink == 0 || !followLast && i == len(parts)-1 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", false
		}
		t, err := os.Readlink(root + next)
		if err != nil {
			return "", false
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(cur, t)
		}
		parts = append(strings.Split(strings.TrimPrefix(filepath.Clean(t), "/"), "/"), parts[i+1:]...)
		cur, i = "/", -1
	}
	return cur, true
}
