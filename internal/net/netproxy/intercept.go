package netproxy

import (
	"context"
	"crypto/tls"
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

	"github.com/cordon-sandbox/cordon/internal/net/credential"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
)

// This file is the swap of credentials (Config.Credentials): a tunnel to
// a host a credential belongs to is not joined end to end. Its TLS ends
// at the proxy, with a certificate the run's CA signs for that host; the
// proxy opens its own TLS connection to the host, verified against the
// host's trust store; and each HTTP/1.1 request read from the client is
// decided on its own (its Host must be the host the tunnel was opened
// for; the credential's method and path rules), has the placeholder
// replaced by the secret in its allowed headers only, and is forwarded.
// Only HTTP/1.1 is offered to the client (ALPN), so no HTTP/2 connection
// coalescing can carry a request for another host over it. Every other
// tunnel stays end to end, unintercepted.

// RuleMisdirected refuses a request, on a connection intercepted for a
// credential's host, whose Host is another host.
const RuleMisdirected = "request for another host"

// CredentialUse is one request that carried a credential's placeholder
// in an allowed header: the secret was put in its place (Allowed), or
// the request refused by Rule. It holds no value, and of the URL only
// its path.
type CredentialUse struct {
	Time       time.Time
	Credential string
	Host       string
	Port       int
	Method     string
	Path       string
	Allowed    bool
	Rule       string
	Reason     string
}

// bound returns the credentials that belong to the target t on port.
func (s *Server) bound(t netrule.Target, port int) []*credential.Binding {
	if s.cfg.CA == nil {
		return nil
	}
	var out []*credential.Binding
	for _, b := range s.cfg.Credentials {
		if b.For(t, port) {
			out = append(out, b)
		}
	}
	return out
}

// recordUse sends u to Config.RecordUse, one at a time (and after every
// Event already sent).
func (s *Server) recordUse(u CredentialUse) {
	if s.cfg.RecordUse == nil {
		return
	}
	if u.Time.IsZero() {
		u.Time = time.Now()
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	s.cfg.RecordUse(u)
}

// intercept serves a tunnel to a host credentials bs belong to (see the
// comment at the top of this file). A client that does not start TLS is
// tunnelled as it is: a credential is only ever sent over TLS.
func (s *Server) intercept(proto Protocol, client net.Conn, pre []byte, up *upstream, bs []*credential.Binding) {
	defer client.Close()
	defer up.conn.Close()
	if !s.track(client, up.conn) {
		return
	}
	defer s.untrack(client, up.conn)
	head, err := readHead(client, pre)
	ev := Event{Protocol: proto, Host: up.target.String(), Port: up.port, Addr: up.addr}
	switch {
	case err != nil && head.tls:
		s.refuse(ev, RuleBadHello, fmt.Sprintf("the tunnel's TLS ClientHello cannot be read: %v", err), "", "", true)
		return
	case err != nil:
		return
	case !head.tls:
		if _, err := up.conn.Write(head.bytes); err != nil {
			return
		}
		done := make(chan struct{})
		go func() {
			pipe(client, up.conn)
			close(done)
		}()
		pipe(up.conn, client)
		<-done
		return
	}
	if why := s.checkSNI(up.target, up.port, head.sni); why != "" {
		s.refuse(ev, RuleSNIMismatch, why, "", "", true)
		return
	}
	host := up.target.Name
	leaf, err := s.cfg.CA.Leaf(host)
	if err != nil {
		return
	}
	// The upstream's handshake runs while the client's does.
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	upTLS := tls.Client(up.conn, s.upstreamTLS(host))
	upDone := make(chan error, 1)
	go func() { upDone <- upTLS.HandshakeContext(ctx) }()
	cTLS := tls.Server(&replayConn{Conn: client, pre: head.bytes}, &tls.Config{
		Certificates: []tls.Certificate{*leaf},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	})
	hctx, hcancel := context.WithTimeout(ctx, handshakeTimeout)
	err = cTLS.HandshakeContext(hctx)
	hcancel()
	if err != nil {
		cancel()
		<-upDone
		return
	}
	first := &firstConn{conn: upTLS, done: upDone}
	s.serveIntercepted(proto, cTLS, up, first, bs)
}

// upstreamTLS is the TLS configuration of the proxy's own connection to
// a credential's host: verified against Config.UpstreamRoots (nil: the
// host's trust store), HTTP/1.1 only.
func (s *Server) upstreamTLS(host string) *tls.Config {
	return &tls.Config{
		ServerName: host,
		RootCAs:    s.cfg.UpstreamRoots,
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	}
}

// firstConn is the upstream connection the tunnel was opened with,
// handed to the first request; later connections (after the host closed
// one) are dialed again through open, decided again.
type firstConn struct {
	mu   sync.Mutex
	conn *tls.Conn
	done chan error
}

// take returns the first connection once its handshake ended, once
// (ok false after).
func (f *firstConn) take() (c *tls.Conn, ok bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn == nil {
		return nil, false, nil
	}
	c, f.conn = f.conn, nil
	return c, true, <-f.done
}

// serveIntercepted serves the HTTP/1.1 requests of one intercepted client
// connection until either end closes it.
func (s *Server) serveIntercepted(proto Protocol, c *tls.Conn, up *upstream, first *firstConn, bs []*credential.Binding) {
	host := up.target.Name
	tr := &http.Transport{
		Proxy: nil,
		DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if conn, ok, err := first.take(); ok {
				if err != nil {
					return nil, fmt.Errorf("the TLS handshake with %s: %w", host, err)
				}
				return conn, nil
			}
			again, d, err := s.open(ctx, proto, host, up.port)
			switch {
			case d != nil:
				return nil, errors.New(d.String())
			case err != nil:
				return nil, err
			}
			t := tls.Client(again.conn, s.upstreamTLS(host))
			if err := t.HandshakeContext(ctx); err != nil {
				_ = again.conn.Close()
				return nil, fmt.Errorf("the TLS handshake with %s: %w", host, err)
			}
			return t, nil
		},
		DisableCompression:  true,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     90 * time.Second,
	}
	defer tr.CloseIdleConnections()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "https", pr.In.Host
			pr.Out.Host = pr.In.Host
			for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
				if v, ok := pr.In.Header[k]; ok {
					pr.Out.Header[k] = v
				}
			}
		},
		// A host that echoes a header back (a redirect's Location, a
		// debugging endpoint's header) gives back the placeholder, not
		// the secret. A body is passed as it is.
		ModifyResponse: func(resp *http.Response) error {
			for k, vs := range resp.Header {
				for i, v := range vs {
					for _, b := range bs {
						if strings.Contains(v, b.Secret) {
							v = strings.ReplaceAll(v, b.Secret, b.Placeholder)
						}
					}
					resp.Header[k][i] = v
				}
			}
			return nil
		},
		Transport:     tr,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			failed(w, fmt.Errorf("forwarding to %s: %w", host, err))
		},
	}
	h := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !s.begin() {
				http.Error(w, "cordon: network: the proxy is closing", http.StatusServiceUnavailable)
				return
			}
			defer s.wg.Done()
			if why := sameTarget(r.Host, up); why != "" {
				s.addRefusal(Refused{Host: host, Port: up.port, Rule: RuleMisdirected, Hint: why})
				w.Header().Set(DeniedHeader, RuleMisdirected)
				w.Header().Set("Connection", "close")
				http.Error(w, "cordon: network: refused ("+RuleMisdirected+"): "+why, http.StatusMisdirectedRequest)
				return
			}
			orig := r.Header.Clone()
			uses := credential.Apply(bs, r.Method, r.URL.Path, r.URL.EscapedPath(), r.Header)
			for _, u := range uses {
				s.recordUse(CredentialUse{Credential: u.Credential, Host: host, Port: up.port, Method: r.Method, Path: r.URL.Path, Allowed: u.Allowed, Rule: u.Rule, Reason: u.Reason})
			}
			if len(uses) > 0 && !uses[0].Allowed {
				s.addRefusal(Refused{Host: host, Port: up.port, Rule: uses[0].Rule, Hint: uses[0].Reason})
				w.Header().Set(DeniedHeader, headerSafe(uses[0].Rule))
				http.Error(w, fmt.Sprintf("cordon: network: refused %s %s on %s (%s): %s", r.Method, r.URL.Path, host, uses[0].Rule, uses[0].Reason), http.StatusForbidden)
				return
			}
			sw := &scrubWriter{ResponseWriter: w, swaps: strings.NewReplacer(swapsBack(bs, orig, r.Header)...)}
			rp.ServeHTTP(sw, r)
			sw.scrub() // the trailers, set once the body was copied
		}),
		ReadHeaderTimeout: handshakeTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	l := newOneConnListener(c)
	_ = h.Serve(l)
	<-l.closed
	_ = h.Close()
}

// swapsBack are the replacements that give back, in what the host
// answers, what the command sent: each secret by its placeholder, and
// each header value the swap changed (sent, after) by the command's own
// (before), with a Basic credential's token alone too, since a host that
// echoes a header may echo the encoded form the proxy made.
func swapsBack(bs []*credential.Binding, before, after http.Header) []string {
	var pairs []string
	for _, b := range bs {
		pairs = append(pairs, b.Secret, b.Placeholder)
	}
	for k, vs := range after {
		ovs := before[k]
		for i, v := range vs {
			if i >= len(ovs) || ovs[i] == v {
				continue
			}
			pairs = append(pairs, v, ovs[i])
			if tok, ok := cutScheme(v, "Basic "); ok {
				if otok, ok := cutScheme(ovs[i], "Basic "); ok {
					pairs = append(pairs, tok, otok)
				}
			}
		}
	}
	return pairs
}

// cutScheme is v's credential after an authorization scheme (any case).
func cutScheme(v, scheme string) (string, bool) {
	if len(v) > len(scheme) && strings.EqualFold(v[:len(scheme)], scheme) {
		return strings.TrimSpace(v[len(scheme):]), true
	}
	return "", false
}

// scrubWriter replaces, in every header block written to the command (an
// interim 1xx answer's, the final one's, and the trailers after the
// body), what the swap put in by what the command sent (swapsBack).
type scrubWriter struct {
	http.ResponseWriter
	swaps *strings.Replacer
	// final: the final answer's headers are written.
	final bool
}

func (w *scrubWriter) WriteHeader(code int) {
	w.scrub()
	w.final = w.final || code >= 200
	w.ResponseWriter.WriteHeader(code)
}

func (w *scrubWriter) Write(b []byte) (int, error) {
	if !w.final {
		w.scrub() // an implicit 200's headers
		w.final = true
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the connection's writer (the
// reverse proxy flushes through it).
func (w *scrubWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *scrubWriter) scrub() {
	for _, vs := range w.ResponseWriter.Header() {
		for i, v := range vs {
			vs[i] = w.swaps.Replace(v)
		}
	}
}

// sameTarget says why a request's Host is not the host and port the
// intercepted tunnel was opened for, or "".
func sameTarget(reqHost string, up *upstream) string {
	want := up.target.String()
	name, port := reqHost, up.port
	if h, p, err := net.SplitHostPort(reqHost); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Sprintf("the request's Host %q has no valid port", reqHost)
		}
		name, port = h, n
	}
	t, err := netrule.ParseTarget(strings.TrimSuffix(strings.TrimPrefix(name, "["), "]"))
	if err != nil || t.String() != want || port != up.port {
		shown := quoteHost(reqHost)
		if err == nil {
			shown = net.JoinHostPort(t.String(), strconv.Itoa(port))
		}
		return fmt.Sprintf("this connection was opened for %s, and a request for %s must open its own", net.JoinHostPort(want, strconv.Itoa(up.port)), shown)
	}
	return ""
}

// replayConn reads pre before the connection's own bytes.
type replayConn struct {
	net.Conn
	pre []byte
}

func (r *replayConn) Read(p []byte) (int, error) {
	if len(r.pre) > 0 {
		n := copy(p, r.pre)
		r.pre = r.pre[n:]
		return n, nil
	}
	return r.Conn.Read(p)
}

// oneConnListener hands one connection to an http.Server, then blocks
// until that connection is closed.
type oneConnListener struct {
	mu     sync.Mutex
	conn   net.Conn
	addr   net.Addr
	closed chan struct{}
	once   sync.Once
}

func newOneConnListener(c net.Conn) *oneConnListener {
	l := &oneConnListener{addr: c.LocalAddr(), closed: make(chan struct{})}
	l.conn = &notifyConn{Conn: c, onClose: func() { l.once.Do(func() { close(l.closed) }) }}
	return l
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	l.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.addr }

// notifyConn calls onClose when closed.
type notifyConn struct {
	net.Conn
	onClose func()
}

func (n *notifyConn) Close() error {
	err := n.Conn.Close()
	n.onClose()
	return err
}
