package netproxy

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TokenUser is the user name a client presents with Config.Token.
const TokenUser = "cordon"

// DeniedHeader names the refused request's rule in a 403 answer.
const DeniedHeader = "X-Cordon-Denied"

// ServeHTTP serves HTTP proxy clients accepted from l until l is closed
// or Close is called: CONNECT tunnels, and absolute-form plain http://
// requests forwarded on a new upstream connection each (keep-alive with
// the client, not with the upstream). Anything else is answered 400.
func (s *Server) ServeHTTP(l net.Listener) error {
	h := &http.Server{
		Handler:           http.HandlerFunc(s.handleHTTP),
		ReadHeaderTimeout: handshakeTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = l.Close()
		return nil
	}
	s.https = append(s.https, h)
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	err := h.Serve(l)
	s.mu.Lock()
	delete(s.listeners, l)
	closed := s.closed
	s.mu.Unlock()
	if closed || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("netproxy: serving HTTP on %s: %w", l.Addr(), err)
}

// handleHTTP answers one request of an HTTP proxy client.
func (s *Server) handleHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.begin() {
		http.Error(w, "cordon: network: the proxy is closing", http.StatusServiceUnavailable)
		return
	}
	defer s.wg.Done()
	if !s.authorized(r) {
		w.Header().Set("Proxy-Authenticate", `Basic realm="cordon"`)
		http.Error(w, "cordon: network: this proxy needs the run's token (Proxy-Authorization: Basic with user "+TokenUser+")", http.StatusProxyAuthRequired)
		return
	}
	if !s.admit() {
		http.Error(w, fmt.Sprintf("cordon: network: the proxy is serving %d connections at once, its bound; try again when some have ended", s.cfg.MaxConns), http.StatusServiceUnavailable)
		return
	}
	defer s.release()
	if r.Method == http.MethodConnect {
		s.handleConnect(w, r)
		return
	}
	s.handleForward(w, r)
}

// authorized says whether r carries the Token (always, without one).
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Token == "" {
		return true
	}
	v := r.Header.Get("Proxy-Authorization")
	scheme, enc, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return false
	}
	user, pass, _ := strings.Cut(string(raw), ":")
	return s.tokenOK(user, pass)
}

// tokenOK compares user and password with TokenUser and Token in
// constant time.
func (s *Server) tokenOK(user, pass string) bool {
	u := subtle.ConstantTimeCompare([]byte(user), []byte(TokenUser))
	p := subtle.ConstantTimeCompare([]byte(pass), []byte(s.cfg.Token))
	return u&p == 1
}

// badRequest answers 400 with one line.
func badRequest(w http.ResponseWriter, msg string) {
	http.Error(w, "cordon: network: "+msg, http.StatusBadRequest)
}

// denied answers a refused request: 403, its rule in DeniedHeader, and
// one line naming the host, port, rule and reason.
func denied(w http.ResponseWriter, d *denial) {
	w.Header().Set(DeniedHeader, headerSafe(d.rule))
	http.Error(w, d.String(), http.StatusForbidden)
}

// headerSafe keeps the printable ASCII of v (a rule as the user wrote it).
func headerSafe(v string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, v)
}

// failed answers a request whose name did not resolve or whose upstream
// could not be reached: 502 with one line.
func failed(w http.ResponseWriter, err error) {
	http.Error(w, "cordon: network: "+err.Error(), http.StatusBadGateway)
}

// splitTarget splits a request target's authority into host and port;
// defPort is used when it has none (0: a port is required).
func splitTarget(authority string, defPort int) (string, int, error) {
	host, ps, err := net.SplitHostPort(authority)
	if err != nil {
		var ae *net.AddrError
		if defPort == 0 || !errors.As(err, &ae) || !strings.Contains(ae.Err, "missing port") {
			return "", 0, fmt.Errorf("the target %q is not host:port", authority)
		}
		host, ps = strings.TrimSuffix(strings.TrimPrefix(authority, "["), "]"), strconv.Itoa(defPort)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("the target %q has no valid port (1-65535)", authority)
	}
	return host, port, nil
}

// handleConnect answers a CONNECT: refused (403), failed (502), or 200
// and the tunnel.
func (s *Server) handleConnect(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitTarget(r.URL.Host, 0)
	if r.URL.Host == "" || err != nil {
		badRequest(w, fmt.Sprintf("CONNECT needs a host:port target (%q)", r.RequestURI))
		return
	}
	up := s.openFor(w, r, HTTPConnect, host, port)
	if up == nil {
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.conn.Close()
		http.Error(w, "cordon: network: this connection cannot be tunnelled", http.StatusInternalServerError)
		return
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		_ = up.conn.Close()
		return // the client is gone
	}
	// The server's request deadlines no longer apply to a tunnel.
	if err := conn.SetDeadline(time.Time{}); err != nil {
		_ = conn.Close()
		_ = up.conn.Close()
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = conn.Close()
		_ = up.conn.Close()
		return
	}
	s.tunnel(HTTPConnect, conn, buffered(brw.Reader), up)
}

// openFor opens the checked upstream of an HTTP client's request, or
// answers it itself, refused (403) or failed (502), and returns nil.
func (s *Server) openFor(w http.ResponseWriter, r *http.Request, proto Protocol, host string, port int) *upstream {
	up, d, err := s.open(r.Context(), proto, host, port)
	switch {
	case d != nil:
		denied(w, d)
		return nil
	case err != nil:
		failed(w, err)
		return nil
	}
	return up
}

// handleForward forwards an absolute-form http:// request to a checked
// address, through httputil.ReverseProxy (which drops the hop-by-hop
// headers, Proxy-Authorization among them).
func (s *Server) handleForward(w http.ResponseWriter, r *http.Request) {
	if !r.URL.IsAbs() || r.URL.Host == "" {
		badRequest(w, fmt.Sprintf("this is a proxy: ask for an absolute http:// URL, not %q", r.RequestURI))
		return
	}
	if r.URL.Scheme != "http" {
		badRequest(w, fmt.Sprintf("only http:// URLs are forwarded (use CONNECT for %s://)", r.URL.Scheme))
		return
	}
	host, port, err := splitTarget(r.URL.Host, 80)
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	up := s.openFor(w, r, HTTPForward, host, port)
	if up == nil {
		return
	}
	defer up.conn.Close()
	if !s.track(up.conn) {
		return
	}
	defer s.untrack(up.conn)
	ctx := context.WithValue(r.Context(), checkedKey{}, &checkedConn{conn: up.conn})
	s.forward.ServeHTTP(w, r.WithContext(ctx))
}

// checkedKey is the context key of a forwarded request's checkedConn.
type checkedKey struct{}

// checkedConn hands the transport the connection open dialed, once.
type checkedConn struct {
	mu   sync.Mutex
	conn net.Conn
}

// take returns the connection, once.
func (c *checkedConn) take() net.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	conn := c.conn
	c.conn = nil
	return conn
}

// errNoChecked is a transport dial without a checked connection (never
// expected: a request reaches the transport only with one).
var errNoChecked = errors.New("netproxy: no checked connection for this request")

// newForwarder returns the reverse proxy of plain http:// requests: its
// transport never dials, it takes the connection open dialed to a
// checked address, and never keeps it.
func (s *Server) newForwarder() *httputil.ReverseProxy {
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if c, ok := ctx.Value(checkedKey{}).(*checkedConn); ok {
				if conn := c.take(); conn != nil {
					return conn, nil
				}
			}
			return nil, errNoChecked
		},
		DisableKeepAlives:  true,
		DisableCompression: true,
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Rewrite drops the client's X-Forwarded-* headers; a forward
			// proxy passes them on unchanged and adds none.
			for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
				if v, ok := pr.In.Header[k]; ok {
					pr.Out.Header[k] = v
				}
			}
		},
		Transport: tr,
		ErrorLog:  log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			failed(w, fmt.Errorf("forwarding to %s: %w", r.URL.Host, err))
		},
	}
}
