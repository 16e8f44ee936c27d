//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock"
	lls "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Access rights, built from go-landlock's bits.
const (
	fsRead    = lls.AccessFSExecute | lls.AccessFSReadFile
	fsReadDir = fsRead | lls.AccessFSReadDir
	fsWrite   = lls.AccessFSWriteFile | lls.AccessFSTruncate | lls.AccessFSIoctlDev
	// fsWriteDir leaves out MakeChar and MakeBlock: creating device nodes
	// in a write path (root in the Landlock-only backend) would let the
	// command open any device.
	fsWriteDir = fsWrite | lls.AccessFSRemoveDir | lls.AccessFSRemoveFile |
		lls.AccessFSMakeDir | lls.AccessFSMakeReg | lls.AccessFSMakeSock |
		lls.AccessFSMakeFifo | lls.AccessFSMakeSym | lls.AccessFSRefer
	// fsHandled is every right up to ABI 5. ResolveUnix (ABI 9) is
	// handled only when Rules.RestrictUnix asks for it: under bwrap the
	// mount namespace decides which sockets exist.
	fsHandled   = (1 << 16) - 1
	resolveUnix = lls.AccessFSResolveUnix
	netHandled  = lls.AccessNetBindTCP | lls.AccessNetConnectTCP
)

// ABI returns the kernel's Landlock ABI version: 0 with a nil error when
// Landlock is not built in or not enabled at boot.
func ABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch errno {
	case 0:
		return int(v), nil
	case unix.ENOSYS, unix.EOPNOTSUPP:
		return 0, nil
	default:
		return 0, fmt.Errorf("landlock: probing the ABI version: %w", errno)
	}
}

// Apply restricts the calling process, all its threads and everything it
// later executes to r, using the best Landlock ABI the kernel has, and
// reports what was enforced. Paths that do not exist are skipped and
// listed in Report.Skipped, never an error. On a kernel without Landlock
// it returns a Report with ABI 0, Degraded lines and a nil error.
//
// Apply sets no_new_privs (Landlock requires it without CAP_SYS_ADMIN).
// Call it late in the helper (after rlimits and any other setup that
// needs files the rules do not grant, such as reading the spec or
// resolving the command) and before installing the seccomp filter: the
// seccomp package does not deny the landlock_* syscalls today, but
// applying Landlock first keeps it working if that filter ever tightens.
// Everything done after Apply (listing /proc/self/fd, exec) needs its
// paths granted. Descriptors opened before Apply keep their access.
func Apply(r Rules) (Report, error) {
	var rep Report
	abi, err := ABI()
	if err != nil {
		return rep, err
	}
	rep.ABI = abi
	fs := r.FS()
	net := r.Net()
	mask := fsSupported(abi)

	var rules []ll.Rule
	var handledFS uint64
	if fs {
		handledFS = fsHandled & mask
		var unixRight uint64
		if r.RestrictUnix {
			unixRight = resolveUnix & mask
			handledFS |= unixRight
		}
		add := func(p string, dirRights, fileRights uint64) {
			fi, err := os.Stat(p)
			if err != nil {
				rep.Skipped = append(rep.Skipped, p)
				return
			}
			rights := fileRights
			if fi.IsDir() {
				rights = dirRights
			}
			rules = append(rules, ll.PathAccess(ll.AccessFSSet(rights&mask), p))
		}
		for _, p := range r.ReadOnly {
			add(filepath.Clean(p), fsReadDir, fsRead)
		}
		for _, p := range r.ReadWrite {
			add(filepath.Clean(p), fsReadDir|fsWriteDir|unixRight, fsRead|fsWrite|unixRight)
		}
		if r.StdDevices {
			for _, p := range stdDevices {
				if _, err := os.Stat(p); err != nil {
					continue // not every host has them all; not worth a line
				}
				add(p, fsReadDir|fsWrite, fsRead|fsWrite)
			}
			rep.Terminals = ownTerminals()
			for _, p := range rep.Terminals {
				add(p, fsRead|fsWrite, fsRead|fsWrite)
			}
		}
	}

	var handledNet uint64
	if net && abi >= 4 {
		handledNet = netHandled
		for _, p := range r.ConnectTCP {
			if p < 0 || p > 65535 {
				return rep, fmt.Errorf("landlock: connect port %d out of range", p)
			}
			rules = append(rules, ll.ConnectTCP(uint16(p)))
		}
		for _, p := range r.BindTCP {
			if p < 0 || p > 65535 {
				return rep, fmt.Errorf("landlock: bind port %d out of range", p)
			}
			rules = append(rules, ll.BindTCP(uint16(p)))
		}
	}

	var scoped uint64
	if abi >= 6 {
		if r.ScopeAbstractUnix {
			scoped |= lls.ScopeAbstractUnixSocket
		}
		if r.ScopeSignals {
			scoped |= lls.ScopeSignal
		}
	}

	if abi > 0 && (handledFS != 0 || handledNet != 0 || scoped != 0) {
		cfg, err := ll.NewConfig(ll.AccessFSSet(handledFS), ll.AccessNetSet(handledNet), ll.ScopedSet(scoped))
		if err != nil {
			return rep, fmt.Errorf("landlock: %w", err)
		}
		if err := cfg.BestEffort().Restrict(rules...); err != nil {
			if errors.Is(err, syscall.ENOENT) {
				// A path vanished between the check and the rule.
				return rep, fmt.Errorf("landlock: %w (a path vanished while applying)", err)
			}
			return rep, fmt.Errorf("landlock: %w", err)
		}
		rep.Enforced = true
		rep.FS = handledFS != 0
		rep.Refer = rep.FS && abi >= 2
		rep.Truncate = rep.FS && abi >= 3
		rep.IoctlDev = rep.FS && abi >= 5
		rep.TCP = handledNet != 0
		rep.ScopeSignals = scoped&lls.ScopeSignal != 0
		rep.ScopeAbstractUnix = scoped&lls.ScopeAbstractUnixSocket != 0
		rep.ResolveUnix = handledFS&resolveUnix != 0
	}
	rep.Degraded = degraded(r, rep)
	return rep, nil
}

// degraded words each requested restriction the kernel lacks.
func degraded(r Rules, rep Report) []string {
	var d []string
	if rep.ABI == 0 {
		if r.FS() || r.Net() || r.ScopeSignals || r.ScopeAbstractUnix {
			d = append(d, "Landlock unavailable on this kernel: file-system, TCP and IPC rules not enforced by Landlock")
		}
		return d
	}
	if r.FS() {
		if !rep.Refer {
			d = append(d, fmt.Sprintf("Landlock ABI %d: renaming or linking files between directories fails (EXDEV) (needs ABI 2)", rep.ABI))
		}
		if !rep.Truncate {
			d = append(d, fmt.Sprintf("Landlock ABI %d: truncate outside the write paths not denied (needs ABI 3)", rep.ABI))
		}
		if !rep.IoctlDev {
			d = append(d, fmt.Sprintf("Landlock ABI %d: device ioctls not restricted (needs ABI 5)", rep.ABI))
		}
	}
	if r.Net() && !rep.TCP {
		d = append(d, fmt.Sprintf("Landlock ABI %d: TCP bind/connect not restricted by Landlock (needs ABI 4)", rep.ABI))
	}
	if r.ScopeSignals && !rep.ScopeSignals {
		d = append(d, fmt.Sprintf("Landlock ABI %d: signals to processes outside the sandbox not scoped (needs ABI 6)", rep.ABI))
	}
	if r.ScopeAbstractUnix && !rep.ScopeAbstractUnix {
		d = append(d, fmt.Sprintf("Landlock ABI %d: abstract unix sockets outside the sandbox reachable (needs ABI 6)", rep.ABI))
	}
	if r.RestrictUnix && r.FS() && !rep.ResolveUnix {
		d = append(d, fmt.Sprintf("Landlock ABI %d: pathname unix sockets outside the write paths not restricted by Landlock (needs ABI %d)", rep.ABI, ResolveUnixABI))
	}
	return d
}

// ownTerminals lists the terminal devices under /dev that the calling
// process's stdin, stdout and stderr are open on: the command may reopen
// its own terminal by name (ttyname, /proc/self/fd/0), but no other. A
// descriptor counts when it is a terminal (TCGETS works) and the path it
// was opened by still names the same device.
func ownTerminals() []string {
	var out []string
	for fd := 0; fd <= 2; fd++ {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
			continue
		}
		p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil || !strings.HasPrefix(p, "/dev/") || slices.Contains(out, p) {
			continue
		}
		var byFd, byPath unix.Stat_t
		if unix.Fstat(fd, &byFd) != nil || unix.Stat(p, &byPath) != nil {
			continue
		}
		if byFd.Mode&unix.S_IFMT != unix.S_IFCHR || byPath.Rdev != byFd.Rdev || byPath.Mode&unix.S_IFMT != unix.S_IFCHR {
			continue
		}
		out = append(out, p)
	}
	return out
}
