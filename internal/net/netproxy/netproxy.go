// Package netproxy is cordon's filtering network proxy, served on the
// host: an HTTP proxy (CONNECT and absolute-form plain HTTP) and a SOCKS5
// proxy (CONNECT; UDP ASSOCIATE and BIND refused with their reply codes).
// Every request is decided by a netrule.Set on the request target (never a
// Host header): the name first, then, after the name is resolved on the
// host (as an absolute name: no search domain applies), every address it
// resolved to; the connection goes to a checked address, with no second
// lookup. A tunnel (HTTP CONNECT or SOCKS5
// CONNECT, any port) whose client speaks TLS first has its ClientHello
// peeked before any of its bytes reach the upstream, and a server name
// (SNI) that differs from the CONNECT host is refused (no domain fronting
// through an allowed host); a CONNECT to an IP literal may carry only a
// server name the rules allow. The ClientHello is parsed by crypto/tls
// itself (sni.go). A client that offers Encrypted Client Hello is judged
// on its outer (public) server name.
//
// A tunnel to a host a credential belongs to (Config.Credentials) is the
// one exception to end-to-end tunnels: its TLS ends at the proxy, which
// puts the secret in place of the placeholder in its requests' allowed
// headers (intercept.go; package credential decides each request).
//
// The SOCKS5 side uses github.com/things-go/go-socks5 for the method
// negotiation, the RFC 1929 username/password exchange and the request
// parsing, with its hooks set so that the library never resolves nor
// dials anything: its resolver is a no-op (the name is decided before
// any lookup), and CONNECT, BIND and UDP ASSOCIATE are handled here.
//
// It serves listeners it is given (in-sandbox listeners the helper hands
// over, or a 127.0.0.1 listener with a per-run token) and dials through an
// injectable resolver and dialer, so tests can record instead of
// connecting. It must not decide policy itself (netrule does) nor know
// about sandboxes, plans or the audit log's format (its caller records
// each Event).
package netproxy

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	socks5 "github.com/things-go/go-socks5"

	"github.com/cordon-sandbox/cordon/internal/net/credential"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
)

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc opens a connection to a checked address ("tcp", "ip:port").
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Config configures a Server.
type Config struct {
	// Rules decide every request; nil refuses every request.
	Rules *netrule.Set
	// Resolver resolves allowed names; nil is net.DefaultResolver.
	Resolver Resolver
	// Dial connects to a checked address; nil is a net.Dialer.
	Dial DialFunc
	// Token, when not empty, must be presented by every client: HTTP
	// Proxy-Authorization Basic with user "cordon" and password Token,
	// SOCKS5 username/password "cordon"/Token. Other local users cannot
	// use a proxy listening on the host's loopback without it.
	Token string
	// Record receives every decision, allowed or denied (nil: none). It
	// is called one Event at a time, from the connection's goroutine.
	Record func(Event)
	// DialTimeout bounds each outgoing connect; 0 is 30 s.
	DialTimeout time.Duration
	// HostAddrs are the addresses of the host the proxy runs on, refused
	// unless an allow IP or CIDR entry names them (a public address on
	// one of its interfaces reaches every service bound to 0.0.0.0
	// there); nil is the addresses of its interfaces when New runs.
	HostAddrs []netip.Addr
	// MaxConns bounds the connections served at once (tunnels, plain
	// HTTP requests in progress, SOCKS5 clients, forwarded connections):
	// each holds descriptors and memory of the host, outside the
	// sandbox's limits. One over it is answered 503 (SOCKS5: its
	// connection closed). 0 is DefaultMaxConns.
	MaxConns int
	// Credentials are the run's credentials: a TLS tunnel to a host one
	// belongs to ends at the proxy, which puts the secret in place of
	// the placeholder in the allowed headers of its requests (see
	// intercept.go). Every other tunnel stays end to end.
	Credentials []*credential.Binding
	// CA signs the certificates the proxy presents for the credentials'
	// hosts; without one no tunnel is intercepted.
	CA *credential.CA
	// UpstreamRoots verify the credentials' hosts; nil is the host's
	// trust store (which honours SSL_CERT_FILE and SSL_CERT_DIR).
	UpstreamRoots *x509.CertPool
	// RecordUse receives every request that carried a credential's
	// placeholder (nil: none), one at a time.
	RecordUse func(CredentialUse)
	// Ask, when not nil, is asked about a target that no allow entry
	// names (netrule.RuleNoAllow: never a deny entry, a special address
	// or one of this host's): the connection is held until it answers,
	// and goes ahead, its addresses still checked, on true (cordon run
	// --ask). A refusal is then decided as without Ask.
	Ask func(ctx context.Context, host string, port int) bool
}

// DefaultMaxConns is Config.MaxConns when it is 0: well above what a
// build or a package manager opens at once (npm: 16 sockets per host by
// default), well below the host's descriptor limit.
const DefaultMaxConns = 1024

// Protocol is how a client reached the proxy.
type Protocol string

// Protocols.
const (
	// HTTPConnect is an HTTP CONNECT tunnel.
	HTTPConnect Protocol = "http-connect"
	// HTTPForward is an absolute-form plain HTTP request.
	HTTPForward Protocol = "http"
	// SOCKS5 is a SOCKS5 CONNECT.
	SOCKS5 Protocol = "socks5"
	// PortForward is a connection to a forwarded port (ServeForward).
	PortForward Protocol = "forward"
	// DNSLookup is a name the command looked up on a denied network,
	// answered "not found" by cordon's name server there (package
	// dnsstub): the audit log's network-lookup records.
	DNSLookup Protocol = "dns"
)

// Event is one decision of the proxy.
type Event struct {
	// Time is when it was decided.
	Time time.Time
	// Protocol is how the client asked.
	Protocol Protocol
	// Host is the canonical host the client asked for (a name or an IP;
	// a host that could not be parsed is shown Go-quoted).
	Host string
	// Port is the port it asked for.
	Port int
	// Addr is the resolved address connected to or refused; the zero
	// Addr when the name itself was refused or did not resolve.
	Addr netip.Addr
	// Allowed says whether the connection went ahead.
	Allowed bool
	// Rule is the entry (or built-in reason) that decided.
	Rule string
	// Reason is the sentence the client was answered with.
	Reason string
}

// Built-in rules of the proxy's own refusals (netrule's are in its
// Decisions).
const (
	// RuleMalformed refuses a target whose host or port cannot be parsed.
	RuleMalformed = "malformed target"
	// RuleUnresolved marks a name that did not resolve (not a policy
	// refusal: it is not counted in Refusals).
	RuleUnresolved = "name did not resolve"
	// RuleSNIMismatch refuses a tunnel whose TLS server name differs from
	// its CONNECT host, or names a host the rules do not allow.
	RuleSNIMismatch = "SNI mismatch"
	// RuleForwardPort is the rule of every forwarded-port connection.
	RuleForwardPort = "forward-port"
	// RuleHostAddress refuses an address of the host the proxy runs on
	// (Config.HostAddrs) that no allow IP or CIDR entry names.
	RuleHostAddress = "address of this host"
	// RuleAsked is the rule of a target allowed by the person asked
	// (Config.Ask).
	RuleAsked = "allowed when asked"
)

const (
	defaultDialTimeout = 30 * time.Second
	// handshakeTimeout bounds a client's proxy handshake: the HTTP request
	// head, or the SOCKS5 negotiation and request.
	handshakeTimeout = 30 * time.Second
	// closeWait bounds how long Close waits for the connections' goroutines.
	closeWait = 5 * time.Second
	// maxHeaderBytes bounds an HTTP proxy request's head (squid's default
	// request_header_max_size): the proxy's memory is the host's, outside
	// the sandbox's limits, and net/http's default (1 MiB per connection)
	// let 400 connections from inside hold 700 MB of it.
	maxHeaderBytes = 64 << 10
)

// hostsPath is the host's hosts file. A test build may name another with
// -ldflags "-X github.com/cordon-sandbox/cordon/internal/net/netproxy.hostsPath=FILE",
// to reach its own server on 127.0.0.1 under a name without DNS.
var hostsPath = "/etc/hosts"

// Server is one run's proxy. It is safe for concurrent use.
type Server struct {
	cfg      Config
	rules    *netrule.Set
	resolver Resolver
	dial     DialFunc
	forward  *httputil.ReverseProxy
	socks    *socks5.Server
	hostAddr map[netip.Addr]bool // Config.HostAddrs, unmapped
	// ctx ends when Close begins: lookups and dials in progress stop.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	https     []*http.Server
	wg        sync.WaitGroup
	hosts     *hostsFile // the host's hosts file, with the host's resolver
	active    int        // connections admitted (see admit)
	overCap   int        // connections turned away by MaxConns
	refused   []Refused
	seen      map[string]bool
	more      int // refusals past the first maxRefusals distinct ones

	recMu sync.Mutex
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	s := &Server{
		cfg:       cfg,
		rules:     cfg.Rules,
		resolver:  cfg.Resolver,
		dial:      cfg.Dial,
		listeners: map[net.Listener]struct{}{},
		conns:     map[net.Conn]struct{}{},
		seen:      map[string]bool{},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if s.rules == nil {
		s.rules = &netrule.Set{}
	}
	if s.resolver == nil {
		s.resolver = net.DefaultResolver
		s.hosts = &hostsFile{path: hostsPath}
	}
	if s.cfg.DialTimeout <= 0 {
		s.cfg.DialTimeout = defaultDialTimeout
	}
	if s.cfg.MaxConns <= 0 {
		s.cfg.MaxConns = DefaultMaxConns
	}
	if s.dial == nil {
		d := &net.Dialer{Timeout: s.cfg.DialTimeout}
		s.dial = d.DialContext
	}
	s.forward = s.newForwarder()
	s.socks = s.newSOCKS()
	addrs := cfg.HostAddrs
	if addrs == nil {
		addrs = interfaceAddrs()
	}
	s.hostAddr = map[netip.Addr]bool{}
	for _, a := range addrs {
		s.hostAddr[a.WithZone("").Unmap()] = true
	}
	return s
}

// interfaceAddrs are the addresses of the host's network interfaces (read
// from the kernel; nothing is sent), or none when they cannot be read.
func interfaceAddrs() []netip.Addr {
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range ifs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out
}

// Close stops serving, closes every open tunnel and waits for the
// serving goroutines (at most 5 s).
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel()
	var errs []error
	for l := range s.listeners {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("closing the listener %s: %w", l.Addr(), err))
		}
	}
	for _, h := range s.https {
		_ = h.Close() // its listeners are closed above; its connections now
	}
	for c := range s.conns {
		_ = c.Close() // a tunnel's end: its copy ends with an error
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeWait):
		errs = append(errs, fmt.Errorf("netproxy: connections still open %s after Close", closeWait))
	}
	return errors.Join(errs...)
}

// begin counts one goroutine serving a connection; it says false (and
// counts nothing) once Close has begun.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// admit takes one of Config.MaxConns slots for a connection being
// served; it says false when all are taken. release gives it back.
func (s *Server) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active >= s.cfg.MaxConns {
		s.overCap++
		return false
	}
	s.active++
	return true
}

// release gives back a slot taken by admit.
func (s *Server) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
}

// OverCap returns how many connections were turned away because
// Config.MaxConns were being served.
func (s *Server) OverCap() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overCap
}

// track registers connections that Close must close; it says false (and
// closes them) once Close has begun.
func (s *Server) track(cs ...net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		s.conns[c] = struct{}{}
	}
	return true
}

// untrack forgets connections registered by track.
func (s *Server) untrack(cs ...net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		delete(s.conns, c)
	}
}

// isClosed says whether Close has begun.
func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// record sends e to Config.Record, one at a time.
func (s *Server) record(e Event) {
	if s.cfg.Record == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	s.cfg.Record(e)
}

// Refused is one distinct refused host and port of a run, with the flag
// that would allow it.
type Refused struct {
	Host string
	Port int
	Rule string
	// Allow is the --allow-net entry that would allow it (for a name
	// whose every address was refused, or an IP literal, the address's
	// host:port), or "" when none would.
	Allow string
	// Hint says, when Allow is "", why no --allow-net entry would allow
	// it (a deny entry, a malformed target, a TLS server name).
	Hint string
}

// Hints of Refused.
const (
	hintDeny      = "a deny entry refuses it, and deny beats allow: remove or narrow it to allow it"
	hintMalformed = "the target is malformed, and no entry allows it"
	hintSNI       = "its TLS server name (SNI) was not the host it asked for, or not an allowed host: no entry allows that tunnel"
	hintBadHello  = "its TLS ClientHello could not be read, and no entry allows that tunnel"
)

// maxRefusals bounds the distinct refusals a Server keeps: a command
// asking for ever new hosts must not grow the host's memory, nor the
// lines printed at the end of the run, without bound.
const maxRefusals = 50

// Refusals returns the distinct refused hosts and ports, in the order
// first refused: the first 50 (RefusedMore counts the others).
func (s *Server) Refusals() []Refused {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Refused, len(s.refused))
	copy(out, s.refused)
	return out
}

// RefusedMore is how many refused requests Refusals does not list: those
// whose host and port were new once it held its 50 (each one counted,
// whether or not its host and port were refused before).
func (s *Server) RefusedMore() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.more
}

// addRefusal records r in Refusals unless its host and port are there,
// or counts it in RefusedMore once Refusals is full.
func (s *Server) addRefusal(r Refused) {
	key := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.seen[key]:
	case len(s.refused) >= maxRefusals:
		s.more++
	default:
		s.seen[key] = true
		s.refused = append(s.refused, r)
	}
}

// serve accepts connections from l and runs handle on each, in its own
// goroutine, until l is closed or Close is called. A closed listener
// after Close is a normal end (nil).
func (s *Server) serve(l net.Listener, handle func(net.Conn)) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = l.Close()
		return nil
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()
	backoff := 5 * time.Millisecond
	for {
		c, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			if transientAccept(err) {
				// Out of descriptors or memory: wait for connections to
				// end, as net/http does.
				time.Sleep(backoff)
				backoff = min(2*backoff, time.Second)
				continue
			}
			return fmt.Errorf("netproxy: accepting on %s: %w", l.Addr(), err)
		}
		backoff = 5 * time.Millisecond
		if !s.begin() {
			_ = c.Close()
			return nil
		}
		if !s.admit() {
			s.wg.Done()
			_ = c.Close()
			continue
		}
		go func() {
			defer s.wg.Done()
			defer s.release()
			handle(c)
		}()
	}
}

// transientAccept says whether an Accept error is worth retrying.
func transientAccept(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
