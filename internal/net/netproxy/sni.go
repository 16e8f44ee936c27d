package netproxy

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/cordon-sandbox/cordon/internal/net/netrule"
)

const (
	// maxHello bounds the bytes read while looking for a ClientHello: a
	// handshake message is at most 64 KiB (crypto/tls's own limit), plus
	// the headers of the records it spans.
	maxHello = 80 << 10
	// recordTypeHandshake is the first byte of a TLS handshake record.
	recordTypeHandshake = 0x16
)

// helloTimeout bounds the time a client that began a TLS handshake takes
// to send the rest of its ClientHello (a variable for the tests).
var helloTimeout = 10 * time.Second

// errHelloRead stops crypto/tls's server handshake once the ClientHello
// is parsed.
var errHelloRead = errors.New("netproxy: ClientHello read")

// errHelloTooBig is a ClientHello longer than maxHello.
var errHelloTooBig = fmt.Errorf("the TLS ClientHello is longer than %d bytes", maxHello)

// clientHead is what a tunnel's client sent first.
type clientHead struct {
	// bytes is every byte read from the client, to replay to the upstream.
	bytes []byte
	// tls says the client began a TLS handshake record.
	tls bool
	// sni is the ClientHello's server name ("" when it has none).
	sni string
}

// readHead reads the first bytes a tunnel's client sends: pre (what the
// protocol's reader had already buffered), else one Read, with no time
// limit (an idle client is an idle tunnel; Close ends it). When they
// begin a TLS handshake record, it reads the whole ClientHello, at most
// maxHello bytes within helloTimeout, and parses it with crypto/tls's own
// server handshake on a connection that only reads (its alert is
// discarded), stopped from GetConfigForClient. An error with tls set is a
// handshake that could not be read (the tunnel is refused); an error
// without it is the client going away first.
func readHead(c net.Conn, pre []byte) (clientHead, error) {
	head := clientHead{bytes: pre}
	if len(head.bytes) == 0 {
		buf := make([]byte, 4096)
		n, err := 0, error(nil)
		// A Read may return nothing and no error (never on TCP): a few
		// times only.
		for range 16 {
			if n, err = c.Read(buf); n > 0 || err != nil {
				break
			}
		}
		if n == 0 {
			if err == nil {
				err = io.ErrNoProgress
			}
			return head, err
		}
		head.bytes = buf[:n]
	}
	if head.bytes[0] != recordTypeHandshake {
		return head, nil
	}
	head.tls = true
	if err := c.SetReadDeadline(time.Now().Add(helloTimeout)); err != nil {
		return head, fmt.Errorf("bounding the ClientHello's read: %w", err)
	}
	rc := &helloConn{Conn: c, rec: head.bytes, pending: len(head.bytes)}
	var got bool
	cfg := &tls.Config{GetConfigForClient: func(hi *tls.ClientHelloInfo) (*tls.Config, error) {
		head.sni, got = hi.ServerName, true
		return nil, errHelloRead
	}}
	err := tls.Server(rc, cfg).Handshake()
	head.bytes = rc.rec
	// A connection that cannot clear its deadline is closed: its tunnel
	// ends at its next read either way.
	_ = c.SetReadDeadline(time.Time{})
	if !got {
		if rc.err != nil {
			err = rc.err
		}
		return head, fmt.Errorf("reading the TLS ClientHello: %w", err)
	}
	return head, nil
}

// helloConn is the connection crypto/tls parses a ClientHello from: it
// replays the bytes already read, records every byte it reads, reads at
// most maxHello bytes, and writes nothing (an alert is dropped).
type helloConn struct {
	net.Conn
	rec     []byte // every byte read, including the replayed ones
	pending int    // how many bytes of rec are still to replay
	off     int    // where the replay is
	err     error  // the first error of the underlying connection
}

// Read replays, then reads from the client, recording.
func (h *helloConn) Read(p []byte) (int, error) {
	if h.off < h.pending {
		n := copy(p, h.rec[h.off:h.pending])
		h.off += n
		return n, nil
	}
	room := maxHello - len(h.rec)
	if room <= 0 {
		return 0, errHelloTooBig
	}
	if len(p) > room {
		p = p[:room]
	}
	n, err := h.Conn.Read(p)
	h.rec = append(h.rec, p[:n]...)
	if err != nil && h.err == nil {
		h.err = err
	}
	return n, err
}

// Write drops what crypto/tls sends (an alert): the client reads nothing
// from the proxy until the tunnel is decided.
func (h *helloConn) Write(p []byte) (int, error) { return len(p), nil }

// Close leaves the client's connection to the tunnel.
func (h *helloConn) Close() error { return nil }

// checkSNI decides a tunnel's TLS server name against its CONNECT target:
// a name target must be the same host, canonicalised; an IP-literal
// target may carry the same IP or a name that the rules allow on port.
// It returns "" when the name passes, else why not.
func (s *Server) checkSNI(t netrule.Target, port int, sni string) string {
	if sni == "" {
		return ""
	}
	st, err := netrule.ParseTarget(sni)
	if err != nil {
		return fmt.Sprintf("the TLS server name %q is not a host name: %v", sni, err)
	}
	if st.String() == t.String() {
		return ""
	}
	if t.Addr.IsValid() && !st.Addr.IsValid() {
		d := s.rules.DecideName(st, port)
		if d.Allowed {
			return ""
		}
		return fmt.Sprintf("the TLS server name %s of a tunnel to %s is not allowed: %s", st, t, d.Reason)
	}
	return fmt.Sprintf("the TLS server name %s differs from the tunnel's host %s (no domain fronting)", st, t)
}
