package netproxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/proxy"
)

// rawHTTP sends request (a whole request head, and body) to the proxy at
// addr and reads the answer; the connection stays open for a tunnel.
func rawHTTP(t *testing.T, addr, request string) (*http.Response, string, net.Conn) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(testTimeout))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(request)[0]})
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", request, err)
	}
	var body string
	if resp.StatusCode != http.StatusOK || resp.Request.Method != http.MethodConnect {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = string(b)
	}
	return resp, body, &bufConn{c.(*net.TCPConn), br}
}

func TestAllowedThroughBothProxies(t *testing.T) {
	plain := newOrigin(t, false)
	secure := newOrigin(t, true)
	pp, sp := plain.port(), secure.port()
	allow := []string{
		fmt.Sprintf("127.0.0.1:%d", pp), fmt.Sprintf("127.0.0.1:%d", sp),
		fmt.Sprintf("allowed.test:%d", pp), fmt.Sprintf("example.com:%d", sp),
	}
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	h := newHarness(t, allow, nil, "")
	tlsTransport := func() *http.Transport {
		return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	}
	httpClient := h.httpClient(nil)
	socksClient := h.socksClient(t, nil)
	socksTLS := h.socksClient(t, nil)
	socksTLS.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: roots}
	tests := []struct {
		name     string
		client   *http.Client
		url      string
		host     string // the canonical target
		port     int
		wantRule string
		protocol Protocol
	}{
		{"http forward to an IP", httpClient, fmt.Sprintf("http://127.0.0.1:%d/a", pp), "127.0.0.1", pp, fmt.Sprintf("127.0.0.1:%d", pp), HTTPForward},
		{"http forward to a name", httpClient, fmt.Sprintf("http://Allowed.Test.:%d/a", pp), "allowed.test", pp, fmt.Sprintf("127.0.0.1:%d", pp), HTTPForward},
		{"CONNECT to an IP (no SNI)", h.httpClient(tlsTransport()), fmt.Sprintf("https://127.0.0.1:%d/a", sp), "127.0.0.1", sp, fmt.Sprintf("127.0.0.1:%d", sp), HTTPConnect},
		{"CONNECT to a name, same SNI", h.httpClient(tlsTransport()), fmt.Sprintf("https://example.com:%d/a", sp), "example.com", sp, fmt.Sprintf("127.0.0.1:%d", sp), HTTPConnect},
		{"SOCKS5 to an IP", socksClient, fmt.Sprintf("http://127.0.0.1:%d/a", pp), "127.0.0.1", pp, fmt.Sprintf("127.0.0.1:%d", pp), SOCKS5},
		{"SOCKS5 to a name", socksClient, fmt.Sprintf("http://allowed.test:%d/a", pp), "allowed.test", pp, fmt.Sprintf("127.0.0.1:%d", pp), SOCKS5},
		{"SOCKS5 TLS to a name, same SNI", socksTLS, fmt.Sprintf("https://example.com:%d/a", sp), "example.com", sp, fmt.Sprintf("127.0.0.1:%d", sp), SOCKS5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(h.Events())
			code, body, _, err := get(t, tt.client, tt.url, "")
			if err != nil || code != http.StatusOK || body != "origin /a" {
				t.Fatalf("GET %s: %d %q %v; want 200 %q", tt.url, code, body, err, "origin /a")
			}
			evs := h.Events()[before:]
			want := Event{Protocol: tt.protocol, Host: tt.host, Port: tt.port, Addr: loopback, Allowed: true, Rule: tt.wantRule}
			if len(evs) != 1 || !sameEvent(evs[0], want) {
				t.Fatalf("events %+v; want one %+v", evs, want)
			}
		})
	}
	for _, d := range h.Dials() {
		if d != hostPort("127.0.0.1", pp) && d != hostPort("127.0.0.1", sp) {
			t.Errorf("dialed %s; want only the origins", d)
		}
	}
	if r := h.srv.Refusals(); len(r) != 0 {
		t.Errorf("Refusals() = %+v; want none", r)
	}
}

// sameEvent compares an Event but its Time and Reason.
func sameEvent(got, want Event) bool {
	got.Time, got.Reason = time.Time{}, ""
	return got == want
}

// refusalCases are the refused targets, each tried through every protocol.
var refusalCases = []struct {
	name       string
	allow      []string
	deny       []string
	host       string // as the client writes it
	port       int
	canonical  string
	rule       string
	lookups    []string
	addrEvents []string // the refused resolved addresses, each an Event
	allowFlag  string   // Refused.Allow
	hint       string   // Refused.Hint
}{
	{name: "a name without an allow rule", allow: []string{"allowed.test"}, host: "denied.test", port: 80,
		canonical: "denied.test", rule: "no allow rule", allowFlag: "denied.test:80"},
	{name: "deny beats allow", allow: []string{"*.test"}, deny: []string{"bad.test"}, host: "BAD.test.", port: 443,
		canonical: "bad.test", rule: "bad.test", hint: "a deny entry refuses it, and deny beats allow: remove or narrow it to allow it"},
	{name: "rebinding to loopback and metadata", allow: []string{"rebind.test"}, host: "rebind.test", port: 80,
		canonical: "rebind.test", rule: "loopback address", lookups: []string{"rebind.test."},
		addrEvents: []string{"127.0.0.1", "169.254.169.254"},
		hint:       "only an --allow-net entry naming its address (127.0.0.1:80) or a range holding it would allow it"},
	{name: "IPv6, IPv4-mapped and NAT64 metadata", allow: []string{"v6meta.test"}, host: "v6meta.test", port: 80,
		canonical: "v6meta.test", rule: "cloud metadata address", lookups: []string{"v6meta.test."},
		addrEvents: []string{"fd00:ec2::254", "169.254.169.254", "64:ff9b::a9fe:a9fe"},
		hint:       "only an --allow-net entry naming its address ([fd00:ec2::254]:80) or a range holding it would allow it"},
	{name: "metadata literal, allow all", allow: []string{"*"}, host: "169.254.169.254", port: 80,
		canonical: "169.254.169.254", rule: "cloud metadata address",
		hint: "only an --allow-net entry naming its address (169.254.169.254:80) or a range holding it would allow it"},
	{name: "metadata in decimal", allow: []string{"*"}, host: "2852039166", port: 80,
		canonical: "169.254.169.254", rule: "cloud metadata address",
		hint: "only an --allow-net entry naming its address (169.254.169.254:80) or a range holding it would allow it"},
	{name: "loopback in short form", allow: []string{"*"}, host: "127.1", port: 8080,
		canonical: "127.0.0.1", rule: "loopback address",
		hint: "only an --allow-net entry naming its address (127.0.0.1:8080) or a range holding it would allow it"},
	{name: "private literal", allow: []string{"*"}, host: "10.0.0.1", port: 5432,
		canonical: "10.0.0.1", rule: "private address",
		hint: "only an --allow-net entry naming its address (10.0.0.1:5432) or a range holding it would allow it"},
	{name: "public literal without a rule", allow: []string{"allowed.test"}, host: "1.2.3.4", port: 443,
		canonical: "1.2.3.4", rule: "no allow rule", allowFlag: "1.2.3.4:443"},
	{name: "a name resolved only to a denied range", allow: []string{"rebind.test", "127.0.0.0/8"}, deny: []string{"169.254.0.0/16", "127.0.0.1"}, host: "rebind.test", port: 80,
		canonical: "rebind.test", rule: "127.0.0.1", lookups: []string{"rebind.test."},
		addrEvents: []string{"127.0.0.1", "169.254.169.254"}, hint: "a deny entry refuses it, and deny beats allow: remove or narrow it to allow it"},
}

func TestRefusedThroughEveryProtocol(t *testing.T) {
	for _, tc := range refusalCases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.allow, tc.deny, "")
			target := hostPort(tc.host, tc.port)
			checkEvents := func(t *testing.T, evs []Event, proto Protocol) {
				t.Helper()
				var want []Event
				if len(tc.addrEvents) == 0 {
					want = append(want, Event{Protocol: proto, Host: tc.canonical, Port: tc.port, Rule: tc.rule})
					if a, err := netip.ParseAddr(tc.canonical); err == nil {
						want[0].Addr = a
					}
				}
				for _, a := range tc.addrEvents {
					want = append(want, Event{Protocol: proto, Host: tc.canonical, Port: tc.port, Addr: netip.MustParseAddr(a)})
				}
				if len(evs) != len(want) {
					t.Fatalf("events %+v; want %d", evs, len(want))
				}
				for i := range evs {
					if evs[i].Allowed || evs[i].Host != want[i].Host || evs[i].Port != want[i].Port || evs[i].Addr != want[i].Addr || evs[i].Protocol != proto || evs[i].Reason == "" {
						t.Errorf("event %d: %+v; want a refusal like %+v", i, evs[i], want[i])
					}
				}
				if len(tc.addrEvents) == 0 && evs[0].Rule != tc.rule {
					t.Errorf("rule %q; want %q", evs[0].Rule, tc.rule)
				}
			}
			checkBody := func(t *testing.T, code int, rule, body string) {
				t.Helper()
				if code != http.StatusForbidden || rule != tc.rule {
					t.Fatalf("answer %d, %s %q; want 403 and %q", code, DeniedHeader, rule, tc.rule)
				}
				line := strings.TrimSuffix(body, "\n")
				want := fmt.Sprintf("cordon: network: refused %s (%s): ", hostPort(tc.canonical, tc.port), tc.rule)
				if strings.Contains(line, "\n") || !strings.HasPrefix(line, want) || len(line) == len(want) {
					t.Errorf("body %q; want one line starting %q and a reason", body, want)
				}
			}

			// The plain HTTP request, from Go's client.
			n := len(h.Events())
			code, body, rule, err := get(t, h.httpClient(nil), "http://"+target+"/x", "")
			if err != nil {
				t.Fatal(err)
			}
			checkBody(t, code, rule, body)
			checkEvents(t, h.Events()[n:], HTTPForward)

			// The CONNECT, by hand (Go's client hides the body).
			n = len(h.Events())
			resp, body, _ := rawHTTP(t, h.httpAddr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
			checkBody(t, resp.StatusCode, resp.Header.Get(DeniedHeader), body)
			checkEvents(t, h.Events()[n:], HTTPConnect)

			// SOCKS5: the host as a domain name (socks5h), by hand and
			// through x/net/proxy.
			n = len(h.Events())
			rep, _, err := socksRaw(t, h.socksAddr, "", "", 1, tc.host, tc.port)
			if err != nil || rep != 0x02 {
				t.Fatalf("SOCKS5 CONNECT %s: reply 0x%02x, %v; want 0x02 (not allowed by ruleset)", target, rep, err)
			}
			checkEvents(t, h.Events()[n:], SOCKS5)
			_, _, _, err = get(t, h.socksClient(t, nil), "http://"+target+"/x", "")
			if err == nil || !strings.Contains(err.Error(), "not allowed by ruleset") {
				t.Errorf("x/net/proxy client: %v; want not allowed by ruleset", err)
			}

			if d := h.Dials(); len(d) != 0 {
				t.Errorf("dialed %q; want nothing", d)
			}
			var wantLookups []string
			for range 4 {
				wantLookups = append(wantLookups, tc.lookups...)
			}
			if l := h.Lookups(); !slices.Equal(l, wantLookups) {
				t.Errorf("lookups %q; want %q (once per request, and only after the name is allowed)", l, wantLookups)
			}
			want := []Refused{{Host: tc.canonical, Port: tc.port, Rule: tc.rule, Allow: tc.allowFlag, Hint: tc.hint}}
			if r := h.srv.Refusals(); !slices.Equal(r, want) {
				t.Errorf("Refusals() = %+v; want %+v", r, want)
			}
		})
	}
}

func TestRebindingConnectsOnlyToCheckedAddress(t *testing.T) {
	o := newOrigin(t, false)
	ipRule := fmt.Sprintf("127.0.0.1:%d", o.port())
	h := newHarness(t, []string{"mixed.test", ipRule}, nil, "")
	for _, c := range []*http.Client{h.httpClient(nil), h.socksClient(t, nil)} {
		n := len(h.Events())
		url := fmt.Sprintf("http://mixed.test:%d/m", o.port())
		code, body, _, err := get(t, c, url, "")
		if err != nil || code != http.StatusOK || body != "origin /m" {
			t.Fatalf("GET %s: %d %q %v", url, code, body, err)
		}
		evs := h.Events()[n:]
		var got []string
		for _, e := range evs {
			got = append(got, fmt.Sprintf("%s %v %s", e.Addr, e.Allowed, e.Rule))
		}
		want := []string{"169.254.169.254 false cloud metadata address", "10.1.2.3 false private address", "127.0.0.1 true " + ipRule}
		if !slices.Equal(got, want) {
			t.Errorf("events %q; want %q", got, want)
		}
	}
	want := []string{hostPort("127.0.0.1", o.port()), hostPort("127.0.0.1", o.port())}
	if d := h.Dials(); !slices.Equal(d, want) {
		t.Errorf("dialed %q; want %q (never a refused address)", d, want)
	}
	if l := h.Lookups(); !slices.Equal(l, []string{"mixed.test.", "mixed.test."}) {
		t.Errorf("lookups %q; want one per request, of the absolute name", l)
	}
	if r := h.srv.Refusals(); len(r) != 0 {
		t.Errorf("Refusals() = %+v; want none (the request went ahead)", r)
	}
}

func TestAllowedPublicAddressIsTheOneDialed(t *testing.T) {
	h := newHarness(t, []string{"public.test:80", "1.2.3.4:443"}, nil, "")
	tests := []struct {
		url, dial string
	}{
		{"http://public.test/", "1.2.3.4:80"},
		{"http://1.2.3.4:443/", "1.2.3.4:443"},
	}
	for _, tt := range tests {
		n := len(h.Dials())
		code, body, _, err := get(t, h.httpClient(nil), tt.url, "")
		if err != nil || code != http.StatusBadGateway || !strings.Contains(body, "test dialer: refusing") {
			t.Errorf("GET %s: %d %q %v; want 502 from the recording dialer", tt.url, code, body, err)
		}
		if d := h.Dials()[n:]; !slices.Equal(d, []string{tt.dial}) {
			t.Errorf("GET %s dialed %q; want %q", tt.url, d, tt.dial)
		}
	}
	rep, _, err := socksRaw(t, h.socksAddr, "", "", 1, "public.test", 80)
	if err != nil || rep == 0 || rep == 0x02 {
		t.Errorf("SOCKS5 to a refused dial: reply 0x%02x, %v; want a failure that is not a refusal", rep, err)
	}
}

func TestTokenRequired(t *testing.T) {
	o := newOrigin(t, false)
	target := hostPort("127.0.0.1", o.port())
	const token = "s3cret-token"
	h := newHarness(t, []string{target}, nil, token)
	basic := func(user, pass string) string {
		return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass)) + "\r\n"
	}
	for _, tt := range []struct{ name, method, auth string }{
		{"GET without a token", "GET http://" + target + "/t", ""},
		{"GET with a wrong token", "GET http://" + target + "/t", basic(TokenUser, "wrong")},
		{"GET with a wrong user", "GET http://" + target + "/t", basic("root", token)},
		{"GET with another scheme", "GET http://" + target + "/t", "Proxy-Authorization: Bearer " + token + "\r\n"},
		{"CONNECT without a token", "CONNECT " + target, ""},
		{"CONNECT with a wrong token", "CONNECT " + target, basic(TokenUser, token+"x")},
	} {
		resp, _, _ := rawHTTP(t, h.httpAddr, tt.method+" HTTP/1.1\r\nHost: "+target+"\r\n"+tt.auth+"\r\n")
		if resp.StatusCode != http.StatusProxyAuthRequired || resp.Header.Get("Proxy-Authenticate") != `Basic realm="cordon"` {
			t.Errorf("%s: %d, Proxy-Authenticate %q; want 407 and Basic realm", tt.name, resp.StatusCode, resp.Header.Get("Proxy-Authenticate"))
		}
	}
	if n := len(h.Events()); n != 0 {
		t.Errorf("%d events before any authorised request; want none", n)
	}

	// The right token: Go's client sends it for the plain request and
	// the CONNECT; the origin never sees it.
	code, body, _, err := get(t, h.httpClient(nil), "http://"+target+"/t", "")
	if err != nil || code != http.StatusOK || body != "origin /t" {
		t.Fatalf("GET with the token: %d %q %v", code, body, err)
	}
	resp, _, _ := rawHTTP(t, h.httpAddr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n"+basic(TokenUser, token)+"\r\n")
	if resp.StatusCode != http.StatusOK {
		t.Errorf("CONNECT with the token: %d", resp.StatusCode)
	}
	headers, _ := o.got()
	for _, hd := range headers {
		if v := hd.Get("Proxy-Authorization"); v != "" {
			t.Errorf("the origin got Proxy-Authorization %q", v)
		}
	}

	// SOCKS5: only username/password is offered, and only the token passes.
	if _, _, err := socksRaw(t, h.socksAddr, "", "", 1, "127.0.0.1", o.port()); !errors.Is(err, errSOCKSMethod) {
		t.Errorf("SOCKS5 without authentication: %v; want the method refused", err)
	}
	if _, _, err := socksRaw(t, h.socksAddr, TokenUser, "wrong", 1, "127.0.0.1", o.port()); !errors.Is(err, errSOCKSAuth) {
		t.Errorf("SOCKS5 with a wrong token: %v; want the authentication refused", err)
	}
	if _, _, err := socksRaw(t, h.socksAddr, "other", token, 1, "127.0.0.1", o.port()); !errors.Is(err, errSOCKSAuth) {
		t.Errorf("SOCKS5 with a wrong user: %v; want the authentication refused", err)
	}
	if rep, _, err := socksRaw(t, h.socksAddr, TokenUser, token, 1, "127.0.0.1", o.port()); err != nil || rep != 0 {
		t.Errorf("SOCKS5 with the token: reply 0x%02x, %v", rep, err)
	}
	c := h.socksClient(t, &proxy.Auth{User: TokenUser, Password: token})
	if code, body, _, err := get(t, c, "http://"+target+"/s", ""); err != nil || code != http.StatusOK || body != "origin /s" {
		t.Errorf("x/net/proxy with the token: %d %q %v", code, body, err)
	}
}

func TestHostHeaderIgnored(t *testing.T) {
	o := newOrigin(t, false)
	target := hostPort("127.0.0.1", o.port())
	h := newHarness(t, []string{target}, nil, "")
	// An allowed target with a refused Host header goes ahead, to the
	// target, whose Host the origin gets (Go's client cannot send this:
	// it writes req.Host into an absolute-form target).
	resp, body, _ := rawHTTP(t, h.httpAddr, "GET http://"+target+"/h HTTP/1.1\r\nHost: denied.test\r\n\r\n")
	if resp.StatusCode != http.StatusOK || body != "origin /h" {
		t.Fatalf("GET %s with Host denied.test: %d %q; want 200", target, resp.StatusCode, body)
	}
	if _, hosts := o.got(); !slices.Equal(hosts, []string{target}) {
		t.Errorf("the origin got Host %q; want %q", hosts, target)
	}
	// A refused target with an allowed Host header is refused, unresolved.
	resp, _, _ = rawHTTP(t, h.httpAddr, "GET http://denied.test/h HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("raw GET denied.test with Host %s: %d; want 403", target, resp.StatusCode)
	}
	resp, _, _ = rawHTTP(t, h.httpAddr, "CONNECT denied.test:443 HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT denied.test with Host %s: %d; want 403", target, resp.StatusCode)
	}
	if l := h.Lookups(); len(l) != 0 {
		t.Errorf("lookups %q; want none", l)
	}
}

func TestHopByHopHeadersDropped(t *testing.T) {
	o := newOrigin(t, false)
	target := hostPort("127.0.0.1", o.port())
	h := newHarness(t, []string{target}, nil, "")
	req := "GET http://" + target + "/hop HTTP/1.1\r\nHost: " + target + "\r\n" +
		"Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nProxy-Connection: keep-alive\r\n" +
		"Keep-Alive: timeout=5\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\nX-End-To-End: kept\r\n" +
		"X-Forwarded-For: 192.0.2.1\r\n\r\n"
	resp, body, _ := rawHTTP(t, h.httpAddr, req)
	if resp.StatusCode != http.StatusOK || body != "origin /hop" {
		t.Fatalf("GET: %d %q", resp.StatusCode, body)
	}
	headers, _ := o.got()
	if len(headers) != 1 {
		t.Fatalf("the origin got %d requests", len(headers))
	}
	for _, k := range []string{"X-Hop", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization"} {
		if v, ok := headers[0][k]; ok {
			t.Errorf("the origin got %s: %q", k, v)
		}
	}
	if v := headers[0].Get("X-End-To-End"); v != "kept" {
		t.Errorf("X-End-To-End %q; want kept", v)
	}
	if v := headers[0].Values("X-Forwarded-For"); !slices.Equal(v, []string{"192.0.2.1"}) {
		t.Errorf("X-Forwarded-For %q; want the client's, unchanged", v)
	}
}

func TestBadRequests(t *testing.T) {
	h := newHarness(t, []string{"*"}, nil, "")
	tests := []struct {
		name, request string
		code          int
	}{
		{"origin-form", "GET /x HTTP/1.1\r\nHost: allowed.test\r\n\r\n", http.StatusBadRequest},
		{"https:// absolute form", "GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", http.StatusBadRequest},
		{"CONNECT without a port", "CONNECT allowed.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n", http.StatusBadRequest},
		{"CONNECT to port 0", "CONNECT allowed.test:0 HTTP/1.1\r\nHost: allowed.test\r\n\r\n", http.StatusBadRequest},
		{"CONNECT to a path", "CONNECT /x HTTP/1.1\r\nHost: allowed.test\r\n\r\n", http.StatusBadRequest},
		{"a port out of range", "GET http://allowed.test:70000/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", http.StatusBadRequest},
		{"a host with a bang", "CONNECT a!b.test:443 HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body, _ := rawHTTP(t, h.httpAddr, tt.request)
			if resp.StatusCode != tt.code || !strings.HasPrefix(body, "cordon: network: ") {
				t.Errorf("%q: %d %q; want %d and a cordon line", tt.request, resp.StatusCode, body, tt.code)
			}
		})
	}
	if d := h.Dials(); len(d) != 0 {
		t.Errorf("dialed %q", d)
	}
}

// TestNameResolvedAsAbsolute checks that the proxy resolves the name it
// decided on as an absolute name: a resolv.conf search domain (or ndots)
// must not turn an allowed name into another host, such as "wiki" into a
// denied wiki.corp.example.
func TestNameResolvedAsAbsolute(t *testing.T) {
	o := newOrigin(t, false)
	h := newHarness(t, []string{"*", fmt.Sprintf("127.0.0.1:%d", o.port())}, []string{"*.corp.test"}, "")
	for _, c := range []*http.Client{h.httpClient(nil), h.socksClient(t, nil)} {
		url := fmt.Sprintf("http://allowed.test:%d/a", o.port())
		code, body, _, err := get(t, c, url, "")
		if err != nil || code != http.StatusOK || body != "origin /a" {
			t.Errorf("GET %s: %d %q %v; want the origin", url, code, body, err)
		}
	}
	rep, _, err := socksRaw(t, h.socksAddr, "", "", 1, "wiki", o.port())
	if err != nil || rep != 0x04 {
		t.Errorf("SOCKS5 CONNECT wiki: reply 0x%02x, %v; want 0x04 (wiki. does not resolve)", rep, err)
	}
	code, body, _, err := get(t, h.httpClient(nil), fmt.Sprintf("http://localhost:%d/l", o.port()), "")
	if err != nil || code != http.StatusOK || body != "origin /l" {
		t.Errorf("GET localhost: %d %q %v; want the origin (localhost is looked up as it is, in /etc/hosts)", code, body, err)
	}
	want := []string{"allowed.test.", "allowed.test.", "wiki.", "localhost"}
	if l := h.Lookups(); !slices.Equal(l, want) {
		t.Errorf("lookups %q; want %q: absolute names, but localhost", l, want)
	}
	for _, d := range h.Dials() {
		if strings.HasPrefix(d, searchDomainAddr.String()) {
			t.Errorf("dialed %s, the address of a relative lookup", d)
		}
	}
}

// TestRefusalsBounded checks that a command cannot grow the proxy's
// memory, the audit log's lines or the end-of-run lines without bound by
// asking for ever new refused targets: a malformed host is shown
// shortened, and the distinct refusals kept are bounded, the rest
// counted.
func TestRefusalsBounded(t *testing.T) {
	h := newHarness(t, []string{"allowed.test:443"}, nil, "")
	long := strings.Repeat("a", 60<<10) // under the 64 KiB head bound, over any DNS name
	const many = maxRefusals + 30
	for i := range many {
		host := fmt.Sprintf("h%d.test", i)
		if i%2 == 0 {
			host = fmt.Sprintf("%d%s", i, long) // longer than any DNS name
		}
		resp, _, _ := rawHTTP(t, h.httpAddr, "CONNECT "+host+":443 HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("CONNECT %d: %d; want 403", i, resp.StatusCode)
		}
	}
	r := h.srv.Refusals()
	if len(r) != maxRefusals {
		t.Errorf("%d refusals kept; want %d", len(r), maxRefusals)
	}
	if got := h.srv.RefusedMore(); got != many-maxRefusals {
		t.Errorf("RefusedMore() = %d; want %d", got, many-maxRefusals)
	}
	for _, f := range r {
		if len(f.Host) > 300 {
			t.Errorf("refusal host of %d bytes: %.40s...; want it shortened", len(f.Host), f.Host)
		}
	}
	for _, e := range h.Events() {
		if len(e.Host) > 300 || len(e.Reason) > 1000 {
			t.Errorf("event host of %d bytes, reason of %d; want them shortened", len(e.Host), len(e.Reason))
		}
	}
}

// TestHostAddressRefused: an address of the host cordon runs on (a
// public address on one of its interfaces reaches every service bound to
// 0.0.0.0 there) is refused, asked for as an IP or resolved from an
// allowed name, unless an allow entry names it by address.
func TestHostAddressRefused(t *testing.T) {
	own := netip.MustParseAddr("1.2.3.4") // public.test's address
	with := func(c *Config) { c.HostAddrs = []netip.Addr{own} }
	h := newHarnessWith(t, []string{"*"}, nil, "", with)
	for _, url := range []string{"http://public.test/", "http://1.2.3.4/", "http://[::ffff:1.2.3.4]/"} {
		code, body, rule, err := get(t, h.httpClient(nil), url, "")
		if err != nil || code != http.StatusForbidden || rule != RuleHostAddress {
			t.Errorf("GET %s: %d %q %s %v; want 403, %s", url, code, body, rule, err, RuleHostAddress)
		}
	}
	if rep, _, err := socksRaw(t, h.socksAddr, "", "", 1, "public.test", 443); err != nil || rep != 0x02 {
		t.Errorf("SOCKS5 CONNECT public.test: reply 0x%02x, %v; want 0x02", rep, err)
	}
	if d := h.Dials(); len(d) != 0 {
		t.Errorf("dialed %q; want nothing", d)
	}
	// Named by address, it goes ahead (to the recording dialer).
	h = newHarnessWith(t, []string{"*", "1.2.3.4:80"}, nil, "", with)
	code, body, _, err := get(t, h.httpClient(nil), "http://public.test/", "")
	if err != nil || code != http.StatusBadGateway || !strings.Contains(body, "test dialer: refusing") {
		t.Errorf("GET public.test with 1.2.3.4:80 allowed: %d %q %v; want the dial tried", code, body, err)
	}
}

// TestSOCKSEmptyDomain: a SOCKS5 CONNECT whose domain is empty is refused
// as malformed and recorded as the empty host it is (not as "<nil>").
func TestSOCKSEmptyDomain(t *testing.T) {
	h := newHarness(t, []string{"*"}, nil, "")
	rep, _, err := socksRaw(t, h.socksAddr, "", "", 1, "", 80)
	if err != nil || rep != 0x02 {
		t.Fatalf("reply 0x%02x, %v; want 0x02", rep, err)
	}
	want := []Refused{{Host: `""`, Port: 80, Rule: RuleMalformed, Hint: "the target is malformed, and no entry allows it"}}
	if r := h.srv.Refusals(); !slices.Equal(r, want) {
		t.Errorf("Refusals() = %+v; want %+v", r, want)
	}
	if d := h.Dials(); len(d) != 0 {
		t.Errorf("dialed %q", d)
	}
}

// TestHeaderSizeBounded: a request head is bounded at 64 KiB (431 past
// it), since its memory is the host's; a head of a few KiB (cookies, a
// token) still goes through.
func TestHeaderSizeBounded(t *testing.T) {
	o := newOrigin(t, false)
	target := hostPort("127.0.0.1", o.port())
	h := newHarness(t, []string{target}, nil, "")
	for _, tc := range []struct {
		size int
		code int
	}{{16 << 10, http.StatusOK}, {100 << 10, http.StatusRequestHeaderFieldsTooLarge}} {
		resp, _, _ := rawHTTP(t, h.httpAddr, "GET http://"+target+"/h HTTP/1.1\r\nHost: "+target+"\r\nX-Big: "+strings.Repeat("a", tc.size)+"\r\n\r\n")
		if resp.StatusCode != tc.code {
			t.Errorf("a %d-byte header: %d, want %d", tc.size, resp.StatusCode, tc.code)
		}
	}
}
