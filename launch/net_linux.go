package launch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cordon-sandbox/cordon/helperspec"
	"github.com/cordon-sandbox/cordon/netproxy"
	"github.com/cordon-sandbox/cordon/netrule"
	"github.com/cordon-sandbox/cordon/plan"
	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
)

// netRun is the host side of a run's network (plan.Plan.Net): the
// filtering proxy and the forwarded ports, served on listeners the helper
// handed over from inside the sandbox's network namespace or, with
// plan.Net.HostListen, on the host's 127.0.0.1.
type netRun struct {
	n   *plan.Net
	srv *netproxy.Server

	mu        sync.Mutex
	listeners []net.Listener
	closed    bool
	warn      func(string)
	once      sync.Once
}

// forwardCheckTimeout bounds the connect that checks a forwarded port.
const forwardCheckTimeout = 2 * time.Second

// startNet prepares the run's network before the helper starts: it checks
// that something listens on each forwarded port, compiles the proxy's
// rules, and with HostListen listens on the host for the proxies, with a
// per-run token, and confines the command's TCP connect to their ports.
// It sets the proxy variables in the command's environment. The plan is
// copied where it changes: the caller's stays as built.
func (r *sandboxRun) startNet() error {
	n := r.pl.Net
	if n == nil {
		return nil
	}
	if err := checkForwarded(n.ForwardPorts); err != nil {
		return err
	}
	pl := *r.pl
	nc := *n
	n = &nc
	pl.Net = n
	r.pl = &pl
	pl.Env = n.MergeEnv(pl.Env)
	if !n.Filtered() && (n.HostListen || len(n.ForwardPorts) == 0) {
		return nil // nothing to serve: the loopback is the sandbox's own
	}
	var rules *netrule.Set
	if n.Filtered() {
		var err error
		if rules, err = netrule.Compile(n.Allow, n.Deny); err != nil {
			return fmt.Errorf("network rules: %w", err)
		}
	}
	nr := &netRun{n: n, warn: func(s string) {
		if r.stdio.Stderr != nil {
			fmt.Fprintln(r.stdio.Stderr, "cordon: warning: "+s)
		}
	}}
	cfg := netproxy.Config{Rules: rules, Record: r.stdio.NetEvents}
	if n.HostListen && n.Filtered() {
		tok, err := newToken()
		if err != nil {
			return err
		}
		n.Token, cfg.Token = tok, tok
	}
	nr.srv = netproxy.New(cfg)
	r.net = nr
	r.afterWait(nr.close)
	if n.HostListen && n.Filtered() {
		httpL, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("listening for the HTTP proxy on 127.0.0.1: %w", err)
		}
		nr.serve(helperspec.ListenHTTP, 0, httpL)
		socksL, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("listening for the SOCKS5 proxy on 127.0.0.1: %w", err)
		}
		nr.serve(helperspec.ListenSOCKS5, 0, socksL)
		n.HTTPPort = httpL.Addr().(*net.TCPAddr).Port
		n.SOCKSPort = socksL.Addr().(*net.TCPAddr).Port
		if ll := pl.Spec.Landlock; ll != nil {
			rules := *ll
			rules.ConnectTCP = append(slices.Clone(ll.ConnectTCP), n.HTTPPort, n.SOCKSPort)
			pl.Spec.Landlock = &rules
		}
		pl.Env = n.MergeEnv(pl.Env) // with the ports and the token
	}
	return nil
}

// checkForwarded refuses a forwarded port nothing listens on, on the
// host's 127.0.0.1 or ::1: the command would find it closed anyway, and
// the user learns it before the run.
func checkForwarded(ports []int) error {
	for _, p := range ports {
		ok := false
		for _, host := range []string{"127.0.0.1", "::1"} {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(p)), forwardCheckTimeout)
			if err == nil {
				c.Close()
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("--forward-port %d: nothing listens on the host's 127.0.0.1:%d or [::1]:%d; start the service first, or drop the port", p, p, p)
		}
	}
	return nil
}

// newToken is a per-run secret for the host-side proxies.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making the proxy's token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// serve serves l as kind (port: a forwarded port's number).
func (nr *netRun) serve(kind helperspec.ListenerKind, port int, l net.Listener) {
	nr.mu.Lock()
	defer nr.mu.Unlock()
	if nr.closed {
		l.Close()
		return
	}
	nr.listeners = append(nr.listeners, l)
	var serve func() error
	switch kind {
	case helperspec.ListenHTTP:
		serve = func() error { return nr.srv.ServeHTTP(l) }
	case helperspec.ListenSOCKS5:
		serve = func() error { return nr.srv.ServeSOCKS5(l) }
	case helperspec.ListenForward:
		serve = func() error { return nr.srv.ServeForward(l, port) }
	default:
		l.Close()
		return
	}
	go func() {
		if err := serve(); err != nil && !errors.Is(err, net.ErrClosed) && !nr.isClosed() {
			nr.warn(fmt.Sprintf("network: serving the %s listener stopped: %v", kind, err))
		}
	}()
}

func (nr *netRun) isClosed() bool {
	nr.mu.Lock()
	defer nr.mu.Unlock()
	return nr.closed
}

// handOver serves the listening descriptors of one listener the helper
// created inside (helperspec.MsgListener); it takes ownership of fds.
func (nr *netRun) handOver(l helperspec.Listener, fds []int) {
	if nr == nil || !slices.ContainsFunc(nr.expected(), func(e helperspec.Listener) bool { return e == l }) {
		closeFds(fds)
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
	return out
}

// close stops serving: the listeners, every open tunnel, the proxy's
// goroutines. It is idempotent.
func (nr *netRun) close() {
	if nr == nil {
		return
	}
	nr.once.Do(func() {
		nr.mu.Lock()
		nr.closed = true
		ls := nr.listeners
		nr.mu.Unlock()
		for _, l := range ls {
			l.Close()
		}
		_ = nr.srv.Close()
	})
}

// refusals are the run's distinct refused hosts and ports, once the proxy
// has stopped.
func (nr *netRun) refusals() []result.NetRefusal {
	if nr == nil || !nr.n.Filtered() {
		return nil
	}
	var out []result.NetRefusal
	for _, f := range nr.srv.Refusals() {
		out = append(out, result.NetRefusal{Host: f.Host, Port: f.Port, Rule: f.Rule, Allow: f.Allow, Hint: f.Hint})
	}
	return out
}

// refusedMore counts the refused requests refusals does not list.
func (nr *netRun) refusedMore() int {
	if nr == nil || !nr.n.Filtered() {
		return 0
	}
	return nr.srv.RefusedMore()
}

func closeFds(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}
