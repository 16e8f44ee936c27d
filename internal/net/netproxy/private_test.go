package netproxy

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/net/netrule"
)

// TestPrivateRegistry: a name your own tool configuration names as a
// registry (netrule.Set.PrivateNames, the ci profile's) may resolve to a
// private address (10.x, 192.168.x, fc00::/7), for that name only: the
// proxy dials it. The same address for another allowed name, and a
// loopback, link-local or metadata address even for that name, stay
// refused and are never dialed. The resolver and the dialer are the
// test's: the dialer records the address and connects to 127.0.0.1 only,
// so no packet goes to 10.x.
func TestPrivateRegistry(t *testing.T) {
	for name, addrs := range map[string][]string{
		"npm.corp.example":   {"10.1.2.3"},
		"pip.corp.example":   {"192.168.7.8"},
		"ula.corp.example":   {"fd12:3456::1"},
		"other.corp.example": {"10.1.2.3"},
		"meta.corp.example":  {"169.254.169.254"},
		"loop.corp.example":  {"127.0.0.1"},
		"link.corp.example":  {"fe80::1"},
		"ec2.corp.example":   {"fd00:ec2::254"},
		"cgnat.corp.example": {"100.100.100.200"},
	} {
		for _, a := range addrs {
			testNames[name] = append(testNames[name], netip.MustParseAddr(a))
		}
		t.Cleanup(func() { delete(testNames, name) })
	}
	private := []string{"npm.corp.example", "pip.corp.example", "ula.corp.example", "meta.corp.example", "loop.corp.example", "link.corp.example", "ec2.corp.example", "cgnat.corp.example"}
	h := newHarnessWith(t, []string{"*.corp.example:443"}, nil, "", func(c *Config) { c.Rules.PrivateNames = private })
	for _, tc := range []struct {
		name string
		dial string // the address the proxy asked the dialer for, "" for none
		rule string
	}{
		{"npm.corp.example", "10.1.2.3:443", ""},
		{"pip.corp.example", "192.168.7.8:443", ""},
		{"ula.corp.example", "[fd12:3456::1]:443", ""},
		{"other.corp.example", "", "private address"},
		{"meta.corp.example", "", "cloud metadata address"},
		{"loop.corp.example", "", "loopback address"},
		{"link.corp.example", "", "link-local address"},
		{"ec2.corp.example", "", "cloud metadata address"},
		{"cgnat.corp.example", "", "cloud metadata address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.Dials())
			up, den, _ := h.srv.open(context.Background(), HTTPConnect, tc.name, 443)
			if up != nil {
				up.conn.Close()
			}
			dials := h.Dials()[before:]
			if tc.dial != "" {
				if !slices.Equal(dials, []string{tc.dial}) || den != nil {
					t.Errorf("dials %q, refusal %+v; want a dial of %s", dials, den, tc.dial)
				}
				return
			}
			if len(dials) != 0 || den == nil {
				t.Fatalf("dials %q, refusal %+v; want a refusal and no dial", dials, den)
			}
			evs := h.Events()
			if last := evs[len(evs)-1]; last.Allowed || last.Rule != tc.rule {
				t.Errorf("event %+v, want refused by %q", last, tc.rule)
			}
		})
	}
	if r := netrule.RulePrivateName; r == "" {
		t.Fatal("no rule")
	}
}
