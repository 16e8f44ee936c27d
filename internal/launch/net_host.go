//go:build linux || darwin

package launch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/net/dnsstub"
	"github.com/cordon-sandbox/cordon/internal/net/netproxy"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// This file is the part of a run's network that Linux and macOS share:
// the filtering proxy served on listeners, and, without a network
// namespace (plan.Net.HostListen: the Landlock-only backend, Seatbelt),
// its two listeners on the host's 127.0.0.1 with a per-run token. It uses
// no Linux-only call: the Linux tests of the Landlock-only backend's
// filtered network run this code as macOS does.

// netRun is the host side of a run's network (plan.Plan.Net): the
// filtering proxy and the forwarded ports, served on listeners the helper
// handed over from inside the sandbox's network namespace or, with
// plan.Net.HostListen, on the host's 127.0.0.1.
type netRun struct {
	n   *plan.Net
	srv *netproxy.Server
	// dns is the denied network's name server (plan.Net.DNS), or nil.
	dns *dnsstub.Server

	mu        sync.Mutex
	listeners []net.Listener
	packets   []net.PacketConn
	closed    bool
	warn      func(string)
	once      sync.Once
	// bundle is the credentials' trust bundle a Seatbelt run writes
	// itself (see writeBundle); nil otherwise.
	bundle *helperspec.File
}

// forwardCheckTimeout bounds the connect that checks a forwarded port.
const forwardCheckTimeout = 2 * time.Second

// newNetRun compiles n's rules (in filtered mode) and makes the proxy,
// which requires token when it is not "" and passes each decision to
// record; it serves nothing yet. Warnings go to stderr.
func newNetRun(n *plan.Net, token string, record func(netproxy.Event), askFn func(context.Context, string, int) bool, stderr io.Writer, cr *credRun, uses func(netproxy.CredentialUse)) (*netRun, error) {
	var rules *netrule.Set
	if n.Filtered() {
		var err error
		if rules, err = netrule.Compile(n.Allow, n.Deny); err != nil {
			return nil, fmt.Errorf("network rules: %w", err)
		}
		rules.PrivateNames = n.PrivateNames
	}
	nr := &netRun{n: n, warn: func(s string) {
		if stderr != nil {
			fmt.Fprintln(stderr, "cordon: warning: "+s)
		}
	}}
	cfg := netproxy.Config{Rules: rules, Token: token, Record: record, RecordUse: uses, Ask: askFn}
	if cr != nil {
		cfg.Credentials, cfg.CA = cr.bindings, cr.ca
	}
	nr.srv = netproxy.New(cfg)
	if n.DNS {
		// The sandbox's own host name is no host the command wanted.
		nr.dns = &dnsstub.Server{Skip: func(name string) bool { return name == plan.SandboxHostname }}
		if record != nil {
			rule := nr.denyRule()
			nr.dns.OnName = func(name string) {
				record(netproxy.Event{Time: time.Now(), Protocol: netproxy.DNSLookup, Host: name, Rule: rule,
					Reason: "the network is denied: the lookup of " + name + " was answered \"not found\""})
			}
		}
	}
	return nr, nil
}

// listenHost starts the proxies of n, a filtered network with HostListen,
// on the host's 127.0.0.1: it makes a per-run token, listens for the HTTP
// and SOCKS5 proxies on ports the system chooses, serves them, and sets
// n.Token, n.HTTPPort and n.SOCKSPort. The caller closes the netRun
// returned after the run; on an error nothing is left listening.
func listenHost(n *plan.Net, record func(netproxy.Event), askFn func(context.Context, string, int) bool, stderr io.Writer, cr *credRun, uses func(netproxy.CredentialUse)) (*netRun, error) {
	if !n.Filtered() || !n.HostListen {
		return nil, errors.New("launch: the proxies listen on the host only for a filtered network with HostListen")
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	nr, err := newNetRun(n, token, record, askFn, stderr, cr, uses)
	if err != nil {
		return nil, err
	}
	ports := map[helperspec.ListenerKind]int{}
	for _, kind := range []helperspec.ListenerKind{helperspec.ListenHTTP, helperspec.ListenSOCKS5} {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			nr.close()
			return nil, fmt.Errorf("listening for the %s proxy on 127.0.0.1: %w", proxyName(kind), err)
		}
		nr.serve(kind, 0, l)
		ports[kind] = l.Addr().(*net.TCPAddr).Port
	}
	n.Token = token
	n.HTTPPort, n.SOCKSPort = ports[helperspec.ListenHTTP], ports[helperspec.ListenSOCKS5]
	return nr, nil
}

// proxyName names the proxy a listener of kind serves, for messages.
func proxyName(kind helperspec.ListenerKind) string {
	if kind == helperspec.ListenSOCKS5 {
		return "SOCKS5"
	}
	return "HTTP"
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

// servePacket answers the denied network's lookups on pc (nr.dns).
func (nr *netRun) servePacket(pc net.PacketConn) {
	nr.mu.Lock()
	defer nr.mu.Unlock()
	if nr.closed || nr.dns == nil {
		pc.Close()
		return
	}
	nr.packets = append(nr.packets, pc)
	go func() { _ = nr.dns.Serve(pc) }()
}

func (nr *netRun) isClosed() bool {
	nr.mu.Lock()
	defer nr.mu.Unlock()
	return nr.closed
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
		ls, ps := nr.listeners, nr.packets
		nr.mu.Unlock()
		for _, l := range ls {
			l.Close()
		}
		for _, p := range ps {
			p.Close()
		}
		_ = nr.srv.Close()
	})
}

// refusals are the run's distinct refused hosts and ports, once the proxy
// has stopped.
func (nr *netRun) refusals() []result.NetRefusal {
	if nr == nil {
		return nil
	}
	if nr.dns != nil {
		return nr.lookups()
	}
	if !nr.n.Filtered() {
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
	if nr != nil && nr.dns != nil {
		_, more := nr.dns.Names()
		return more
	}
	if nr == nil || !nr.n.Filtered() {
		return 0
	}
	return nr.srv.RefusedMore()
}

// lookups are the names the command looked up on a denied network, once
// the name server has stopped, each with the advice that would allow it.
func (nr *netRun) lookups() []result.NetRefusal {
	names, _ := nr.dns.Names()
	rule := nr.denyRule()
	var out []result.NetRefusal
	for _, name := range names {
		allow, hint := nr.n.Denied.Advice(name)
		if nr.n.Denied == nil {
			allow = name
		}
		out = append(out, result.NetRefusal{Host: name, Rule: rule, Allow: allow, Hint: hint})
	}
	return out
}

// denyRule is the rule that refused a denied network's lookups.
func (nr *netRun) denyRule() string {
	if d := nr.n.Denied; d != nil && d.By != "" {
		return "network deny, set by " + d.By
	}
	return "network deny"
}
