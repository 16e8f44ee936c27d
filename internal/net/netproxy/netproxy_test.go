package netproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/proxy"
)

// echoServer is a TCP echo server on 127.0.0.1; it returns its port.
func echoServer(t *testing.T) int {
	t.Helper()
	l := listen(t)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(testTimeout))
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// connectHTTP opens a CONNECT tunnel by hand, without a testing.T (for
// goroutines).
func connectHTTP(proxyAddr, target string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", proxyAddr, testTimeout)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(testTimeout))
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || br.Buffered() > 0 {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: %s", target, resp.Status)
	}
	return c, nil
}

func TestConcurrentConnections(t *testing.T) {
	const n = 200
	port := echoServer(t)
	target := hostPort("127.0.0.1", port)
	h := newHarness(t, []string{target}, nil, "")
	sd, err := proxy.SOCKS5("tcp", h.socksAddr, nil, &net.Dialer{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	dialers := map[string]func() (net.Conn, error){
		"CONNECT": func() (net.Conn, error) { return connectHTTP(h.httpAddr, target) },
		"SOCKS5": func() (net.Conn, error) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			return sd.(proxy.ContextDialer).DialContext(ctx, "tcp", target)
		},
	}
	for name, dial := range dialers {
		t.Run(name, func(t *testing.T) {
			// Every tunnel is open before any carries a byte: n at once.
			var opened, wg sync.WaitGroup
			start := make(chan struct{})
			errs := make(chan error, n)
			opened.Add(n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := dial()
					opened.Done()
					if err != nil {
						errs <- fmt.Errorf("connection %d: %w", i, err)
						return
					}
					defer c.Close()
					_ = c.SetDeadline(time.Now().Add(testTimeout))
					<-start
					msg := make([]byte, 16<<10)
					_, _ = rand.Read(msg)
					msg[0] = 'x' // not a TLS handshake record (0x16), which must be a ClientHello
					go func() { _, _ = c.Write(msg) }()
					got := make([]byte, len(msg))
					if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
						errs <- fmt.Errorf("connection %d: echo: %v", i, err)
					}
				}()
			}
			opened.Wait()
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
	if r := h.srv.Refusals(); len(r) != 0 {
		t.Errorf("Refusals() = %+v", r)
	}
}

func TestServeForward(t *testing.T) {
	port := echoServer(t)
	h := newHarness(t, nil, nil, "")
	fl := listen(t)
	served := make(chan error, 1)
	go func() { served <- h.srv.ServeForward(fl, port) }()
	c, err := net.DialTimeout("tcp", fl.Addr().String(), testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(testTimeout))
	if _, err := io.WriteString(c, "ping"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo through the forwarded port: %q %v", buf, err)
	}
	evs := h.Events()
	want := Event{Protocol: PortForward, Host: "127.0.0.1", Port: port, Addr: loopback, Allowed: true, Rule: RuleForwardPort}
	if len(evs) != 1 || !sameEvent(evs[0], want) {
		t.Errorf("events %+v; want %+v", evs, want)
	}

	// A forwarded port where nothing listens: the client's connection is
	// closed; ::1 was tried after 127.0.0.1.
	dead := listen(t)
	deadPort := dead.Addr().(*net.TCPAddr).Port
	_ = dead.Close()
	fl2 := listen(t)
	go func() { _ = h.srv.ServeForward(fl2, deadPort) }()
	c2, err := net.DialTimeout("tcp", fl2.Addr().String(), testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_ = c2.SetDeadline(time.Now().Add(testTimeout))
	if b, err := io.ReadAll(c2); err != nil || len(b) != 0 {
		t.Errorf("a dead forwarded port: %q %v; want the connection closed", b, err)
	}
	if d := h.Dials(); !slices.Equal(d, []string{hostPort("127.0.0.1", port), hostPort("127.0.0.1", deadPort), hostPort("::1", deadPort)}) {
		t.Errorf("dials %q", d)
	}
	if err := h.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Errorf("ServeForward after Close: %v", err)
	}
	if err := h.srv.ServeForward(listen(t), 0); err == nil {
		t.Error("ServeForward of port 0: no error")
	}
}

func TestCloseEndsEverything(t *testing.T) {
	port := echoServer(t)
	target := hostPort("127.0.0.1", port)
	h := newHarness(t, []string{target}, nil, "")
	tunnel, err := connectHTTP(h.httpAddr, target)
	if err != nil {
		t.Fatal(err)
	}
	defer tunnel.Close()
	socksTunnel := tunnelTo(t, h, true, "127.0.0.1", port)
	idleSOCKS, err := net.Dial("tcp", h.socksAddr) // no greeting yet
	if err != nil {
		t.Fatal(err)
	}
	defer idleSOCKS.Close()
	idleHTTP, err := net.Dial("tcp", h.httpAddr) // no request yet
	if err != nil {
		t.Fatal(err)
	}
	defer idleHTTP.Close()
	time.Sleep(50 * time.Millisecond) // the server has accepted them

	start := time.Now()
	if err := h.srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %s", took)
	}
	for name, c := range map[string]net.Conn{"CONNECT tunnel": tunnel, "SOCKS5 tunnel": socksTunnel, "idle SOCKS5": idleSOCKS, "idle HTTP": idleHTTP} {
		_ = c.SetReadDeadline(time.Now().Add(testTimeout))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s after Close: read %v; want it closed", name, err)
		}
	}
	if _, err := net.DialTimeout("tcp", h.httpAddr, time.Second); err == nil {
		t.Error("the HTTP listener still accepts after Close")
	}
	if err := h.srv.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	l := listen(t)
	if err := h.srv.ServeHTTP(l); err != nil {
		t.Errorf("ServeHTTP after Close: %v", err)
	}
	if _, err := l.Accept(); err == nil {
		t.Error("ServeHTTP after Close left its listener open")
	}
}

func TestRefusalsDistinctInOrder(t *testing.T) {
	h := newHarness(t, []string{"allowed.test"}, []string{"blocked.test"}, "")
	c := h.httpClient(nil)
	for _, u := range []string{"http://denied.test/", "http://denied.test/again", "http://denied.test:443/", "http://1.2.3.4/", "http://blocked.test/", "http://denied.test/"} {
		if code, _, _, err := get(t, c, u, ""); err != nil || code != http.StatusForbidden {
			t.Fatalf("GET %s: %d %v", u, code, err)
		}
	}
	if rep, _, err := socksRaw(t, h.socksAddr, "", "", 1, "denied.test", 80); err != nil || rep != 0x02 {
		t.Fatalf("SOCKS5: 0x%02x %v", rep, err)
	}
	want := []Refused{
		{Host: "denied.test", Port: 80, Rule: "no allow rule", Allow: "denied.test:80"},
		{Host: "denied.test", Port: 443, Rule: "no allow rule", Allow: "denied.test:443"},
		{Host: "1.2.3.4", Port: 80, Rule: "no allow rule", Allow: "1.2.3.4:80"},
		{Host: "blocked.test", Port: 80, Rule: "blocked.test", Hint: "a deny entry refuses it, and deny beats allow: remove or narrow it to allow it"},
	}
	if got := h.srv.Refusals(); !slices.Equal(got, want) {
		t.Errorf("Refusals() =\n%+v\nwant\n%+v", got, want)
	}
	if n := len(h.Events()); n != 7 {
		t.Errorf("%d events; want one per request (7)", n)
	}
	for _, e := range h.Events() {
		if e.Time.IsZero() || e.Reason == "" {
			t.Errorf("event %+v has no time or reason", e)
		}
	}
}

// A name resolved by Go's own resolver: "localhost" is found in
// /etc/hosts (the resolver's DNS connections are refused, so no packet
// leaves loopback even without the entry), its loopback addresses need an
// IP rule, and the default dialer connects to the checked one.
func TestHostResolverAndDefaultDialer(t *testing.T) {
	o := newOrigin(t, false)
	rules := []string{"localhost", fmt.Sprintf("127.0.0.1:%d", o.port())}
	var mu sync.Mutex
	var evs []Event
	var dns []string
	resolver := &net.Resolver{PreferGo: true, Dial: func(_ context.Context, network, address string) (net.Conn, error) {
		mu.Lock()
		dns = append(dns, address)
		mu.Unlock()
		return nil, fmt.Errorf("test: no DNS (%s %s)", network, address)
	}}
	s := New(Config{Rules: mustCompile(t, rules, nil), Resolver: resolver, Record: func(e Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() }})
	l := listen(t)
	go func() { _ = s.ServeHTTP(l) }()
	defer s.Close()
	u := &http.Transport{Proxy: http.ProxyURL(mustURL(t, "http://"+l.Addr().String()))}
	code, body, _, err := get(t, &http.Client{Transport: u, Timeout: testTimeout}, fmt.Sprintf("http://localhost:%d/l", o.port()), "")
	if err != nil || code != http.StatusOK || body != "origin /l" {
		t.Fatalf("GET localhost: %d %q %v", code, body, err)
	}
	mu.Lock()
	defer mu.Unlock()
	var allowed []netip.Addr
	for _, e := range evs {
		if e.Allowed {
			allowed = append(allowed, e.Addr)
		} else if !e.Addr.IsLoopback() {
			t.Errorf("refused %+v; only ::1 may be", e)
		}
	}
	if !slices.Equal(allowed, []netip.Addr{loopback}) {
		t.Errorf("allowed %v; want 127.0.0.1 only", allowed)
	}
	if len(dns) != 0 {
		t.Errorf("DNS asked of %q; want /etc/hosts only", dns)
	}
}

// Close stops a connect in progress: a dialer that waits for its context
// (a host that never answers) is let go at once, through either proxy.
func TestCloseStopsDials(t *testing.T) {
	dialing := make(chan string, 2)
	s := New(Config{
		Rules: mustCompile(t, []string{"1.2.3.4:443"}, nil),
		Dial: func(ctx context.Context, _, address string) (net.Conn, error) {
			dialing <- address
			<-ctx.Done()
			return nil, ctx.Err()
		},
		DialTimeout: time.Hour,
	})
	hl, sl := listen(t), listen(t)
	go func() { _ = s.ServeHTTP(hl) }()
	go func() { _ = s.ServeSOCKS5(sl) }()
	answers := make(chan string, 2)
	go func() {
		c, err := connectHTTP(hl.Addr().String(), "1.2.3.4:443")
		if c != nil {
			c.Close()
		}
		answers <- fmt.Sprintf("CONNECT: %v", err)
	}()
	go func() {
		rep, _, err := socksRaw(t, sl.Addr().String(), "", "", 1, "1.2.3.4", 443)
		answers <- fmt.Sprintf("SOCKS5: 0x%02x %v", rep, err)
	}()
	for range 2 {
		select {
		case a := <-dialing:
			if a != "1.2.3.4:443" {
				t.Errorf("dialing %s", a)
			}
		case <-time.After(testTimeout):
			t.Fatal("no dial began")
		}
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %s with dials in progress", took)
	}
	for range 2 {
		select {
		case a := <-answers:
			t.Log(a)
		case <-time.After(testTimeout):
			t.Fatal("a client got no answer after Close")
		}
	}
}

// TestMaxConns: connections past Config.MaxConns are turned away (HTTP:
// 503; SOCKS5: closed), and a slot freed by an ended tunnel is taken
// again: a sandbox cannot hold an unbounded number of the host's
// descriptors open through the proxy.
func TestMaxConns(t *testing.T) {
	port := echoServer(t)
	target := hostPort("127.0.0.1", port)
	h := newHarnessWith(t, []string{target}, nil, "", func(c *Config) { c.MaxConns = 2 })
	a, err := connectHTTP(h.httpAddr, target)
	if err != nil {
		t.Fatal(err)
	}
	b, err := connectHTTP(h.httpAddr, target)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := connectHTTP(h.httpAddr, target); err == nil || !strings.Contains(err.Error(), "503") {
		if c != nil {
			c.Close()
		}
		t.Errorf("a third CONNECT with MaxConns 2: %v; want 503", err)
	}
	sd, err := proxy.SOCKS5("tcp", h.socksAddr, nil, &net.Dialer{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := sd.Dial("tcp", target); err == nil {
		c.Close()
		t.Errorf("a SOCKS5 client past MaxConns was served")
	}
	if got := h.srv.OverCap(); got != 2 {
		t.Errorf("OverCap() = %d; want 2", got)
	}
	a.Close()
	b.Close()
	// The slots come back when the tunnels end (bounded wait).
	deadline := time.Now().Add(testTimeout)
	for {
		c, err := connectHTTP(h.httpAddr, target)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot came back after the tunnels ended: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
