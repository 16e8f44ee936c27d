package credential

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/net/netrule"
)

// TestPlaceholderShape: a placeholder keeps the secret's prefix, length,
// separators and alphabet, is new each time, and shares nothing else.
func TestPlaceholderShape(t *testing.T) {
	for _, tc := range []struct {
		secret string
		want   string // a regular expression the placeholder matches
	}{
		{"ghp_" + strings.Repeat("aB3", 12), `^ghp_[A-Za-z0-9]{36}$`},
		{"github_pat_11ABCDEFG0_" + strings.Repeat("xY9", 20), `^github_pat_[A-Za-z0-9]{10}_[A-Za-z0-9]{60}$`},
		{"gho_" + strings.Repeat("Zz1", 12), `^gho_[A-Za-z0-9]{36}$`},
		{"npm_" + strings.Repeat("k7Q", 12), `^npm_[A-Za-z0-9]{36}$`},
		{"pypi-AgEIcHlwaS5vcmc" + strings.Repeat("Ab-_", 10), `^pypi-[A-Za-z0-9]{15}([A-Za-z0-9]{2}-_){10}$`},
		{strings.Repeat("0123456789abcdef", 4), `^[0-9a-f]{64}$`},
		{strings.Repeat("DEADBEEF01", 4), `^[0-9A-F]{40}$`},
		{"short", `^[a-z]{20}$`},
		{"12345678", `^[0-9]{20}$`},
		{"a.b.c", `^[a-z]\.[a-z]\.[a-z]{18}$`},
	} {
		p1, err := Placeholder(tc.secret)
		if err != nil {
			t.Fatal(err)
		}
		p2, _ := Placeholder(tc.secret)
		if !regexp.MustCompile(tc.want).MatchString(p1) {
			t.Errorf("Placeholder(%q) = %q, want the shape %s", tc.secret, p1, tc.want)
		}
		if p1 == p2 {
			t.Errorf("Placeholder(%q) gave %q twice", tc.secret, p1)
		}
		if strings.Contains(p1, tc.secret) || p1 == tc.secret {
			t.Errorf("Placeholder(%q) = %q holds the secret", tc.secret, p1)
		}
	}
	if _, err := Placeholder(""); err == nil {
		t.Error("an empty secret got a placeholder")
	}
}

// TestCALeaves: a leaf for a credential's host verifies against the CA;
// a host outside its domains gets none, and a certificate its key signs
// for another host or an address does not verify (name constraints).
func TestCALeaves(t *testing.T) {
	ca, err := NewCA([]string{"api.example.com", "*.svc.example.org"})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	for _, host := range []string{"api.example.com", "a.svc.example.org", "svc.example.org"} {
		leaf, err := ca.Leaf(host)
		if err != nil {
			t.Fatalf("Leaf(%s): %v", host, err)
		}
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Errorf("the leaf of %s does not verify: %v", host, err)
		}
		again, _ := ca.Leaf(host)
		if again != leaf {
			t.Errorf("the leaf of %s is not cached", host)
		}
	}
	if _, err := ca.Leaf("evil.example.net"); err == nil {
		t.Error("a leaf was made for a host outside the credentials'")
	}
	// What a leaked key would sign.
	for _, tc := range []struct {
		name string
		dns  []string
		ips  []net.IP
	}{
		{"another host", []string{"evil.example.net"}, nil},
		{"an address", nil, []net.IP{net.ParseIP("10.0.0.1")}},
	} {
		tmpl := &x509.Certificate{
			SerialNumber: ca.cert.SerialNumber, Subject: pkix.Name{CommonName: "x"},
			DNSNames: tc.dns, IPAddresses: tc.ips,
			NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		opts := x509.VerifyOptions{Roots: pool}
		if len(tc.dns) > 0 {
			opts.DNSName = tc.dns[0]
		} else {
			opts.DNSName = tc.ips[0].String()
		}
		if _, err := c.Verify(opts); err == nil {
			t.Errorf("%s: a certificate the CA's key signed verifies outside its name constraints", tc.name)
		}
	}
}

func mustSet(t *testing.T, hosts ...string) *netrule.Set {
	t.Helper()
	s, err := netrule.Compile(hosts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestApply: the secret goes only into the allowed headers (Bearer,
// Basic's user:password, a named header), never into another header;
// method and path rules refuse a use and change nothing.
func TestApply(t *testing.T) {
	const ph, secret = "ghp_PLACEHOLDERplaceholder0123456789ab", "ghp_SECRETsecretSECRETsecret0123456789"
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	b := &Binding{Name: "gh", Hosts: mustSet(t, "api.example.com"), Placeholder: ph, Secret: secret, Headers: []string{"x-api-key"}}
	limited := &Binding{Name: "lim", Hosts: mustSet(t, "api.example.com"), Placeholder: "PH2placeholderplaceholder", Secret: "S2", Methods: []string{"GET"}, Paths: []string{"/repos/org/"}}
	for _, tc := range []struct {
		name               string
		b                  *Binding
		method, path, esc  string
		in                 http.Header
		want               http.Header
		allowed, refusedBy string
	}{
		{"bearer", b, "GET", "/x", "/x", http.Header{"Authorization": {"Bearer " + ph}}, http.Header{"Authorization": {"Bearer " + secret}}, "gh", ""},
		{"token", b, "POST", "/x", "/x", http.Header{"Authorization": {"token " + ph}}, http.Header{"Authorization": {"token " + secret}}, "gh", ""},
		{"basic", b, "GET", "/r.git/info/refs", "/r.git/info/refs", http.Header{"Authorization": {basic("x-access-token", ph)}}, http.Header{"Authorization": {basic("x-access-token", secret)}}, "gh", ""},
		{"named header", b, "GET", "/", "/", http.Header{"X-Api-Key": {ph}}, http.Header{"X-Api-Key": {secret}}, "gh", ""},
		{"other header", b, "GET", "/", "/", http.Header{"Cookie": {"t=" + ph}, "X-Other": {ph}}, http.Header{"Cookie": {"t=" + ph}, "X-Other": {ph}}, "", ""},
		{"no placeholder", limited, "DELETE", "/", "/", http.Header{"Authorization": {"Bearer other"}}, http.Header{"Authorization": {"Bearer other"}}, "", ""},
		{"allowed path", limited, "GET", "/repos/org/x", "/repos/org/x", http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, http.Header{"Authorization": {"Bearer S2"}}, "lim", ""},
		{"method refused", limited, "DELETE", "/repos/org/x", "/repos/org/x", http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, "", "credential lim: methods GET"},
		{"path refused", limited, "GET", "/repos/other/x", "/repos/other/x", http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, "", "credential lim: paths /repos/org/"},
		{"dot segments", limited, "GET", "/repos/org/../other", "/repos/org/../other", http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, "", "credential lim: paths /repos/org/"},
		{"escaped slash", limited, "GET", "/repos/org/a/b", "/repos/org/a%2fb", http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, "", "credential lim: paths /repos/org/"},
		// Found by an attack: forms some servers read as another path or
		// method.
		{"path parameter dot segment", limited, "GET", "/repos/org/..;/other", "/repos/org/..;/other", http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, "", "credential lim: paths /repos/org/"},
		{"escaped twice", limited, "GET", "/repos/org/%2e%2e/other", "/repos/org/%252e%252e/other", http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, "", "credential lim: paths /repos/org/"},
		{"method override", limited, "GET", "/repos/org/x", "/repos/org/x", http.Header{"Authorization": {"Bearer " + limited.Placeholder}, "X-Http-Method-Override": {"DELETE"}}, http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, "", "credential lim: methods GET"},
		{"prefix is not a segment", limited, "GET", "/repos/organisation", "/repos/organisation", http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, http.Header{"Authorization": {"Bearer " + limited.Placeholder}}, "", "credential lim: paths /repos/org/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.in.Clone()
			uses := Apply([]*Binding{tc.b}, tc.method, tc.path, tc.esc, h)
			for k, v := range tc.want {
				if strings.Join(h[k], "|") != strings.Join(v, "|") {
					t.Errorf("%s = %q, want %q", k, h[k], v)
				}
			}
			switch {
			case tc.allowed == "" && tc.refusedBy == "" && len(uses) != 0:
				t.Errorf("uses = %+v, want none", uses)
			case tc.allowed != "" && (len(uses) != 1 || !uses[0].Allowed || uses[0].Credential != tc.allowed):
				t.Errorf("uses = %+v, want %s allowed", uses, tc.allowed)
			case tc.refusedBy != "" && (len(uses) != 1 || uses[0].Allowed || uses[0].Rule != tc.refusedBy):
				t.Errorf("uses = %+v, want refused by %q", uses, tc.refusedBy)
			}
			for _, u := range uses {
				if strings.Contains(u.Reason+u.Rule, secret) || strings.Contains(u.Reason+u.Rule, "S2") {
					t.Errorf("a use holds the secret: %+v", u)
				}
			}
		})
	}
}
