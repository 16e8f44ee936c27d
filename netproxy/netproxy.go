// Package netproxy is cordon's filtering network proxy, served on the
// host: an HTTP proxy (CONNECT and absolute-form plain HTTP) and a SOCKS5
// proxy (CONNECT; UDP ASSOCIATE and BIND refused with their reply codes).
// Every request is decided by a netrule.Set on the request target (never a
// Host header): the name first, then, after the name is resolved on the
// host, every address it resolved to; the connection goes to a checked
// address, with no second lookup. A CONNECT to port 443 has its TLS
// ClientHello peeked, and a server name that differs from the CONNECT host
// is refused (no domain fronting through an allowed host).
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
	"net"
	"net/netip"
	"time"

	"github.com/cordon-sandbox/cordon/netrule"
)

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc opens a connection to a checked address ("tcp", "ip:port").
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Config configures a Server.
type Config struct {
	// Rules decide every request.
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
	// Record receives every decision, allowed or denied (nil: none).
	Record func(Event)
	// DialTimeout bounds each outgoing connect; 0 is 30 s.
	DialTimeout time.Duration
}

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
)

// Event is one decision of the proxy.
type Event struct {
	// Time is when it was decided.
	Time time.Time
	// Protocol is how the client asked.
	Protocol Protocol
	// Host is the canonical host the client asked for (a name or an IP).
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

// Server is one run's proxy. It is safe for concurrent use.
type Server struct {
	cfg Config
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	return &Server{cfg: cfg}
}

// ServeHTTP serves HTTP proxy clients accepted from l until l is closed
// or Close is called.
func (s *Server) ServeHTTP(l net.Listener) error {
	panic("netproxy: being built")
}

// ServeSOCKS5 serves SOCKS5 clients accepted from l until l is closed or
// Close is called.
func (s *Server) ServeSOCKS5(l net.Listener) error {
	panic("netproxy: being built")
}

// ServeForward serves a forwarded port: every connection accepted from l
// (an in-sandbox listener) is joined to a new connection to the host's
// 127.0.0.1:port (through Config.Dial), without rules: forwarded ports
// are named by the user. Each connection is an allowed Event.
func (s *Server) ServeForward(l net.Listener, port int) error {
	panic("netproxy: being built")
}

// Close stops serving, closes every open tunnel and waits for the
// serving goroutines.
func (s *Server) Close() error {
	panic("netproxy: being built")
}

// Refused is one distinct refused host and port of a run, with the flag
// that would allow it.
type Refused struct {
	Host string
	Port int
	Rule string
	// Allow is the --allow-net flag that would allow it, or "" when
	// only an IP rule or removing a deny entry would.
	Allow string
}

// Refusals returns the distinct refused hosts and ports, in the order
// first refused.
func (s *Server) Refusals() []Refused {
	panic("netproxy: being built")
}
