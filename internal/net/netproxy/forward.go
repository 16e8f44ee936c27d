package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
)

// RuleBadHello refuses a tunnel whose client began a TLS handshake that
// could not be read (malformed, too long or too slow).
const RuleBadHello = "unreadable TLS ClientHello"

// ServeForward serves a forwarded port: every connection accepted from l
// (an in-sandbox listener) is joined to a new connection to the host's
// 127.0.0.1:port (or, when nothing answers there, [::1]:port) through
// Config.Dial, without rules: forwarded ports are named by the user. Each
// connection is an allowed Event.
func (s *Server) ServeForward(l net.Listener, port int) error {
	if port < 1 || port > 65535 {
		_ = l.Close()
		return fmt.Errorf("netproxy: the forwarded port %d is out of range (1-65535)", port)
	}
	return s.serve(l, func(c net.Conn) { s.forwardConn(c, port) })
}

// forwardConn joins one forwarded-port client to the host's loopback.
func (s *Server) forwardConn(c net.Conn, port int) {
	defer c.Close()
	ev := Event{Protocol: PortForward, Host: "127.0.0.1", Port: port, Allowed: true, Rule: RuleForwardPort}
	var up net.Conn
	var errs []error
	for _, a := range []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()} {
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.DialTimeout)
		conn, err := s.dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		cancel()
		if err == nil {
			up, ev.Addr = conn, a
			break
		}
		errs = append(errs, err)
	}
	if up == nil {
		ev.Addr = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		ev.Reason = fmt.Sprintf("the forwarded port %d: nothing answers on the host's loopback: %v", port, errors.Join(errs...))
		s.record(ev)
		return
	}
	ev.Reason = fmt.Sprintf("the forwarded port %d reaches the host's %s", port, netip.AddrPortFrom(ev.Addr, uint16(port)))
	s.record(ev)
	defer up.Close()
	if !s.track(c, up) {
		return
	}
	defer s.untrack(c, up)
	done := make(chan struct{})
	go func() {
		pipe(c, up)
		close(done)
	}()
	pipe(up, c)
	<-done
}

// tunnel joins a client whose proxy handshake is answered to its checked
// upstream. The upstream's bytes flow to the client at once (a protocol
// where the server speaks first works); the client's first bytes (pre,
// what the protocol's reader had buffered, else the first read) are held
// until they are known not to start a TLS handshake, or its ClientHello's
// server name passed checkSNI: a refused tunnel is closed before any byte
// of the client reached the upstream. Then both directions are copied
// between the unwrapped connections (splice between *net.TCPConn), each
// half-closed when its source ends.
func (s *Server) tunnel(proto Protocol, client net.Conn, pre []byte, up *upstream) {
	if bs := s.bound(up.target, up.port); len(bs) > 0 {
		s.intercept(proto, client, pre, up, bs)
		return
	}
	defer client.Close()
	defer up.conn.Close()
	if !s.track(client, up.conn) {
		return
	}
	defer s.untrack(client, up.conn)
	down := make(chan struct{})
	go func() {
		pipe(client, up.conn)
		close(down)
	}()
	abort := func() {
		_ = client.Close()
		_ = up.conn.Close()
		<-down
	}
	head, err := readHead(client, pre)
	ev := Event{Protocol: proto, Host: up.target.String(), Port: up.port, Addr: up.addr}
	switch {
	case err != nil && head.tls:
		s.refuse(ev, RuleBadHello, fmt.Sprintf("the tunnel's TLS ClientHello cannot be read: %v", err), "", "", true)
		abort()
		return
	case err != nil && errors.Is(err, io.EOF):
		// The client ended its side before sending anything.
		closeWrite(up.conn)
		<-down
		return
	case err != nil:
		abort()
		return
	case head.tls:
		if why := s.checkSNI(up.target, up.port, head.sni); why != "" {
			s.refuse(ev, RuleSNIMismatch, why, "", "", true)
			abort()
			return
		}
	}
	if _, err := up.conn.Write(head.bytes); err != nil {
		abort()
		return
	}
	pipe(up.conn, client)
	<-down
}

// pipe copies src to dst until src ends, then half-closes dst; on an
// error it closes both, which ends the other direction too.
func pipe(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		_ = src.Close()
		return
	}
	closeWrite(dst)
}

// closeWrite half-closes c when it can (TCP), else closes it.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	_ = c.Close()
}

// buffered takes the bytes br read ahead of the protocol's handshake (a
// client that sent its first bytes without waiting for the answer).
func buffered(br *bufio.Reader) []byte {
	if br == nil || br.Buffered() == 0 {
		return nil
	}
	b, _ := br.Peek(br.Buffered())
	return append([]byte(nil), b...)
}
