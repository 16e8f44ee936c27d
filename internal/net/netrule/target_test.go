package netrule

import (
	"strings"
	"testing"
)

// TestParseTarget is the canonicalisation table: every spelling of a host
// a client may send, and the one host it is decided and dialled as.
func TestParseTarget(t *testing.T) {
	long63 := strings.Repeat("a", 63)
	name253 := strings.Repeat(long63+".", 3) + strings.Repeat("b", 61) // 3*64+61 = 253
	tests := []struct {
		host string
		want string // Target.String()
		addr bool   // the target is an IP literal
	}{
		// Case, trailing dot.
		{"example.com", "example.com", false},
		{"Example.COM", "example.com", false},
		{"EXAMPLE.COM.", "example.com", false},
		{"localhost", "localhost", false},
		{"LocalHost.", "localhost", false},
		// IDNA: Unicode to punycode, case and width folded, NFC.
		{"bücher.de", "xn--bcher-kva.de", false},
		{"BÜCHER.de", "xn--bcher-kva.de", false},
		{"xn--bcher-kva.de", "xn--bcher-kva.de", false},
		{"XN--BCHER-KVA.DE", "xn--bcher-kva.de", false},
		{"ｅｘａｍｐｌｅ．ｃｏｍ", "example.com", false}, // full-width letters and dot
		{"example。com", "example.com", false}, // ideographic full stop
		{"мир.рф", "xn--h1ahn.xn--p1ai", false},
		{"faß.de", "xn--fa-hia.de", false}, // non-transitional: ß stays
		// Names browsers accept.
		{"r3---sn-abc.googlevideo.com", "r3---sn-abc.googlevideo.com", false},
		{"_acme-challenge.example.com", "_acme-challenge.example.com", false},
		{"a-b.c", "a-b.c", false},
		{"1password.com", "1password.com", false},
		{"0x.example", "0x.example", false},
		{long63 + ".com", long63 + ".com", false},
		{name253, name253, false},
		{name253 + ".", name253, false},
		// Numeric IPv4 forms (the WHATWG URL parser).
		{"127.0.0.1", "127.0.0.1", true},
		{"2130706433", "127.0.0.1", true},
		{"127.1", "127.0.0.1", true},
		{"127.0.1", "127.0.0.1", true},
		{"0x7f.1", "127.0.0.1", true},
		{"0X7F.0.0.1", "127.0.0.1", true},
		{"0177.0.0.1", "127.0.0.1", true},
		{"0x7f000001", "127.0.0.1", true},
		{"017700000001", "127.0.0.1", true},
		{"127.0.0.1.", "127.0.0.1", true},
		{"0", "0.0.0.0", true},
		{"0x", "0.0.0.0", true},
		{"4294967295", "255.255.255.255", true},
		{"169.254.43518", "169.254.169.254", true},
		{"0xa9.0xfe.0xa9.0xfe", "169.254.169.254", true},
		{"１２７.０.０.１", "127.0.0.1", true}, // full-width digits
		// IPv6: brackets, zones, IPv4-mapped.
		{"::1", "::1", true},
		{"[::1]", "::1", true},
		{"[0:0:0:0:0:0:0:1]", "::1", true},
		{"[FD00::1]", "fd00::1", true},
		{"fe80::1%eth0", "fe80::1", true},
		{"[fe80::1%eth0]", "fe80::1", true},
		{"[fe80::1%25eth0]", "fe80::1", true},
		{"::ffff:127.0.0.1", "127.0.0.1", true},
		{"[::ffff:7f00:1]", "127.0.0.1", true},
		{"[::ffff:a9fe:a9fe]", "169.254.169.254", true},
		{"64:ff9b::7f00:1", "64:ff9b::7f00:1", true}, // NAT64 is not unmapped (it is classified)
	}
	for _, tt := range tests {
		got, err := ParseTarget(tt.host)
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", tt.host, err)
			continue
		}
		if got.String() != tt.want || got.Addr.IsValid() != tt.addr || (got.Name == "") != tt.addr {
			t.Errorf("ParseTarget(%q) = %+v, want %q (address %v)", tt.host, got, tt.want, tt.addr)
		}
		again, err := ParseTarget(got.String())
		if err != nil || again != got {
			t.Errorf("ParseTarget(%q) = %+v does not re-parse to itself: %+v, %v", tt.host, got, again, err)
		}
	}
}

// TestParseTargetErrors: hosts that split a request, smuggle userinfo or a
// path, or are no DNS name, are refused with a sentence naming why.
func TestParseTargetErrors(t *testing.T) {
	tests := []struct {
		host, want string
	}{
		{"", "empty"},
		{".", "only a dot"},
		{"example.com\x00.evil.net", "NUL"},
		{"example.com\r\nX-Injected: 1", "line break"},
		{"example.com\n", "line break"},
		{"\rexample.com", "line break"},
		{"example .com", "space"},
		{"example.com\t", "space"},
		{"exa\x7fmple.com", "control byte"},
		{"user@example.com", "'@'"},
		{"example.com/path", "path separator"},
		{"example.com\\evil.net", "path separator"},
		{"＠example.com", "'@'"},       // full-width '@' maps to '@'
		{"a／b.com", "path separator"}, // full-width '/'
		{"℀.com", "path separator"},   // U+2100 maps to "a/c"
		{"a..b", "empty label"},
		{".example.com", "empty label"},
		{"example.com..", "empty label"},
		{"-example.com", "hyphen"},
		{"example-.com", "hyphen"},
		{"exa_mple!.com", "not allowed"},
		{"exa%6dple.com", "not allowed"},
		{"*.example.com", "wildcard"},
		{"example.com:443", "carries a port"},
		{"[::1]:443", "carries a port"},
		{"1:2:3", "IPv6"},
		{"[example.com]", "IPv6"},
		{"[127.0.0.1]", "IPv6"},
		{"[::1", "closing"},
		{"a[::1]", "brackets"},
		{"1.2.3.4.5", "IPv4"},
		{"256.0.0.1", "IPv4"},
		{"1.2.3.256", "IPv4"},
		{"4294967296", "IPv4"},
		{"0x100000000", "IPv4"},
		{"08.0.0.1", "IPv4"},
		{"example.123", "IPv4"},
		{"example.0x1f", "IPv4"},
		{"xn--example-.com", "xn--"},
		{"xn--.com", "xn--"},
		{"\u202eexample.com", "DNS"},
		{strings.Repeat("a", 64) + ".com", "at most 63"},
		{strings.Repeat("a.", 127) + "ab", "at most 253"},
		{strings.Repeat("a", 2000), "at most 253"},
		{"\xff.com", "DNS"},
	}
	for _, tt := range tests {
		got, err := ParseTarget(tt.host)
		if err == nil {
			t.Errorf("ParseTarget(%q) = %+v, want an error mentioning %q", tt.host, got, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseTarget(%q) error %q, want one line mentioning %q", tt.host, err, tt.want)
		}
	}
}
