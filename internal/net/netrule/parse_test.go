package netrule

import (
	"net/netip"
	"strings"
	"testing"
)

// TestParse covers every entry form of the design: names, wildcards, IP
// literals (numeric forms too), CIDRs, IPv6 with and without brackets,
// with and without ports.
func TestParse(t *testing.T) {
	tests := []struct {
		raw    string
		host   string
		prefix string
		port   int
	}{
		{"example.com", "example.com", "", 0},
		{"Example.COM.", "example.com", "", 0},
		{"example.com:443", "example.com", "", 443},
		{"example.com:*", "example.com", "", 0},
		{"localhost:*", "localhost", "", 0},
		{"*", "*", "", 0},
		{"*:443", "*", "", 443},
		{"*:*", "*", "", 0},
		{"*.example.com", "*.example.com", "", 0},
		{"*.example.com:8443", "*.example.com", "", 8443},
		{"metadata.google.*", "metadata.google.*", "", 0},
		{"api-*.example.com", "api-*.example.com", "", 0},
		{"*.*", "*.*", "", 0},
		{"*.bücher.de", "*.xn--bcher-kva.de", "", 0},
		{"example.com:1", "example.com", "", 1},
		{"example.com:65535", "example.com", "", 65535},
		{"example.com:0443", "example.com", "", 443},
		{"1.2.3.4", "", "1.2.3.4/32", 0},
		{"1.2.3.4:22", "", "1.2.3.4/32", 22},
		{"127.1", "", "127.0.0.1/32", 0},
		{"2130706433:8080", "", "127.0.0.1/32", 8080},
		{"10.0.0.0/8", "", "10.0.0.0/8", 0},
		{"10.0.0.0/8:5432", "", "10.0.0.0/8", 5432},
		{"169.254.169.254:*", "", "169.254.169.254/32", 0},
		{"0.0.0.0/0", "", "0.0.0.0/0", 0},
		{"::1", "", "::1/128", 0},
		{"[::1]", "", "::1/128", 0},
		{"[::1]:8080", "", "::1/128", 8080},
		{"[::1]:*", "", "::1/128", 0},
		{"fd00::/8", "", "fd00::/8", 0},
		{"[fd00::/8]", "", "fd00::/8", 0},
		{"[fd00::/8]:443", "", "fd00::/8", 443},
		{"::ffff:10.0.0.0/104", "", "10.0.0.0/8", 0},
		{"[::ffff:7f00:1]:80", "", "127.0.0.1/32", 80},
	}
	for _, tt := range tests {
		r, err := Parse(tt.raw)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.raw, err)
			continue
		}
		var prefix string
		if r.IsAddr() {
			prefix = r.Prefix.String()
		}
		if r.Raw != tt.raw || r.Host != tt.host || prefix != tt.prefix || r.Port != tt.port {
			t.Errorf("Parse(%q) = %+v, want host %q prefix %q port %d", tt.raw, r, tt.host, tt.prefix, tt.port)
		}
		if r.IsAddr() == (r.Host != "") {
			t.Errorf("Parse(%q) = %+v: a rule is a host pattern or an address range, not both", tt.raw, r)
		}
	}
}

// TestParseErrors: each bad entry is refused with one sentence that names
// the entry and what is wrong.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		raw, want string
	}{
		{"", "empty"},
		{"example.com:", "port after ':' is empty"},
		{":443", "host before ':' is empty"},
		{"example.com:0", "out of range"},
		{"example.com:65536", "out of range"},
		{"example.com:99999999999999999999", "out of range"},
		{"example.com:-1", "not a number"},
		{"example.com:+443", "not a number"},
		{"example.com:https", "not a number"},
		{"example.com:4*3", "not a number"},
		{"[::1]:0", "out of range"},
		{"[::1]:", "port after ':' is empty"},
		{"10.0.0.0/8:70000", "out of range"},
		{"10.0.0.1/8", "host bits set; write 10.0.0.0/8"},
		{"192.168.1.1/24", "write 192.168.1.0/24"},
		{"fd00::1/8", "host bits set; write fd00::/8"},
		{"[fd00::1/8]:443", "host bits set"},
		{"10.0.0.0/33", "not a valid CIDR"},
		{"10/8", "not a valid CIDR"},
		{"fd00::/8:443", "needs brackets: write [fd00::/8]:443"},
		{"example.com/8", "not a valid CIDR"},
		{"10.0.0.0/8/8", "not a valid CIDR"},
		{"a..example.com", "empty label"},
		{".example.com", "empty label"},
		{"*..example.com", "empty label"},
		{"10.*", "wildcard cannot stand in an IP"},
		{"10.0.0.*", "wildcard cannot stand in an IP"},
		{"*.1", "wildcard cannot stand in an IP"},
		{"1*.2.3.4", "wildcard cannot stand in an IP"},
		{"10.0.0.*/8", "wildcard cannot stand in an IP"},
		{"fd00::*", "wildcard cannot stand in an IP"},
		{"[fd00::*]:443", "wildcard cannot stand in an IP"},
		{"a.*.5", "ends in a number"},
		{"bü*.de", "wildcard with an internationalised"},
		{"xn--b*.de", "not a valid DNS name"},
		{"exa mple.com", "space"},
		{" example.com", "space"},
		{"example.com\x00", "NUL"},
		{"example.com\n", "line break"},
		{"example.com\r", "line break"},
		{"user@example.com", "'@'"},
		{"example.com\\x", "path separator"},
		{"http://example.com", "not a URL"},
		{"example.com/x", "not a valid CIDR"},
		{"exa!mple.com", "not allowed"},
		{"fe80::1%eth0", "zone"},
		{"[::1", "closing"},
		{"[::1]x", "after ']'"},
		{"[]:80", "brackets are empty"},
		{"[example.com]:443", "brackets belong only around"},
		{"[1.2.3.4]:443", "brackets belong only around"},
		{"example[1].com", "brackets"},
		{"1.2.3.4.5", "not a valid IPv4"},
		{"300.1.1.1:80", "not a valid IPv4"},
		{"gg::1", "not a valid IPv6"},
		{"-example.com", "hyphen"},
		{strings.Repeat("a", 64) + ".com", "at most 63"},
		{strings.Repeat("x", 5000), "bytes long"},
	}
	for _, tt := range tests {
		r, err := Parse(tt.raw)
		if err == nil {
			t.Errorf("Parse(%q) = %+v, want an error mentioning %q", tt.raw, r, tt.want)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "network entry ") {
			t.Errorf("Parse(%q) error %q, want one line naming the entry and mentioning %q", tt.raw, msg, tt.want)
		}
	}
}

// TestCompile: an allow entry that a deny entry covers whole can never
// match and is refused naming both; overlapping entries that can still
// match are kept.
func TestCompile(t *testing.T) {
	tests := []struct {
		allow, deny []string
		want        string // "" = compiles; else the error mentions it
	}{
		{[]string{"example.com", "*:443", "10.0.0.0/8"}, []string{"169.254.169.254", "metadata.google.*"}, ""},
		{nil, nil, ""},
		// Covered whole: refused, both named.
		{[]string{"example.com"}, []string{"example.com"}, `the allow entry "example.com" can never match: the deny entry "example.com"`},
		{[]string{"example.com:443"}, []string{"example.com"}, `deny entry "example.com" covers it`},
		{[]string{"Example.COM.:443"}, []string{"example.com:*"}, `"Example.COM.:443" can never match`},
		{[]string{"a.example.com"}, []string{"*.example.com"}, `deny entry "*.example.com"`},
		{[]string{"a.b.example.com:443"}, []string{"*.example.com"}, `deny entry "*.example.com"`},
		{[]string{"*.a.example.com"}, []string{"*.example.com"}, `deny entry "*.example.com"`},
		{[]string{"api-1.example.com"}, []string{"api-*.example.com"}, `deny entry "api-*.example.com"`},
		{[]string{"api-v*.example.com"}, []string{"api-*.example.com"}, `deny entry "api-*.example.com"`},
		{[]string{"metadata.google.internal"}, []string{"metadata.google.*"}, `deny entry "metadata.google.*"`},
		{[]string{"example.com", "*:443"}, []string{"*"}, `deny entry "*"`},
		{[]string{"1.2.3.4"}, []string{"*"}, `deny entry "*"`},
		{[]string{"example.com:443"}, []string{"*:443"}, `deny entry "*:443"`},
		{[]string{"10.1.2.3:5432"}, []string{"10.0.0.0/8"}, `deny entry "10.0.0.0/8"`},
		{[]string{"10.1.0.0/16"}, []string{"10.0.0.0/8"}, `deny entry "10.0.0.0/8"`},
		{[]string{"127.1"}, []string{"127.0.0.1"}, `deny entry "127.0.0.1"`},
		{[]string{"[::1]:8080"}, []string{"::1"}, `deny entry "::1"`},
		{[]string{"::ffff:10.0.0.1"}, []string{"10.0.0.0/8"}, `deny entry "10.0.0.0/8"`},
		// Overlapping but not covered: kept (deny wins when deciding).
		{[]string{"example.com"}, []string{"*.example.com"}, ""},
		{[]string{"example.com"}, []string{"example.com:25"}, ""},
		{[]string{"*.example.com"}, []string{"a.example.com"}, ""},
		{[]string{"*.example.com"}, []string{"*.a.example.com"}, ""},
		{[]string{"*.example.com"}, []string{"api-*.example.com"}, ""},
		{[]string{"api-*.example.com"}, []string{"api-v*.example.com"}, ""},
		{[]string{"example.com.evil.net"}, []string{"example.com"}, ""},
		{[]string{"10.0.0.0/8"}, []string{"10.1.0.0/16"}, ""},
		{[]string{"10.0.0.0/8"}, []string{"example.com"}, ""},
		{[]string{"example.com"}, []string{"10.0.0.0/8"}, ""},
		{[]string{"*"}, []string{"*:443"}, ""},
		{[]string{"1.2.3.4"}, []string{"*.example.com"}, ""},
		// Bad entries: the list is named.
		{[]string{"10.0.0.1/8"}, nil, "allow list: network entry \"10.0.0.1/8\""},
		{nil, []string{"x:0"}, "deny list: network entry \"x:0\""},
	}
	for _, tt := range tests {
		s, err := Compile(tt.allow, tt.deny)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Compile(%q, %q): %v", tt.allow, tt.deny, err)
		case tt.want == "":
			if len(s.Allow) != len(tt.allow) || len(s.Deny) != len(tt.deny) {
				t.Errorf("Compile(%q, %q) = %+v: entries lost", tt.allow, tt.deny, s)
			}
		case err == nil:
			t.Errorf("Compile(%q, %q) = %+v, want an error mentioning %q", tt.allow, tt.deny, s, tt.want)
		case !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n"):
			t.Errorf("Compile(%q, %q) error %q, want one line mentioning %q", tt.allow, tt.deny, err, tt.want)
		}
	}
}

// TestCoversIsSound: whenever Compile says a deny entry covers an allow
// entry, every name and address the allow entry matches is refused.
func TestCoversIsSound(t *testing.T) {
	patterns := []string{"*", "*.example.com", "*.a.example.com", "api-*.example.com", "api-v*.example.com",
		"a*", "*b", "a*b", "*.*", "*.*.com", "*.com", "example.com", "a.example.com", "metadata.google.*",
		"*.google.*", "a*.*.com", "*-*.example.com"}
	names := []string{"example.com", "a.example.com", "b.a.example.com", "api-1.example.com", "api-v2.example.com",
		"ab", "b", "a", "aab", "x.com", "x.y.com", "metadata.google.internal", "metadata.google.com",
		"a.google.b", "ax.y.com", "a-b.example.com", "com"}
	for _, d := range patterns {
		for _, a := range patterns {
			dr, _ := Parse(d)
			ar, _ := Parse(a)
			if !covers(dr, ar) {
				continue
			}
			for _, n := range names {
				if matchHost(ar.Host, n) && !matchHost(dr.Host, n) {
					t.Errorf("covers(%q, %q) but %q matches only the allow entry", d, a, n)
				}
			}
		}
	}
	addr := netip.MustParseAddr("10.1.2.3")
	for _, d := range []string{"10.0.0.0/8", "10.1.0.0/16", "10.1.2.3", "0.0.0.0/0", "::/0"} {
		for _, a := range []string{"10.0.0.0/8", "10.1.0.0/16", "10.1.2.3", "0.0.0.0/0", "::/0"} {
			dr, _ := Parse(d)
			ar, _ := Parse(a)
			if covers(dr, ar) && ar.Prefix.Contains(addr) && !dr.Prefix.Contains(addr) {
				t.Errorf("covers(%q, %q) but %s matches only the allow entry", d, a, addr)
			}
		}
	}
}
