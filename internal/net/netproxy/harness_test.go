package netproxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/proxy"

	"github.com/cordon-sandbox/cordon/internal/net/netrule"
	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// searchDomainAddr is what the test resolver answers for a relative name
// (as if a resolv.conf search domain had turned it into another host).
var searchDomainAddr = netip.MustParseAddr("8.8.4.4")

// testTimeout bounds every wait of these tests.
const testTimeout = 20 * time.Second

// loopback is the only address these tests ever connect to.
var loopback = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// testNames is the injected resolver's world: names resolve only here,
// never through DNS.
var testNames = map[string][]netip.Addr{
	"allowed.test": {loopback},
	"example.com":  {loopback}, // the name httptest's certificate holds
	"rebind.test":  {loopback, netip.MustParseAddr("169.254.169.254")},
	"mixed.test":   {netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("10.1.2.3"), loopback},
	"public.test":  {netip.MustParseAddr("1.2.3.4")},
	"v6meta.test":  {netip.MustParseAddr("fd00:ec2::254"), netip.MustParseAddr("::ffff:169.254.169.254"), netip.MustParseAddr("64:ff9b::a9fe:a9fe")},
}

// harness is a Server on 127.0.0.1 with an injected resolver (testNames)
// and a dialer that connects only to 127.0.0.1 and records every address
// it was asked for: no test sends a packet anywhere else.
type harness struct {
	t         *testing.T
	srv       *Server
	httpAddr  string
	socksAddr string
	token     string

	mu      sync.Mutex
	events  []Event
	dials   []string
	lookups []string
	served  chan error
}

// newHarness starts a Server for the allow and deny entries, serving HTTP
// and SOCKS5 on 127.0.0.1, closed at the end of the test.
func newHarness(t *testing.T, allow, deny []string, token string) *harness {
	t.Helper()
	return newHarnessWith(t, allow, deny, token, nil)
}

// newHarnessWith is newHarness with the Config changed by with.
func newHarnessWith(t *testing.T, allow, deny []string, token string, with func(*Config)) *harness {
	t.Helper()
	rules, err := netrule.Compile(allow, deny)
	if err != nil {
		t.Fatalf("Compile(%q, %q): %v", allow, deny, err)
	}
	h := &harness{t: t, token: token, served: make(chan error, 2)}
	cfg := Config{
		Rules:       rules,
		Resolver:    h,
		Dial:        h.dial,
		Token:       token,
		Record:      h.record,
		DialTimeout: 5 * time.Second,
	}
	if with != nil {
		with(&cfg)
	}
	h.srv = New(cfg)
	hl := listen(t)
	sl := listen(t)
	h.httpAddr, h.socksAddr = hl.Addr().String(), sl.Addr().String()
	go func() { h.served <- h.srv.ServeHTTP(hl) }()
	go func() { h.served <- h.srv.ServeSOCKS5(sl) }()
	t.Cleanup(func() {
		if err := h.srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for range 2 {
			select {
			case err := <-h.served:
				if err != nil {
					t.Errorf("Serve after Close: %v", err)
				}
			case <-time.After(testTimeout):
				t.Errorf("Serve did not return after Close")
			}
		}
	})
	return h
}

// listen listens on 127.0.0.1, closed at the end of the test.
func listen(t *testing.T) net.Listener {
	t.Helper()
	l := testenv.Listen(t)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// LookupNetIP resolves from testNames only, recording the name. Like a
// resolver with a search domain, it answers a relative name (no trailing
// dot) with the addresses of another host, search.test: the proxy must
// ask for the absolute name it decided on.
func (h *harness) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	h.mu.Lock()
	h.lookups = append(h.lookups, host)
	h.mu.Unlock()
	if network != "ip" {
		return nil, fmt.Errorf("test resolver: network %q", network)
	}
	name, absolute := strings.CutSuffix(host, ".")
	if host == "localhost" {
		// As /etc/hosts answers it.
		return []netip.Addr{loopback}, nil
	}
	if !absolute {
		return []netip.Addr{searchDomainAddr}, nil
	}
	if a, ok := testNames[name]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
}

// dial records address and connects only when it is on 127.0.0.1.
func (h *harness) dial(ctx context.Context, network, address string) (net.Conn, error) {
	h.mu.Lock()
	h.dials = append(h.dials, address)
	h.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil, fmt.Errorf("test dialer: %q is not ip:port: %w", address, err)
	}
	if ap.Addr() != loopback {
		return nil, fmt.Errorf("test dialer: refusing to connect to %s (not 127.0.0.1)", address)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

// record keeps an Event.
func (h *harness) record(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

// Events returns the events so far.
func (h *harness) Events() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// Dials returns the addresses the dialer was asked for.
func (h *harness) Dials() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.dials)
}

// Lookups returns the names the resolver was asked for.
func (h *harness) Lookups() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.lookups)
}

// proxyURL is the HTTP proxy's URL, with the token when there is one.
func (h *harness) proxyURL() *url.URL {
	u := &url.URL{Scheme: "http", Host: h.httpAddr}
	if h.token != "" {
		u.User = url.UserPassword(TokenUser, h.token)
	}
	return u
}

// httpClient is a Go client using the HTTP proxy.
func (h *harness) httpClient(tr *http.Transport) *http.Client {
	if tr == nil {
		tr = &http.Transport{}
	}
	tr.Proxy = http.ProxyURL(h.proxyURL())
	tr.DisableKeepAlives = true
	return &http.Client{Transport: tr, Timeout: testTimeout}
}

// socksClient is a Go client using the SOCKS5 proxy through
// golang.org/x/net/proxy (names sent unresolved, as socks5h).
func (h *harness) socksClient(t *testing.T, auth *proxy.Auth) *http.Client {
	t.Helper()
	d, err := proxy.SOCKS5("tcp", h.socksAddr, auth, &net.Dialer{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	cd := d.(proxy.ContextDialer)
	return &http.Client{Transport: &http.Transport{DialContext: cd.DialContext, DisableKeepAlives: true}, Timeout: testTimeout}
}

// origin is an HTTP server on 127.0.0.1 that answers "origin <path>" and
// keeps the headers of every request it got.
type origin struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
	hosts   []string
}

// newOrigin starts an origin (TLS when tls is set), closed at the end of
// the test.
func newOrigin(t *testing.T, tls bool) *origin {
	t.Helper()
	o := &origin{}
	o.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.headers = append(o.headers, r.Header.Clone())
		o.hosts = append(o.hosts, r.Host)
		o.mu.Unlock()
		_, _ = io.WriteString(w, "origin "+r.URL.Path)
	}))
	o.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tls {
		o.StartTLS()
	} else {
		o.Start()
	}
	t.Cleanup(o.Close)
	return o
}

// port is the origin's port.
func (o *origin) port() int {
	return o.Listener.Addr().(*net.TCPAddr).Port
}

// got returns the headers and Host of the requests so far.
func (o *origin) got() ([]http.Header, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.headers), slices.Clone(o.hosts)
}

// get does a GET with c and returns the status, the body and the
// X-Cordon-Denied header.
func get(t *testing.T, c *http.Client, rawURL string, host string) (int, string, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", "", err
	}
	return resp.StatusCode, string(b), resp.Header.Get(DeniedHeader), nil
}

// socksRaw speaks SOCKS5 by hand: the greeting (username/password when
// user is not empty), then the command cmd for host:port (a domain name
// unless host is an IP). It returns the reply code and the connection
// (positioned after the reply), or the error of the negotiation; a
// negotiation refused by the server is errSOCKSMethod or errSOCKSAuth.
func socksRaw(t *testing.T, addr string, user, pass string, cmd byte, host string, port int) (byte, net.Conn, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(testTimeout))
	r := bufio.NewReader(c)
	method := byte(0x00)
	if user != "" {
		method = 0x02
	}
	if _, err := c.Write([]byte{5, 1, method}); err != nil {
		return 0, nil, err
	}
	var sel [2]byte
	if _, err := io.ReadFull(r, sel[:]); err != nil {
		return 0, nil, err
	}
	if sel[1] != method {
		return 0, nil, fmt.Errorf("%w: the server chose 0x%02x", errSOCKSMethod, sel[1])
	}
	if user != "" {
		msg := append([]byte{1, byte(len(user))}, user...)
		msg = append(append(msg, byte(len(pass))), pass...)
		if _, err := c.Write(msg); err != nil {
			return 0, nil, err
		}
		var st [2]byte
		if _, err := io.ReadFull(r, st[:]); err != nil {
			return 0, nil, err
		}
		if st[1] != 0 {
			return 0, nil, fmt.Errorf("%w: status 0x%02x", errSOCKSAuth, st[1])
		}
	}
	req := []byte{5, cmd, 0}
	if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
		req = append(append(req, 1), a.AsSlice()...)
	} else if err == nil {
		req = append(append(req, 4), a.AsSlice()...)
	} else {
		req = append(append(req, 3, byte(len(host))), host...)
	}
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	if _, err := c.Write(req); err != nil {
		return 0, nil, err
	}
	var rep [4]byte
	if _, err := io.ReadFull(r, rep[:]); err != nil {
		return 0, nil, err
	}
	skip := map[byte]int{1: 4 + 2, 4: 16 + 2}[rep[3]]
	if _, err := io.ReadFull(r, make([]byte, skip)); err != nil {
		return 0, nil, err
	}
	return rep[1], &bufConn{c.(*net.TCPConn), r}, nil
}

var (
	errSOCKSMethod = errors.New("SOCKS5 method refused")
	errSOCKSAuth   = errors.New("SOCKS5 authentication failed")
)

// hostPort joins a host and a port.
func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// bufConn is a client's connection whose reader may hold bytes the
// server sent right after its answer (a server that speaks first).
type bufConn struct {
	*net.TCPConn
	r *bufio.Reader
}

// Read reads what is buffered first.
func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// mustCompile compiles the rules.
func mustCompile(t *testing.T, allow, deny []string) *netrule.Set {
	t.Helper()
	rules, err := netrule.Compile(allow, deny)
	if err != nil {
		t.Fatalf("Compile(%q, %q): %v", allow, deny, err)
	}
	return rules
}

// mustURL parses a URL.
func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
