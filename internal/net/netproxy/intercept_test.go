package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/net/credential"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
)

const (
	testSecret      = "ghp_SECRETsecretSECRETsecret0123456789"
	testPlaceholder = "ghp_PHplaceholderPHplaceholder01234567"
)

// seen is one request an echo server got.
type seen struct {
	host, method, uri, auth, apiKey, body string
}

// echo is a TLS server on 127.0.0.1 with a certificate the test's own CA
// signs for its names, keeping every request it got.
type echo struct {
	*httptest.Server
	mu  sync.Mutex
	got []seen
}

func newEcho(t *testing.T, ca *credential.CA) *echo {
	t.Helper()
	e := &echo{}
	e.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.got = append(e.got, seen{r.Host, r.Method, r.RequestURI, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), string(b)})
		e.mu.Unlock()
		switch r.URL.Path {
		case "/early": // the header echoed in an interim answer too
			w.Header().Set("X-Early", r.Header.Get("Authorization"))
			w.WriteHeader(http.StatusEarlyHints)
		case "/trailer": // and in a trailer
			w.Header().Set("Trailer", "X-T-Auth")
			defer func() { w.Header().Set("X-T-Auth", r.Header.Get("Authorization")) }()
		}
		w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization"))
		fmt.Fprintf(w, "echo %s %s", r.Method, r.URL.Path)
	}))
	e.Config.ErrorLog = log.New(io.Discard, "", 0)
	e.TLS = &tls.Config{GetCertificate: func(hi *tls.ClientHelloInfo) (*tls.Certificate, error) { return ca.Leaf(hi.ServerName) }}
	e.StartTLS()
	t.Cleanup(e.Close)
	return e
}

func (e *echo) requests() []seen {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]seen(nil), e.got...)
}

func (e *echo) port() int { return e.Listener.Addr().(*net.TCPAddr).Port }

// credHarness is a proxy with one credential, gh, for example.com, whose
// upstreams are echo servers with certificates of a test CA.
type credHarness struct {
	*harness
	bound, other *echo
	runCA        *credential.CA
	upstreamPEM  string // the test CA, as a file
	runPEM       string // the run's CA, as a file
	mu           sync.Mutex
	uses         []CredentialUse
}

func newCredHarness(t *testing.T, b *credential.Binding) *credHarness {
	t.Helper()
	upstreamCA, err := credential.NewCA([]string{"example.com", "allowed.test"})
	if err != nil {
		t.Fatal(err)
	}
	ch := &credHarness{bound: newEcho(t, upstreamCA), other: newEcho(t, upstreamCA)}
	ch.runCA, err = credential.NewCA([]string{"example.com"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ch.upstreamPEM, ch.runPEM = filepath.Join(dir, "upstream.pem"), filepath.Join(dir, "run.pem")
	if err := os.WriteFile(ch.upstreamPEM, upstreamCA.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ch.runPEM, ch.runCA.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(upstreamCA.Certificate())
	if b.Hosts == nil {
		if b.Hosts, err = netrule.Compile([]string{"example.com"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	ch.harness = newHarnessWith(t, []string{
		fmt.Sprintf("example.com:%d", ch.bound.port()), fmt.Sprintf("allowed.test:%d", ch.other.port()),
		// The names resolve to the loopback, refused unless named by address.
		fmt.Sprintf("127.0.0.1:%d", ch.bound.port()), fmt.Sprintf("127.0.0.1:%d", ch.other.port()),
	}, nil, "", func(c *Config) {
		c.Credentials = []*credential.Binding{b}
		c.CA = ch.runCA
		c.UpstreamRoots = roots
		c.RecordUse = func(u CredentialUse) {
			ch.mu.Lock()
			ch.uses = append(ch.uses, u)
			ch.mu.Unlock()
		}
	})
	return ch
}

func (ch *credHarness) used() []CredentialUse {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return append([]CredentialUse(nil), ch.uses...)
}

// noSecret fails the test if the secret shows in what the proxy kept:
// its events, its uses, its refusals.
func (ch *credHarness) noSecret(t *testing.T, outputs ...string) {
	t.Helper()
	all := fmt.Sprintf("%+v %+v %+v %s", ch.Events(), ch.used(), ch.srv.Refusals(), strings.Join(outputs, " "))
	if strings.Contains(all, testSecret) {
		t.Errorf("the secret shows outside the bound host's requests: %s", all)
	}
}

// TestCredentialSwapCurl: curl through the proxy with the placeholder
// reaches the bound host with the secret (Bearer, Basic, a named header),
// another allowed host with the placeholder only; a placeholder in the
// URL or body is never replaced; method and path rules refuse with a 403
// naming the rule; a request for another host on the connection is
// refused.
func TestCredentialSwapCurl(t *testing.T) {
	curl := requireCurl(t)
	ch := newCredHarness(t, &credential.Binding{
		Name: "gh", Placeholder: testPlaceholder, Secret: testSecret,
		Headers: []string{"X-Api-Key"}, Methods: []string{"GET", "POST"}, Paths: []string{"/ok/"},
	})
	bound := fmt.Sprintf("https://example.com:%d", ch.bound.port())
	other := fmt.Sprintf("https://allowed.test:%d", ch.other.port())
	proxyArgs := []string{"--proxy", "http://" + ch.httpAddr, "--cacert", ch.runPEM}
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return runCurl(t, curl, append(append([]string{}, proxyArgs...), args...)...)
	}
	basic := func(secret string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+secret))
	}
	var outputs []string

	out, errOut, code := run("-H", "Authorization: Bearer "+testPlaceholder, "-H", "X-Api-Key: "+testPlaceholder, bound+"/ok/a")
	outputs = append(outputs, out, errOut)
	if code != 0 || out != "echo GET /ok/a" {
		t.Fatalf("bearer to the bound host: code %d, %q %q", code, out, errOut)
	}
	out, errOut, code = run("-u", "x-access-token:"+testPlaceholder, "-d", "body "+testPlaceholder, bound+"/ok/"+testPlaceholder+"?q="+testPlaceholder)
	outputs = append(outputs, out, errOut)
	if code != 0 {
		t.Fatalf("basic to the bound host: code %d, %q %q", code, out, errOut)
	}
	// A header the host echoes back holds the placeholder again.
	out, errOut, code = run("-i", "-H", "Authorization: Bearer "+testPlaceholder, bound+"/ok/echo")
	outputs = append(outputs, out, errOut)
	if code != 0 || !strings.Contains(out, "X-Echo-Auth: Bearer "+testPlaceholder) {
		t.Errorf("the echoed header: code %d, %q, want the placeholder", code, out)
	}
	got := ch.bound.requests()
	if len(got) != 3 {
		t.Fatalf("the bound host got %d requests, want 2: %+v", len(got), got)
	}
	if got[0].auth != "Bearer "+testSecret || got[0].apiKey != testSecret {
		t.Errorf("the bound host got Authorization %q, X-Api-Key %q; want the secret in both", got[0].auth, got[0].apiKey)
	}
	if got[1].auth != basic(testSecret) {
		t.Errorf("the bound host got Authorization %q, want Basic with the secret", got[1].auth)
	}
	if !strings.Contains(got[1].uri, testPlaceholder+"?q="+testPlaceholder) || got[1].body != "body "+testPlaceholder {
		t.Errorf("a placeholder in the URL or body was changed: %q %q", got[1].uri, got[1].body)
	}

	// Another allowed host: an end-to-end tunnel, the placeholder as sent.
	out, errOut, code = runCurl(t, curl, "--proxy", "http://"+ch.httpAddr, "--cacert", ch.upstreamPEM, "-H", "Authorization: Bearer "+testPlaceholder, other+"/x")
	outputs = append(outputs, out, errOut)
	if code != 0 {
		t.Fatalf("the other host: code %d, %q %q", code, out, errOut)
	}
	if o := ch.other.requests(); len(o) != 1 || o[0].auth != "Bearer "+testPlaceholder {
		t.Errorf("the other host got %+v, want the placeholder unchanged", o)
	}

	// Refusals: 403 naming the rule, nothing sent to the host.
	for _, tc := range []struct {
		args []string
		rule string
	}{
		{[]string{"-X", "DELETE", bound + "/ok/a"}, "credential gh: methods GET, POST"},
		{[]string{bound + "/elsewhere"}, "credential gh: paths /ok/"},
		{[]string{bound + "/ok/../elsewhere", "--path-as-is"}, "credential gh: paths /ok/"},
	} {
		args := append([]string{"-i", "-H", "Authorization: Bearer " + testPlaceholder}, tc.args...)
		out, errOut, _ := run(args...)
		outputs = append(outputs, out, errOut)
		if !strings.Contains(out, "\nHTTP/1.1 403 ") || !strings.Contains(out, DeniedHeader+": "+tc.rule) || !strings.Contains(out, "("+tc.rule+")") {
			t.Errorf("curl %q: want a 403 naming %q, got %q %q", tc.args, tc.rule, out, errOut)
		}
	}
	if n := len(ch.bound.requests()); n != 3 {
		t.Errorf("refused requests reached the bound host: %d requests", n)
	}
	// A request for another host on a connection opened for the bound one.
	out, errOut, _ = run("-i", "-H", "Host: allowed.test:"+fmt.Sprint(ch.other.port()), "-H", "Authorization: Bearer "+testPlaceholder, bound+"/ok/a")
	outputs = append(outputs, out, errOut)
	if !strings.Contains(out, "\nHTTP/1.1 421 ") || !strings.Contains(out, RuleMisdirected) {
		t.Errorf("a request for another host: want 421, got %q %q", out, errOut)
	}
	if n := len(ch.other.requests()); n != 1 {
		t.Errorf("the misdirected request reached the other host")
	}

	uses := ch.used()
	var allowed, refused int
	for _, u := range uses {
		if u.Credential != "gh" || u.Host != "example.com" {
			t.Errorf("use %+v: want gh on example.com", u)
		}
		if u.Allowed {
			allowed++
		} else {
			refused++
		}
	}
	if allowed != 3 || refused != 3 {
		t.Errorf("uses: %d allowed, %d refused, want 3 and 3: %+v", allowed, refused, uses)
	}
	ch.noSecret(t, outputs...)
}

// TestCredentialSwapGoClient: a Go client that asks for HTTP/2 gets
// HTTP/1.1 from the intercepting proxy (ALPN), and keep-alive requests on
// one connection each get the secret; an upstream whose certificate the
// host does not trust is a 502 that holds no secret.
func TestCredentialSwapGoClient(t *testing.T) {
	ch := newCredHarness(t, &credential.Binding{Name: "gh", Placeholder: testPlaceholder, Secret: testSecret})
	pool := x509.NewCertPool()
	pool.AddCert(ch.runCA.Certificate())
	tr := &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: pool}}
	c := ch.httpClient(tr)
	tr.DisableKeepAlives = false
	url := fmt.Sprintf("https://example.com:%d/x", ch.bound.port())
	for i := range 3 {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+testPlaceholder)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Proto != "HTTP/1.1" {
			t.Errorf("request %d: %s %s, want 200 over HTTP/1.1", i, resp.Proto, resp.Status)
		}
	}
	got := ch.bound.requests()
	if len(got) != 3 {
		t.Fatalf("the bound host got %d requests, want 3", len(got))
	}
	for _, g := range got {
		if g.auth != "Bearer "+testSecret {
			t.Errorf("a keep-alive request got %q, want the secret", g.auth)
		}
	}
	var tunnels int
	for _, e := range ch.Events() {
		if e.Allowed && e.Host == "example.com" {
			tunnels++
		}
	}
	if tunnels != 1 {
		t.Errorf("%d connections to the bound host, want 1 (keep-alive)", tunnels)
	}
	ch.noSecret(t)
}

// TestCredentialUpstreamUntrusted: the proxy verifies the bound host's
// certificate against its own trust store; one it does not trust is a
// 502, and the secret is never sent.
func TestCredentialUpstreamUntrusted(t *testing.T) {
	ch := newCredHarness(t, &credential.Binding{Name: "gh", Placeholder: testPlaceholder, Secret: testSecret})
	ch.srv.cfg.UpstreamRoots = x509.NewCertPool() // trusts nothing
	pool := x509.NewCertPool()
	pool.AddCert(ch.runCA.Certificate())
	c := ch.httpClient(&http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}})
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://example.com:%d/x", ch.bound.port()), nil)
	req.Header.Set("Authorization", "Bearer "+testPlaceholder)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(bufio.NewReader(resp.Body))
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "certificate") {
		t.Errorf("got %s %q, want a 502 about the certificate", resp.Status, b)
	}
	if n := len(ch.bound.requests()); n != 0 {
		t.Errorf("the untrusted host got %d requests", n)
	}
	ch.noSecret(t, string(b))
}

// TestCredentialEchoScrubbed: a bound host that echoes the header the
// swap made, in its answer's headers, in an interim 1xx answer or in a
// trailer, gives the command back what it sent: the placeholder, never
// the secret, also in the Basic form the proxy encoded (found by an
// attack: base64 of user:secret came back).
func TestCredentialEchoScrubbed(t *testing.T) {
	ch := newCredHarness(t, &credential.Binding{Name: "gh", Placeholder: testPlaceholder, Secret: testSecret})
	pool := x509.NewCertPool()
	pool.AddCert(ch.runCA.Certificate())
	c := ch.httpClient(&http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}})
	secretForms := []string{testSecret, base64.StdEncoding.EncodeToString([]byte("user:" + testSecret)), base64.StdEncoding.EncodeToString([]byte(testSecret + ":x"))}
	for _, auth := range []string{
		"Bearer " + testPlaceholder,
		"Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+testPlaceholder)),
		"Basic " + base64.StdEncoding.EncodeToString([]byte(testPlaceholder+":x")),
	} {
		for _, path := range []string{"/x", "/early", "/trailer"} {
			var interim []string
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
				interim = append(interim, fmt.Sprint(code, h))
				return nil
			}})
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://example.com:%d%s", ch.bound.port(), path), nil)
			req.Header.Set("Authorization", auth)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := fmt.Sprint(resp.Header, resp.Trailer, interim, string(body))
			for _, f := range secretForms {
				if strings.Contains(got, f) {
					t.Errorf("%s with %q: the secret came back (%q): %s", path, auth, f, got)
				}
			}
			if !strings.Contains(fmt.Sprint(resp.Header), auth) {
				t.Errorf("%s: the echo is not what the command sent (%q): %v", path, auth, resp.Header)
			}
			if path == "/trailer" && resp.Trailer.Get("X-T-Auth") != auth {
				t.Errorf("the trailer is %q, want %q", resp.Trailer.Get("X-T-Auth"), auth)
			}
			if path == "/early" && (len(interim) != 1 || !strings.Contains(interim[0], auth)) {
				t.Errorf("the interim answer: %q, want one with %q", interim, auth)
			}
		}
	}
	if got := ch.bound.requests(); len(got) == 0 || !strings.Contains(got[0].auth, testSecret) {
		t.Fatalf("the bound host did not get the secret: %+v", got)
	}
}
