package netproxy

import (
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseHosts(t *testing.T) {
	data := []byte(`# comment
127.0.0.1	localhost
127.0.1.1 vm.example  VM   # the host
::1 localhost ip6-localhost
fe80::1%eth0 linklocal
::ffff:10.0.0.5 mapped.
not-an-address name
10.0.0.7
`)
	got := parseHosts(data)
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"localhost", []string{"127.0.0.1", "::1"}},
		{"vm.example", []string{"127.0.1.1"}},
		{"vm", []string{"127.0.1.1"}},
		{"ip6-localhost", []string{"::1"}},
		{"linklocal", nil},
		{"mapped", []string{"10.0.0.5"}},
		{"name", nil},
	} {
		var want []netip.Addr
		for _, w := range tc.want {
			want = append(want, netip.MustParseAddr(w))
		}
		if g := got[tc.name]; !slices.Equal(g, want) {
			t.Errorf("%s: %v; want %v", tc.name, g, want)
		}
	}
}

// TestHostsFileFirst: with the host's resolver, a name the hosts file
// defines is answered from it (Go's resolver would send the absolute
// name to DNS), and a name it does not define goes to the resolver as an
// absolute name. The test's resolver stands in for DNS: no packet leaves.
func TestHostsFileFirst(t *testing.T) {
	o := newOrigin(t, false)
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 devalias.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, []string{"devalias.test", "allowed.test", fmt.Sprintf("127.0.0.1:%d", o.port())}, nil, "")
	h.srv.hosts = &hostsFile{path: hosts}
	code, body, _, err := get(t, h.httpClient(nil), fmt.Sprintf("http://devalias.test:%d/h", o.port()), "")
	if err != nil || code != http.StatusOK || body != "origin /h" {
		t.Fatalf("GET devalias.test: %d %q %v; want the origin", code, body, err)
	}
	if l := h.Lookups(); len(l) != 0 {
		t.Errorf("lookups %q; want none (the hosts file answered)", l)
	}
	if _, _, _, err := get(t, h.httpClient(nil), fmt.Sprintf("http://allowed.test:%d/a", o.port()), ""); err != nil {
		t.Fatal(err)
	}
	if l := h.Lookups(); !slices.Equal(l, []string{"allowed.test."}) {
		t.Errorf("lookups %q; want the absolute name once", l)
	}
	// A changed hosts file is read again.
	if err := os.WriteFile(hosts, []byte("# nothing\n127.0.0.1 other.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if a := h.srv.hosts.lookup("devalias.test"); a != nil {
		t.Errorf("devalias.test after the change: %v; want none", a)
	}
}
