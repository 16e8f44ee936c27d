package launch

import (
	"fmt"
	"net"
	"os"
	"slices"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"golang.org/x/sys/unix"
)

// startNet prepares the run's network before the helper starts: it checks
// that something listens on each forwarded port, compiles the proxy's
// rules, and with HostListen listens on the host for the proxies, with a
// per-run token (listenHost, shared with macOS), and confines the
// command's TCP connect to their ports. It sets the proxy variables in the
// command's environment. The plan is copied where it changes: the
// caller's stays as built.
func (r *sandboxRun) startNet() error {
	n := r.pl.Net
	if n == nil {
		return nil
	}
	if err := checkForwarded(n.MustListen()); err != nil {
		return err
	}
	pl := *r.pl
	nc := *n
	n = &nc
	pl.Net = n
	r.pl = &pl
	pl.Env = n.MergeEnv(pl.Env)
	if !n.Filtered() && !n.DNS && (n.HostListen || len(n.ForwardPorts) == 0) {
		return nil // nothing to serve: the loopback is the sandbox's own
	}
	cr, err := newCredRun(n)
	if err != nil {
		return err
	}
	if cr != nil {
		// The placeholders and the trust bundle: the secrets stay here.
		pl.Env = cr.mergeEnv(pl.Env)
		pl.Spec.Files = append(slices.Clone(pl.Spec.Files), helperspec.File{Path: n.CABundle, Data: cr.bundle})
	}
	uses := r.stdio.CredentialUses
	if !n.HostListen {
		// The helper creates the listeners inside and hands them over
		// (handOver).
		nr, err := newNetRun(n, "", r.stdio.NetEvents, r.stdio.NetAsk, r.stdio.Stderr, cr, uses)
		if err != nil {
			return err
		}
		r.net = nr
		r.afterWait(nr.close)
		return nil
	}
	nr, err := listenHost(n, r.stdio.NetEvents, r.stdio.NetAsk, r.stdio.Stderr, cr, uses)
	if err != nil {
		return err
	}
	r.net = nr
	r.afterWait(nr.close)
	if ll := pl.Spec.Landlock; ll != nil {
		rules := *ll
		rules.ConnectTCP = append(slices.Clone(ll.ConnectTCP), n.HTTPPort, n.SOCKSPort)
		pl.Spec.Landlock = &rules
	}
	pl.Env = cr.mergeEnv(n.MergeEnv(pl.Env)) // with the ports and the token
	return nil
}

// handOver serves the listening descriptors of one listener the helper
// created inside (helperspec.MsgListener); it takes ownership of fds.
func (nr *netRun) handOver(l helperspec.Listener, fds []int) {
	if nr == nil || !slices.ContainsFunc(nr.expected(), func(e helperspec.Listener) bool { return e == l }) {
		closeFds(fds)
		return
	}
	if l.Kind == helperspec.ListenDNS {
		nr.serveDNS(fds)
		return
	}
	for _, fd := range fds {
		// Only a listening TCP socket is served.
		if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || v != 1 {
			_ = unix.Close(fd)
			continue
		}
		f := os.NewFile(uintptr(fd), "listener")
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			nr.warn(fmt.Sprintf("network: the %s listener of port %d: %v", l.Kind, l.Port, err))
			continue
		}
		nr.serve(l.Kind, l.Port, ln)
	}
}

// expected are the listeners the plan asked the helper for.
func (nr *netRun) expected() []helperspec.Listener {
	var out []helperspec.Listener
	if nr.n.Filtered() && !nr.n.HostListen {
		out = append(out, helperspec.Listener{Kind: helperspec.ListenHTTP, Port: nr.n.HTTPPort},
			helperspec.Listener{Kind: helperspec.ListenSOCKS5, Port: nr.n.SOCKSPort})
	}
	if !nr.n.HostListen {
		for _, p := range nr.n.ForwardPorts {
			out = append(out, helperspec.Listener{Kind: helperspec.ListenForward, Port: p})
		}
	}
	if nr.n.DNS {
		out = append(out, helperspec.Listener{Kind: helperspec.ListenDNS, Port: helperspec.DNSPort})
	}
	return out
}

// serveDNS binds the UDP sockets the helper made in the sandbox's network
// namespace (127.0.0.1 first, then ::1) to port 53 and answers there
// (dnsstub). cordon may bind port 53 there where the sandbox may not: it
// owns the user namespace that owns the network namespace (or is root).
// It takes ownership of fds. A socket it cannot bind is closed with a
// warning: a lookup there fails at once anyway, only unnamed.
func (nr *netRun) serveDNS(fds []int) {
	for i, fd := range fds {
		var sa unix.Sockaddr = &unix.SockaddrInet4{Port: helperspec.DNSPort, Addr: [4]byte{127, 0, 0, 1}}
		if i == 1 {
			sa = &unix.SockaddrInet6{Port: helperspec.DNSPort, Addr: [16]byte{15: 1}}
		}
		typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
		if err != nil || typ != unix.SOCK_DGRAM {
			_ = unix.Close(fd)
			continue
		}
		if err := unix.Bind(fd, sa); err != nil {
			_ = unix.Close(fd)
			if i == 0 {
				nr.warn(fmt.Sprintf("network: the denied network's name server could not listen on 127.0.0.1:53 inside (%v): lookups fail at once, but the hosts are not named after the run", err))
			}
			continue
		}
		f := os.NewFile(uintptr(fd), "dns")
		pc, err := net.FilePacketConn(f)
		f.Close()
		if err != nil {
			continue
		}
		nr.servePacket(pc)
	}
}

func closeFds(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}
