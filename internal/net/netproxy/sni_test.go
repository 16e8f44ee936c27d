package netproxy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// firstRead is a TCP server on 127.0.0.1 that reports, for each
// connection, how many bytes its first read got (0 when the connection
// ended first): an upstream that tells whether a client's byte reached it.
type firstRead struct {
	l   net.Listener
	got chan int
}

func newFirstRead(t *testing.T) *firstRead {
	t.Helper()
	f := &firstRead{l: listen(t), got: make(chan int, 16)}
	go func() {
		for {
			c, err := f.l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(testTimeout))
				n, _ := c.Read(make([]byte, 4096))
				f.got <- n
			}()
		}
	}()
	return f
}

func (f *firstRead) port() int { return f.l.Addr().(*net.TCPAddr).Port }

// wait returns the first read's byte count of the next connection.
func (f *firstRead) wait(t *testing.T) int {
	t.Helper()
	select {
	case n := <-f.got:
		return n
	case <-time.After(testTimeout):
		t.Fatal("the upstream got no connection")
		return 0
	}
}

// tunnelTo opens a tunnel to host:port through the harness's HTTP proxy
// (CONNECT) or SOCKS5 proxy.
func tunnelTo(t *testing.T, h *harness, socks bool, host string, port int) net.Conn {
	t.Helper()
	if socks {
		rep, c, err := socksRaw(t, h.socksAddr, "", "", 1, host, port)
		if err != nil || rep != 0 {
			t.Fatalf("SOCKS5 CONNECT %s: 0x%02x %v", hostPort(host, port), rep, err)
		}
		return c
	}
	target := hostPort(host, port)
	resp, _, c := rawHTTP(t, h.httpAddr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %d", target, resp.StatusCode)
	}
	return c
}

func TestSNIChecked(t *testing.T) {
	up := newFirstRead(t)
	p := up.port()
	h := newHarness(t, []string{fmt.Sprintf("127.0.0.1:%d", p), fmt.Sprintf("allowed.test:%d", p), fmt.Sprintf("other.test:%d", p), "example.com:1"}, nil, "")
	tests := []struct {
		name       string
		host       string // the CONNECT host
		serverName string // the ClientHello's (Go sends none for an IP)
		refused    bool
	}{
		{"a name, a name not allowed", "allowed.test", "denied.test", true},
		{"a name, another name allowed", "allowed.test", "other.test", true},
		{"a name, the same name in other case", "allowed.test", "ALLOWED.Test", false},
		{"a name, the same name", "allowed.test", "allowed.test", false},
		{"a name, no SNI (an IP server name)", "allowed.test", "127.0.0.1", false},
		{"an IP, a name not allowed", "127.0.0.1", "denied.test", true},
		{"an IP, a name allowed on this port", "127.0.0.1", "allowed.test", false},
		{"an IP, a name allowed on another port", "127.0.0.1", "example.com", true},
		{"an IP, no SNI", "127.0.0.1", "127.0.0.1", false},
	}
	for _, tt := range tests {
		for _, socks := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s socks=%v", tt.name, socks), func(t *testing.T) {
				n := len(h.Events())
				c := tunnelTo(t, h, socks, tt.host, p)
				hsErr := make(chan error, 1)
				go func() {
					hsErr <- tls.Client(c, &tls.Config{ServerName: tt.serverName, InsecureSkipVerify: true}).Handshake()
				}()
				if got := up.wait(t); (got == 0) != tt.refused {
					t.Errorf("the upstream's first read got %d bytes; refused=%v", got, tt.refused)
				}
				_ = c.Close()
				if err := <-hsErr; err == nil {
					t.Errorf("the handshake with a server that is not TLS succeeded")
				}
				evs := h.Events()[n:]
				last := evs[len(evs)-1]
				if tt.refused && (last.Allowed || last.Rule != RuleSNIMismatch || last.Addr != loopback || !strings.Contains(last.Reason, strings.ToLower(tt.serverName))) {
					t.Errorf("last event %+v; want an SNI mismatch naming %s", last, tt.serverName)
				}
				if !tt.refused && (len(evs) != 1 || !last.Allowed) {
					t.Errorf("events %+v; want one allowed", evs)
				}
			})
		}
	}
	found := false
	for _, r := range h.srv.Refusals() {
		if r.Rule == RuleSNIMismatch && r.Allow == "" && r.Hint == hintSNI && r.Port == p {
			found = true
		}
	}
	if !found {
		t.Errorf("Refusals() = %+v; want an SNI mismatch", h.srv.Refusals())
	}
}

// A Go HTTPS client that fronts example.com through an allowed host gets
// nothing from the origin, through either proxy.
func TestDomainFrontingRefused(t *testing.T) {
	o := newOrigin(t, true)
	p := o.port()
	h := newHarness(t, []string{fmt.Sprintf("127.0.0.1:%d", p), fmt.Sprintf("allowed.test:%d", p), fmt.Sprintf("example.com:%d", p)}, nil, "")
	roots := x509.NewCertPool()
	roots.AddCert(o.Certificate())
	fronting := &tls.Config{RootCAs: roots, ServerName: "example.com"}
	hc := h.httpClient(&http.Transport{TLSClientConfig: fronting})
	sc := h.socksClient(t, nil)
	sc.Transport.(*http.Transport).TLSClientConfig = fronting
	for _, c := range []*http.Client{hc, sc} {
		_, _, _, err := get(t, c, fmt.Sprintf("https://allowed.test:%d/f", p), "")
		if err == nil {
			t.Errorf("fronting example.com through allowed.test succeeded")
		}
	}
	if headers, _ := o.got(); len(headers) != 0 {
		t.Errorf("the origin got %d requests; want none", len(headers))
	}
	// Without fronting, the same client and host work.
	if code, _, _, err := get(t, hc, fmt.Sprintf("https://example.com:%d/f", p), ""); err != nil || code != 200 {
		t.Errorf("GET example.com: %d %v", code, err)
	}
}

// A protocol whose server speaks first works through a tunnel: the
// client's first bytes are awaited without holding the server's.
func TestServerFirstProtocol(t *testing.T) {
	l := listen(t)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.WriteString(c, "220 banner\r\n")
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	p := l.Addr().(*net.TCPAddr).Port
	h := newHarness(t, []string{fmt.Sprintf("127.0.0.1:%d", p)}, nil, "")
	for _, socks := range []bool{false, true} {
		c := tunnelTo(t, h, socks, "127.0.0.1", p)
		buf := make([]byte, 12)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "220 banner\r\n" {
			t.Fatalf("socks=%v: banner %q %v", socks, buf, err)
		}
		if _, err := io.WriteString(c, "EHLO x\r\n"); err != nil {
			t.Fatal(err)
		}
		buf = make([]byte, 8)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "EHLO x\r\n" {
			t.Fatalf("socks=%v: echo %q %v", socks, buf, err)
		}
		// A half-close reaches the server, whose end reaches the client.
		if err := c.(*bufConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if rest, err := io.ReadAll(c); err != nil || len(rest) != 0 {
			t.Fatalf("socks=%v: after the half-close: %q %v", socks, rest, err)
		}
	}
}

// clientHello returns the first flight of a Go TLS client for serverName.
func clientHello(t testing.TB, serverName string) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		_ = tls.Client(a, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}).Handshake()
	}()
	_ = b.SetReadDeadline(time.Now().Add(testTimeout))
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(b, hdr); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(b, body); err != nil {
		t.Fatal(err)
	}
	return append(hdr, body...)
}

// feeder makes connected pairs of unix stream sockets: a real
// connection, where (unlike net.Pipe) the peer's close is an EOF at the
// reader and never fails its SetReadDeadline, as on TCP.
func feeder(tb testing.TB) func(chunks [][]byte, hold bool) (net.Conn, func()) {
	tb.Helper()
	ln, err := net.Listen("unix", filepath.Join(tb.TempDir(), "s"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	// feed writes chunks to one end of a pair (then half-closes it,
	// unless hold) and returns the other end.
	return func(chunks [][]byte, hold bool) (net.Conn, func()) {
		a, err := net.Dial("unix", ln.Addr().String())
		if err != nil {
			tb.Fatal(err)
		}
		b, err := ln.Accept()
		if err != nil {
			_ = a.Close()
			tb.Fatal(err)
		}
		go func() {
			for _, c := range chunks {
				if _, err := a.Write(c); err != nil {
					return
				}
			}
			if !hold {
				_ = a.(*net.UnixConn).CloseWrite()
			}
		}()
		return b, func() { _ = a.Close(); _ = b.Close() }
	}
}

func TestReadHead(t *testing.T) {
	hello := clientHello(t, "allowed.test")
	noSNI := clientHello(t, "127.0.0.1")
	var bytewise [][]byte
	for i := range hello {
		bytewise = append(bytewise, hello[i:i+1])
	}
	// Two handshake records holding one ClientHello.
	split := append(append([]byte{0x16, 3, 1, 0, 40}, hello[5:45]...), append([]byte{0x16, 3, 1, byte((len(hello) - 45) >> 8), byte(len(hello) - 45)}, hello[45:]...)...)
	tests := []struct {
		name    string
		pre     []byte
		chunks  [][]byte
		hold    bool
		wantTLS bool
		wantSNI string
		wantErr bool
	}{
		{name: "not TLS", chunks: [][]byte{[]byte("SSH-2.0-OpenSSH_9\r\n")}},
		{name: "a ClientHello", chunks: [][]byte{hello}, wantTLS: true, wantSNI: "allowed.test"},
		{name: "a ClientHello byte by byte", chunks: bytewise, wantTLS: true, wantSNI: "allowed.test"},
		{name: "a ClientHello in two records", chunks: [][]byte{split}, wantTLS: true, wantSNI: "allowed.test"},
		{name: "a ClientHello already buffered", pre: hello[:10], chunks: [][]byte{hello[10:]}, wantTLS: true, wantSNI: "allowed.test"},
		{name: "a ClientHello without SNI", chunks: [][]byte{noSNI}, wantTLS: true},
		{name: "a ClientHello cut short", chunks: [][]byte{hello[:len(hello)/2]}, wantTLS: true, wantErr: true},
		{name: "a ClientHello that stalls", chunks: [][]byte{hello[:len(hello)/2]}, hold: true, wantTLS: true, wantErr: true},
		{name: "a handshake record of garbage", chunks: [][]byte{{0x16, 3, 1, 0, 4, 1, 0, 0, 0}}, wantTLS: true, wantErr: true},
		{name: "a record too long", chunks: [][]byte{{0x16, 3, 1, 0xff, 0xff}}, wantTLS: true, wantErr: true},
		{name: "nothing", chunks: nil, wantErr: true},
	}
	defer func(d time.Duration) { helloTimeout = d }(helloTimeout)
	helloTimeout = 300 * time.Millisecond
	feed := feeder(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, done := feed(tt.chunks, tt.hold)
			defer done()
			start := time.Now()
			head, err := readHead(c, tt.pre)
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("readHead took %s", took)
			}
			if (err != nil) != tt.wantErr || head.tls != tt.wantTLS || head.sni != tt.wantSNI {
				t.Fatalf("readHead: tls=%v sni=%q err=%v; want tls=%v sni=%q err=%v", head.tls, head.sni, err, tt.wantTLS, tt.wantSNI, tt.wantErr)
			}
			all := append(append([]byte(nil), tt.pre...), bytes.Join(tt.chunks, nil)...)
			if !bytes.HasPrefix(all, head.bytes) || (err == nil && tt.wantTLS && !bytes.Equal(head.bytes, all)) {
				t.Errorf("head.bytes (%d) is not what the client sent (%d)", len(head.bytes), len(all))
			}
		})
	}
}

// FuzzReadHead: whatever a client sends first, readHead ends, returns a
// prefix of it to replay, and says TLS only for a handshake record.
func FuzzReadHead(f *testing.F) {
	f.Add(clientHello(f, "allowed.test"))
	f.Add(clientHello(f, "127.0.0.1"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte{0x16, 3, 1, 0, 4, 1, 0, 0, 0})
	f.Add([]byte{0x16})
	helloTimeout = 200 * time.Millisecond
	feed := feeder(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, done := feed([][]byte{data}, false)
		defer done()
		head, err := readHead(c, nil)
		if !bytes.HasPrefix(data, head.bytes) {
			t.Fatalf("head.bytes %x is not a prefix of %x", head.bytes, data)
		}
		if len(data) == 0 && (err == nil || head.tls) {
			t.Fatalf("nothing sent: tls=%v err=%v", head.tls, err)
		}
		if head.tls != (len(data) > 0 && data[0] == recordTypeHandshake) {
			t.Fatalf("tls=%v for a first byte %x", head.tls, data[:min(1, len(data))])
		}
		if err == nil && head.tls && !bytes.Equal(head.bytes, data[:len(head.bytes)]) {
			t.Fatal("unreachable")
		}
		if err != nil && !head.tls && len(data) > 0 {
			t.Fatalf("an error %v for bytes that are not TLS", err)
		}
		if errors.Is(err, errHelloRead) {
			t.Fatal("the stop sentinel leaked")
		}
	})
}
