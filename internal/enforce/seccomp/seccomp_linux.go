//go:build linux

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// errNoTSYNC is wrapped by the error Install returns when the kernel could not
// synchronise the filter to all threads (no seccomp(2) syscall or no
// SECCOMP_FILTER_FLAG_TSYNC, Linux < 3.17) and the filter was installed with
// prctl(PR_SET_SECCOMP) on the calling OS thread only. In that case Install
// leaves the calling goroutine locked to that thread. cordon's helper
// refuses to run the command then.
var errNoTSYNC = errors.New("seccomp: filter installed on the calling thread only (TSYNC unavailable)")

// sysEntry is one syscall name and its number on the running architecture.
type sysEntry struct {
	name string
	nr   uint32
}

// Offsets into struct seccomp_data (little-endian: the low word of an
// argument comes first).
const (
	offNr   = 0
	offArch = 4
)

func offArgLow(i int) uint32 { return uint32(16 + 8*i) }

// Values returned by the filter.
const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// Personas personality(2) may still set: PER_LINUX, PER_LINUX32, UNAME26,
// UNAME26|PER_LINUX32 and the 0xffffffff query (as in Docker's profile).
var allowedPersonalities = []uint32{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// asm is a tiny classic-BPF assembler with forward jumps to named labels.
type asm struct {
	ins    []unix.SockFilter
	labels map[string]int
	fixups []fixup
}

type fixup struct {
	at     int
	jt, jf string
}

func (a *asm) stmt(code uint16, k uint32) {
	a.ins = append(a.ins, unix.SockFilter{Code: code, K: k})
}

// jmp emits a conditional jump; an empty label means the next instruction.
func (a *asm) jmp(code uint16, k uint32, jt, jf string) {
	a.fixups = append(a.fixups, fixup{at: len(a.ins), jt: jt, jf: jf})
	a.ins = append(a.ins, unix.SockFilter{Code: code, K: k})
}

func (a *asm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.ins)
}

func (a *asm) resolve(from int, name string) (uint8, error) {
	if name == "" {
		return 0, nil
	}
	to, ok := a.labels[name]
	if !ok {
		return 0, fmt.Errorf("seccomp: undefined label %q", name)
	}
	d := to - from - 1
	if d < 0 || d > 255 {
		return 0, fmt.Errorf("seccomp: jump to %q out of range (%d)", name, d)
	}
	return uint8(d), nil
}

func (a *asm) assemble() ([]unix.SockFilter, error) {
	for _, f := range a.fixups {
		jt, err := a.resolve(f.at, f.jt)
		if err != nil {
			return nil, err
		}
		jf, err := a.resolve(f.at, f.jf)
		if err != nil {
			return nil, err
		}
		a.ins[f.at].Jt, a.ins[f.at].Jf = jt, jf
	}
	if len(a.ins) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp: program too long (%d instructions)", len(a.ins))
	}
	return a.ins, nil
}

const (
	ldAbs   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeqK    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jsetK   = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	retK    = unix.BPF_RET | unix.BPF_K
	labAll  = "allow"
	labDen  = "deny"
	labNos  = "enosys"
	labNU   = "newuser"
	labIoc  = "ioctl"
	labPer  = "personality"
	labSock = "socket"
	// labStream checks an internet socket's type and protocol.
	labStream = "stream"
	// labFastOpen2 and labFastOpen3 refuse MSG_FASTOPEN in the flags of
	// sendmsg (args[2]) and of sendto and sendmmsg (args[3]).
	labFastOpen2 = "fastopen2"
	labFastOpen3 = "fastopen3"
	aluAndK      = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
)

func denied(strict bool) []sysEntry {
	l := append(append([]sysEntry{}, commonDenied...), archDenied...)
	if strict {
		l = append(append(l, commonStrict...), archStrict...)
	}
	return l
}

func unsupported() error {
	return fmt.Errorf("seccomp: not supported on %s/%s (only linux/amd64 and linux/arm64)", runtime.GOOS, runtime.GOARCH)
}

// Options select the filter's extra rules.
type Options struct {
	// Strict adds the strict-mode list.
	Strict bool `json:"strict,omitempty"`
	// DenyNetwork refuses socket(2) for AF_INET, AF_INET6 and AF_PACKET
	// with EPERM: the Landlock-only backend has no network namespace, and
	// Landlock's TCP rules do not cover UDP, raw sockets or MPTCP.
	DenyNetwork bool `json:"deny_network,omitempty"`
	// DenyUnix refuses socket(2) for AF_UNIX with EPERM: without a mount
	// namespace, and below Landlock ABI 9, nothing else keeps the command
	// from connecting to the host's pathname unix sockets (ssh-agent,
	// docker) by name. The filter cannot read connect's address (a
	// pointer), so it refuses the socket instead. socketpair(2) stays
	// allowed: its two ends are connected to each other only.
	DenyUnix bool `json:"deny_unix,omitempty"`
	// StreamOnly lets socket(2) create AF_INET and AF_INET6 sockets only
	// of type SOCK_STREAM (SOCK_NONBLOCK and SOCK_CLOEXEC aside) with
	// protocol 0 or IPPROTO_TCP, and refuses AF_PACKET, with EPERM: the
	// Landlock-only backend's filtered network, where Landlock confines
	// TCP to the proxy's ports and nothing confines UDP, raw sockets,
	// SCTP or MPTCP. It also refuses sendto, sendmsg and sendmmsg with
	// MSG_FASTOPEN: TCP Fast Open connects from there, without the LSM
	// hook of connect(2), so Landlock's TCP connect rule would not apply.
	// DenyNetwork, when also set, wins. It implies DenyOtherFamilies.
	StreamOnly bool `json:"stream_only,omitempty"`
	// DenyOtherFamilies refuses socket(2), with EPERM, for every address
	// family but AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK (which the
	// other options may refuse too): a network namespace does not
	// confine AF_VSOCK (the hypervisor's host) nor Bluetooth, and an
	// AF_SMC socket makes its TCP connection inside the kernel, where
	// Landlock's TCP rules do not look.
	DenyOtherFamilies bool `json:"deny_other_families,omitempty"`
}

// commonFamilies are the address families DenyOtherFamilies leaves.
var commonFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

// Filter returns the classic-BPF seccomp program for o on the running
// architecture (see the package documentation for what it denies). It
// fails on architectures other than amd64 and arm64.
func Filter(o Options) ([]unix.SockFilter, error) {
	strict := o.Strict
	if !archSupported {
		return nil, unsupported()
	}
	var a asm
	// Foreign architectures (i386 via int 0x80 on amd64, arm32 compat on
	// arm64): their syscall numbers mean something else, so every call fails.
	a.stmt(ldAbs, offArch)
	a.jmp(jeqK, nativeArch, "", labDen)
	a.stmt(ldAbs, offNr)
	if hasX32 {
		a.jmp(jsetK, x32SyscallBit, labDen, "")
	}
	for _, s := range denied(strict) {
		a.jmp(jeqK, s.nr, labDen, "")
	}
	a.jmp(jeqK, sysClone3, labNos, "")
	a.jmp(jeqK, sysClone, labNU, "")
	a.jmp(jeqK, sysUnshare, labNU, "")
	a.jmp(jeqK, sysIoctl, labIoc, "")
	a.jmp(jeqK, sysPersonality, labPer, "")
	var families []uint32
	if o.DenyNetwork {
		families = append(families, unix.AF_INET, unix.AF_INET6, unix.AF_PACKET)
	}
	if o.DenyUnix {
		families = append(families, unix.AF_UNIX)
	}
	streamOnly := o.StreamOnly && !o.DenyNetwork
	if streamOnly {
		families = append(families, unix.AF_PACKET)
	}
	others := o.DenyOtherFamilies || o.StreamOnly
	checkSocket := len(families) > 0 || others
	if checkSocket {
		a.jmp(jeqK, unix.SYS_SOCKET, labSock, "")
	}
	if streamOnly {
		// TCP Fast Open connects from sendto/sendmsg without the LSM
		// hook of connect(2): Landlock's TCP connect rule never sees it.
		a.jmp(jeqK, unix.SYS_SENDTO, labFastOpen3, "")
		a.jmp(jeqK, unix.SYS_SENDMMSG, labFastOpen3, "")
		a.jmp(jeqK, unix.SYS_SENDMSG, labFastOpen2, "")
	}
	a.stmt(retK, retAllow)

	if checkSocket {
		// socket: args[0] is the address family.
		a.label(labSock)
		a.stmt(ldAbs, offArgLow(0))
		for _, f := range families {
			a.jmp(jeqK, f, labDen, "")
		}
		if streamOnly {
			a.jmp(jeqK, unix.AF_INET, labStream, "")
			a.jmp(jeqK, unix.AF_INET6, labStream, "")
		}
		if others {
			// Only the families left may create a socket.
			for _, f := range commonFamilies {
				a.jmp(jeqK, f, labAll, "")
			}
			a.stmt(retK, retEPERM)
		} else {
			a.stmt(retK, retAllow)
		}
	}
	if streamOnly {
		// An internet socket: args[1] is the type (with SOCK_NONBLOCK
		// and SOCK_CLOEXEC masked off), args[2] the protocol.
		a.label(labStream)
		a.stmt(ldAbs, offArgLow(1))
		a.stmt(aluAndK, ^uint32(unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC))
		a.jmp(jeqK, unix.SOCK_STREAM, "", labDen)
		a.stmt(ldAbs, offArgLow(2))
		a.jmp(jeqK, 0, labAll, "")
		a.jmp(jeqK, unix.IPPROTO_TCP, labAll, labDen)

		// sendto, sendmmsg (args[3]) and sendmsg (args[2]) with
		// MSG_FASTOPEN: a connect that Landlock cannot see.
		a.label(labFastOpen3)
		a.stmt(ldAbs, offArgLow(3))
		a.jmp(jsetK, unix.MSG_FASTOPEN, labDen, labAll)
		a.label(labFastOpen2)
		a.stmt(ldAbs, offArgLow(2))
		a.jmp(jsetK, unix.MSG_FASTOPEN, labDen, labAll)
	}

	// clone and unshare: args[0] are the flags.
	a.label(labNU)
	a.stmt(ldAbs, offArgLow(0))
	a.jmp(jsetK, unix.CLONE_NEWUSER, labDen, labAll)

	// ioctl: args[1] is an unsigned int request; compare the low 32 bits.
	a.label(labIoc)
	a.stmt(ldAbs, offArgLow(1))
	a.jmp(jeqK, unix.TIOCSTI, labDen, "")
	a.jmp(jeqK, unix.TIOCLINUX, labDen, labAll)

	// personality: args[0] is an unsigned int persona.
	a.label(labPer)
	a.stmt(ldAbs, offArgLow(0))
	for i, p := range allowedPersonalities {
		jf := ""
		if i == len(allowedPersonalities)-1 {
			jf = labDen
		}
		a.jmp(jeqK, p, labAll, jf)
	}

	a.label(labAll)
	a.stmt(retK, retAllow)
	a.label(labDen)
	a.stmt(retK, retEPERM)
	a.label(labNos)
	a.stmt(retK, retENOSYS)
	return a.assemble()
}

// Install sets PR_SET_NO_NEW_PRIVS and installs the filter for o with
// seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC), so that it
// applies to every thread of the (Go) process and to everything it execs.
// The filter cannot be removed afterwards.
//
// If the kernel lacks seccomp(2) or TSYNC, Install falls back to
// prctl(PR_SET_SECCOMP), which covers only the calling thread, and returns an
// error wrapping errNoTSYNC (see there). Any other failure returns an error
// and leaves no filter installed.
func Install(o Options) error {
	prog, err := Filter(o)
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
		runtime.UnlockOSThread()
		return fmt.Errorf("seccomp: prctl(PR_SET_NO_NEW_PRIVS): %w", e)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	switch {
	case e == 0 && r == 0:
		runtime.UnlockOSThread()
		return nil
	case e == 0:
		// TSYNC failed: r is the id of a thread that could not be synchronised.
		runtime.UnlockOSThread()
		return fmt.Errorf("seccomp: thread %d could not be synchronised (TSYNC)", r)
	case e == unix.ENOSYS || e == unix.EINVAL:
		_, _, e2 := unix.Syscall6(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0, 0)
		runtime.KeepAlive(prog)
		if e2 != 0 {
			runtime.UnlockOSThread()
			if e2 == unix.EINVAL {
				return fmt.Errorf("seccomp: kernel lacks seccomp filter support: %w", e2)
			}
			return fmt.Errorf("seccomp: prctl(PR_SET_SECCOMP): %w", e2)
		}
		// The filter exists on this thread only: keep the goroutine on it.
		return fmt.Errorf("%w (seccomp(2): %v)", errNoTSYNC, e)
	default:
		runtime.UnlockOSThread()
		return fmt.Errorf("seccomp: seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %w", e)
	}
}

// Describe lists what the filter for o denies, one human-readable entry
// per syscall or rule, in filter order (for `cordon policy --explain`). It
// returns nil on unsupported architectures.
func Describe(o Options) []string {
	strict := o.Strict
	if !archSupported {
		return nil
	}
	out := []string{"all syscalls from a foreign architecture (e.g. i386 via int 0x80)"}
	if hasX32 {
		out = append(out, "all x32 ABI syscalls")
	}
	for _, s := range denied(strict) {
		out = append(out, s.name)
	}
	out = append(out,
		"clone3 (ENOSYS, so libc falls back to clone)",
		"clone with CLONE_NEWUSER",
		"unshare with CLONE_NEWUSER",
		"ioctl TIOCSTI and TIOCLINUX",
		"personality other than PER_LINUX, PER_LINUX32, UNAME26 and the 0xffffffff query",
	)
	if o.DenyNetwork {
		out = append(out, "socket for AF_INET, AF_INET6 and AF_PACKET")
	}
	if o.StreamOnly && !o.DenyNetwork {
		out = append(out, "socket for AF_PACKET, and for AF_INET and AF_INET6 unless SOCK_STREAM with protocol 0 or IPPROTO_TCP (no UDP, raw, SCTP or MPTCP)",
			"sendto, sendmsg and sendmmsg with MSG_FASTOPEN (TCP Fast Open connects without connect(2), where Landlock's TCP rules would not see it)")
	}
	if o.DenyOtherFamilies || o.StreamOnly {
		out = append(out, "socket for every family but the unix, internet and netlink ones (no AF_VSOCK, AF_SMC, Bluetooth, ...)")
	}
	if o.DenyUnix {
		out = append(out, "socket for AF_UNIX (socketpair stays allowed)")
	}
	return out
}
