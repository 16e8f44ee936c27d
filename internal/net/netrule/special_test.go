package netrule

import (
	"net/netip"
	"testing"
)

// TestClassify checks each special range at its edges, the addresses
// embedded in IPv6 forms, and public neighbours that must stay public.
func TestClassify(t *testing.T) {
	tests := []struct {
		addr string
		kind string // "" = public
		via  string
	}{
		{"169.254.169.254", "cloud metadata address", ""},
		{"100.100.100.200", "cloud metadata address", ""},
		{"168.63.129.16", "cloud metadata address", ""},
		{"fd00:ec2::254", "cloud metadata address", ""},
		{"0.0.0.0", "unspecified address", ""},
		{"0.255.255.255", "unspecified address", ""},
		{"1.0.0.0", "", ""},
		{"9.255.255.255", "", ""},
		{"10.0.0.0", "private address", ""},
		{"10.255.255.255", "private address", ""},
		{"11.0.0.0", "", ""},
		{"100.63.255.255", "", ""},
		{"100.64.0.0", "shared (CGNAT) address", ""},
		{"100.127.255.255", "shared (CGNAT) address", ""},
		{"100.128.0.0", "", ""},
		{"126.255.255.255", "", ""},
		{"127.0.0.0", "loopback address", ""},
		{"127.255.255.255", "loopback address", ""},
		{"128.0.0.0", "", ""},
		{"169.254.0.0", "link-local address", ""},
		{"169.254.255.255", "link-local address", ""},
		{"172.15.255.255", "", ""},
		{"172.16.0.0", "private address", ""},
		{"172.31.255.255", "private address", ""},
		{"172.32.0.0", "", ""},
		{"192.0.0.8", "reserved address", ""},
		{"192.0.2.1", "reserved address", ""},
		{"192.167.255.255", "", ""},
		{"192.168.0.0", "private address", ""},
		{"192.168.255.255", "private address", ""},
		{"192.169.0.0", "", ""},
		{"198.18.0.1", "reserved address", ""},
		{"223.255.255.255", "", ""},
		{"224.0.0.0", "multicast address", ""},
		{"239.255.255.255", "multicast address", ""},
		{"240.0.0.0", "reserved address", ""},
		{"255.255.255.254", "reserved address", ""},
		{"255.255.255.255", "broadcast address", ""},
		{"8.8.8.8", "", ""},
		{"::", "unspecified address", ""},
		{"::1", "loopback address", ""},
		{"::2", "reserved address", ""},
		{"::ffff:10.1.1.1", "private address", ""},
		{"::ffff:8.8.8.8", "", ""},
		{"::ffff:0:7f00:1", "reserved address", ""},
		{"64:ff9b::808:808", "", ""},
		{"64:ff9b::a00:1", "private address", "NAT64"},
		{"64:ff9b::6440:1", "shared (CGNAT) address", "NAT64"},
		{"64:ff9b:1::1", "private address", ""},
		{"2002:808:808::1", "", ""},
		{"2002:a9fe:a9fe::", "cloud metadata address", "6to4"},
		{"2002:e000:1::", "multicast address", "6to4"},
		{"2001::1", "reserved address", ""},
		{"2001:db8::1", "reserved address", ""},
		{"2001:4860:4860::8888", "", ""},
		{"fbff:ffff::1", "", ""},
		{"fc00::1", "private address", ""},
		{"fdff:ffff::1", "private address", ""},
		{"fe80::1", "link-local address", ""},
		{"febf::1", "link-local address", ""},
		{"fec0::1", "private address", ""},
		{"ff00::", "multicast address", ""},
	}
	for _, tt := range tests {
		kind, inner, via, ok := classify(netip.MustParseAddr(tt.addr))
		if ok != (tt.kind != "") || kind.kind != tt.kind || via != tt.via || inner.IsValid() != (tt.via != "") {
			t.Errorf("classify(%s) = %q, %v, %q, %v; want %q via %q", tt.addr, kind.kind, inner, via, ok, tt.kind, tt.via)
		}
	}
}
