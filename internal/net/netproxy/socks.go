package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"syscall"
	"time"

	socks5 "github.com/things-go/go-socks5"
	"github.com/things-go/go-socks5/statute"
)

// ServeSOCKS5 serves SOCKS5 clients accepted from l until l is closed or
// Close is called. Without a Token only "no authentication" is offered;
// with one only username/password (RFC 1929), user TokenUser.
func (s *Server) ServeSOCKS5(l net.Listener) error {
	return s.serve(l, s.serveSOCKS)
}

// newSOCKS returns the SOCKS5 protocol server: the library negotiates,
// authenticates and parses the request; its resolver does nothing (the
// name is decided, and resolved, by open, never before), and every
// command is handled here.
func (s *Server) newSOCKS() *socks5.Server {
	opts := []socks5.Option{
		socks5.WithResolver(noLookup{}),
		socks5.WithConnectHandle(s.socksConnect),
		socks5.WithBindHandle(socksNotSupported),
		socks5.WithAssociateHandle(socksNotSupported),
		socks5.WithLogger(socks5.NewLogger(log.New(io.Discard, "", 0))),
	}
	if s.cfg.Token != "" {
		opts = append(opts, socks5.WithCredential(tokenStore{s}))
	}
	return socks5.NewServer(opts...)
}

// serveSOCKS serves one SOCKS5 client, its handshake bounded in time.
func (s *Server) serveSOCKS(c net.Conn) {
	defer c.Close()
	if !s.track(c) {
		return
	}
	defer s.untrack(c)
	if err := c.SetDeadline(time.Now().Add(handshakeTimeout)); err != nil {
		return
	}
	_ = s.socks.ServeConn(c) // its errors are the client's (a bad request, a wrong token)
}

// socksConnect handles a SOCKS5 CONNECT: refused (0x02), failed (its
// code), or succeeded (0x00) and the tunnel.
func (s *Server) socksConnect(ctx context.Context, w io.Writer, req *socks5.Request) error {
	conn, ok := w.(net.Conn)
	if !ok {
		return errors.New("netproxy: the SOCKS5 writer is not the connection")
	}
	dst := req.RawDestAddr
	host := dst.FQDN
	if host == "" && dst.IP != nil {
		host = dst.IP.String() // an empty domain stays empty: refused as malformed
	}
	if s.cfg.Ask != nil {
		// The request is read; a question may hold it past the
		// handshake's deadline.
		_ = conn.SetDeadline(time.Time{})
	}
	up, d, err := s.open(ctx, SOCKS5, host, dst.Port)
	switch {
	case d != nil:
		return socks5.SendReply(w, statute.RepRuleFailure, nil)
	case err != nil:
		return socks5.SendReply(w, socksCode(err), nil)
	}
	// The reply names no address: the host's own is not the client's
	// business.
	if err := socks5.SendReply(w, statute.RepSuccess, &net.TCPAddr{IP: net.IPv4zero}); err != nil {
		_ = up.conn.Close()
		return fmt.Errorf("answering the SOCKS5 client: %w", err)
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		_ = up.conn.Close()
		return fmt.Errorf("clearing the SOCKS5 handshake's deadline: %w", err)
	}
	var pre []byte
	if br, ok := req.Reader.(*bufio.Reader); ok {
		pre = buffered(br)
	}
	s.tunnel(SOCKS5, conn, pre, up)
	return nil
}

// socksCode is the SOCKS5 reply of a request that failed after it was
// allowed.
func socksCode(err error) uint8 {
	switch {
	case errors.Is(err, errUnresolved):
		return statute.RepHostUnreachable
	case errors.Is(err, syscall.ECONNREFUSED):
		return statute.RepConnectionRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return statute.RepNetworkUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, context.DeadlineExceeded):
		return statute.RepHostUnreachable
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return statute.RepHostUnreachable
	}
	return statute.RepServerFailure
}

// socksNotSupported refuses BIND and UDP ASSOCIATE with "command not
// supported" (0x07): only TCP CONNECT goes through the proxy.
func socksNotSupported(_ context.Context, w io.Writer, _ *socks5.Request) error {
	return socks5.SendReply(w, statute.RepCommandNotSupported, nil)
}

// noLookup is the library's resolver: it resolves nothing, so no name is
// looked up before the rules allowed it (open resolves, once).
type noLookup struct{}

// Resolve returns no address.
func (noLookup) Resolve(ctx context.Context, _ string) (context.Context, net.IP, error) {
	return ctx, nil, nil
}

// tokenStore checks RFC 1929 credentials against the Server's Token.
type tokenStore struct{ s *Server }

// Valid compares in constant time.
func (t tokenStore) Valid(user, password, _ string) bool {
	return t.s.tokenOK(user, password)
}
