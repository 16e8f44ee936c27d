package netrule

import (
	"net/netip"
	"strings"
	"testing"
)

func mustCompile(t testing.TB, allow, deny []string) *Set {
	t.Helper()
	s, err := Compile(allow, deny)
	if err != nil {
		t.Fatalf("Compile(%q, %q): %v", allow, deny, err)
	}
	return s
}

func mustTarget(t testing.TB, host string) Target {
	t.Helper()
	tg, err := ParseTarget(host)
	if err != nil {
		t.Fatalf("ParseTarget(%q): %v", host, err)
	}
	return tg
}

// TestMatchHost is the wildcard semantics: "*" as a label is one or more
// labels, '*' inside a label stays inside it, and a suffix is never a
// match by itself.
func TestMatchHost(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"example.com", "example.com", true},
		{"example.com", "a.example.com", false},
		{"example.com", "example.com.evil.net", false},
		{"example.com", "evilexample.com", false},
		{"example.com", "example.co", false},
		{"*.example.com", "a.example.com", true},
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "aexample.com", false},
		{"*.example.com", "a.example.com.evil.net", false},
		{"*.example.com", "example.com.evil.net", false},
		{"*", "localhost", true},
		{"*", "a.b.c.d", true},
		{"*.*", "localhost", false},
		{"*.*", "a.b", true},
		{"metadata.google.*", "metadata.google.internal", true},
		{"metadata.google.*", "metadata.google.a.b", true},
		{"metadata.google.*", "metadata.google", false},
		{"metadata.google.*", "xmetadata.google.internal", false},
		{"api-*.example.com", "api-1.example.com", true},
		{"api-*.example.com", "api-.example.com", true},
		{"api-*.example.com", "api-a.b.example.com", false},
		{"api-*.example.com", "api.example.com", false},
		{"api-*.example.com", "xapi-1.example.com", false},
		{"*-api.example.com", "eu-api.example.com", true},
		{"a*b*c.x", "abc.x", true},
		{"a*b*c.x", "axxbyyc.x", true},
		{"a*b*c.x", "axxbyy.x", false},
		{"*.a.*.b", "x.a.y.z.b", true},
		{"*.a.*.b", "a.y.b", false},
	}
	for _, tt := range tests {
		if got := matchHost(tt.pattern, tt.name); got != tt.want {
			t.Errorf("matchHost(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

// TestDecideName: deny beats allow, wildcards, ports, and the Rule and
// Reason of every answer.
func TestDecideName(t *testing.T) {
	s := mustCompile(t,
		[]string{"example.com:443", "*.github.com", "api-*.internal.test:8080", "localhost", "10.0.0.0/8", "pypi.org:*"},
		[]string{"evil.github.com", "*.github.com:22", "metadata.google.*"})
	tests := []struct {
		host   string
		port   int
		allow  bool
		rule   string
		reason string
	}{
		{"example.com", 443, true, "example.com:443", `example.com:443 is allowed by the entry "example.com:443"`},
		{"EXAMPLE.com.", 443, true, "example.com:443", ""},
		{"example.com", 80, false, RuleNoAllow, "no allow entry matches example.com:80; add --allow-net example.com:80"},
		{"a.example.com", 443, false, RuleNoAllow, "add --allow-net a.example.com:443"},
		{"example.com.evil.net", 443, false, RuleNoAllow, "add --allow-net example.com.evil.net:443"},
		{"api.github.com", 443, true, "*.github.com", ""},
		{"a.b.github.com", 443, true, "*.github.com", ""},
		{"github.com", 443, false, RuleNoAllow, "add --allow-net github.com:443"},
		{"evil.github.com", 443, false, "evil.github.com", `evil.github.com:443 matches the deny entry "evil.github.com", and deny beats allow`},
		{"api.github.com", 22, false, "*.github.com:22", `matches the deny entry "*.github.com:22"`},
		{"api-eu.internal.test", 8080, true, "api-*.internal.test:8080", ""},
		{"api-eu.internal.test", 8081, false, RuleNoAllow, ""},
		{"api.internal.test", 8080, false, RuleNoAllow, ""},
		{"localhost", 5432, true, "localhost", ""},
		{"pypi.org", 443, true, "pypi.org:*", ""},
		{"metadata.google.internal", 80, false, "metadata.google.*", "deny beats allow"},
		{"bücher.de", 443, false, RuleNoAllow, "add --allow-net xn--bcher-kva.de:443"},
		{"example.com", 0, false, RuleInvalid, "out of range"},
		{"example.com", 65536, false, RuleInvalid, "out of range"},
	}
	for _, tt := range tests {
		d := s.DecideName(mustTarget(t, tt.host), tt.port)
		if d.Allowed != tt.allow || d.Rule != tt.rule || !strings.Contains(d.Reason, tt.reason) || d.Reason == "" {
			t.Errorf("DecideName(%q, %d) = %+v, want allowed %v rule %q reason mentioning %q", tt.host, tt.port, d, tt.allow, tt.rule, tt.reason)
		}
	}
	// A Target not made by ParseTarget is refused, not matched loosely.
	for _, name := range []string{"EVIL.github.com", "evil.github.com.", "evil.github.com\n", "*.github.com"} {
		if d := s.DecideName(Target{Name: name}, 443); d.Allowed || d.Rule != RuleInvalid {
			t.Errorf("DecideName(Target{Name: %q}) = %+v, want refused as invalid", name, d)
		}
	}
	if d := s.DecideName(Target{}, 443); d.Allowed {
		t.Errorf("DecideName(Target{}) = %+v, want refused", d)
	}
	// An IP literal target goes to DecideAddr: a host pattern never
	// unlocks it, an IP/CIDR entry does.
	if d := s.DecideName(mustTarget(t, "10.1.2.3"), 443); !d.Allowed || d.Rule != "10.0.0.0/8" {
		t.Errorf("DecideName(10.1.2.3) = %+v, want allowed by 10.0.0.0/8", d)
	}
	if d := s.DecideName(mustTarget(t, "127.1"), 443); d.Allowed || d.Rule != "loopback address" {
		t.Errorf("DecideName(127.1) = %+v, want refused as loopback although localhost is allowed", d)
	}
}

// TestDecideAddr: IP literals and resolved addresses, special addresses
// (the rebinding defence: an allowed name resolving to loopback, metadata,
// private, CGNAT, mapped or NAT64 addresses is refused) and the explicit
// IP/CIDR entries that allow them.
func TestDecideAddr(t *testing.T) {
	plain := mustCompile(t, []string{"*", "allowed.test"}, nil)
	explicit := mustCompile(t,
		[]string{"allowed.test", "127.0.0.1:5432", "10.1.0.0/16", "169.254.169.254:80", "[::1]:8080", "[fd00::/8]:443", "100.64.0.0/10"},
		[]string{"10.1.9.0/24", "[fd00::bad]"})
	ports := mustCompile(t, []string{"*:443", "1.2.3.4:22"}, []string{"*:25"})
	tests := []struct {
		set    *Set
		addr   string
		port   int
		name   string
		allow  bool
		rule   string
		reason string
	}{
		// Rebinding: an allowed name resolving to a special address.
		{plain, "127.0.0.1", 443, "allowed.test", false, "loopback address", "allowed.test resolved to 127.0.0.1, which is a loopback address"},
		{plain, "127.5.6.7", 443, "allowed.test", false, "loopback address", "add --allow-net 127.5.6.7:443 to allow this loopback address explicitly"},
		{plain, "::1", 443, "allowed.test", false, "loopback address", "add --allow-net [::1]:443"},
		{plain, "169.254.169.254", 80, "allowed.test", false, "cloud metadata address", "a cloud metadata address"},
		{plain, "fd00:ec2::254", 80, "allowed.test", false, "cloud metadata address", ""},
		{plain, "100.100.100.200", 80, "allowed.test", false, "cloud metadata address", ""},
		{plain, "169.254.1.1", 80, "allowed.test", false, "link-local address", ""},
		{plain, "fe80::1", 80, "allowed.test", false, "link-local address", ""},
		{plain, "10.1.2.3", 5432, "allowed.test", false, "private address", "add --allow-net 10.1.2.3:5432 to allow this private address explicitly"},
		{plain, "172.16.0.1", 443, "allowed.test", false, "private address", ""},
		{plain, "192.168.1.1", 443, "allowed.test", false, "private address", ""},
		{plain, "fd12:3456::1", 443, "allowed.test", false, "private address", ""},
		{plain, "100.64.0.1", 443, "allowed.test", false, "shared (CGNAT) address", ""},
		{plain, "100.127.255.255", 443, "allowed.test", false, "shared (CGNAT) address", ""},
		{plain, "224.0.0.1", 443, "allowed.test", false, "multicast address", ""},
		{plain, "ff02::1", 443, "allowed.test", false, "multicast address", ""},
		{plain, "0.0.0.0", 443, "allowed.test", false, "unspecified address", "an unspecified address"},
		{plain, "::", 443, "allowed.test", false, "unspecified address", ""},
		{plain, "255.255.255.255", 443, "allowed.test", false, "broadcast address", ""},
		{plain, "240.0.0.1", 443, "allowed.test", false, "reserved address", ""},
		{plain, "::ffff:127.0.0.1", 443, "allowed.test", false, "loopback address", "resolved to 127.0.0.1"},
		{plain, "::ffff:169.254.169.254", 443, "allowed.test", false, "cloud metadata address", ""},
		{plain, "64:ff9b::7f00:1", 443, "allowed.test", false, "loopback address", "a NAT64 address embedding 127.0.0.1, a loopback address"},
		{plain, "64:ff9b::a9fe:a9fe", 443, "allowed.test", false, "cloud metadata address", "NAT64"},
		{plain, "2002:7f00:1::1", 443, "allowed.test", false, "loopback address", "a 6to4 address embedding 127.0.0.1"},
		{plain, "2002:a00:1::", 443, "allowed.test", false, "private address", "6to4"},
		{plain, "::127.0.0.1", 443, "allowed.test", false, "reserved address", ""},
		{plain, "fe80::1%eth0", 443, "allowed.test", false, "link-local address", ""},
		// Public addresses of an allowed name pass.
		{plain, "93.184.215.14", 443, "allowed.test", true, RulePublic, "a public address"},
		{plain, "2606:2800:21f:cb07:6820:80da:af6b:8b2c", 443, "allowed.test", true, RulePublic, ""},
		{plain, "64:ff9b::5db8:d70e", 443, "allowed.test", true, RulePublic, ""},
		{plain, "2002:5db8:d70e::1", 443, "allowed.test", true, RulePublic, ""},
		{plain, "100.128.0.1", 443, "allowed.test", true, RulePublic, ""},
		// IP literals: "*" allows public ones, never special ones.
		{plain, "93.184.215.14", 443, "", true, "*", `allowed by the entry "*"`},
		{plain, "127.0.0.1", 443, "", false, "loopback address", "127.0.0.1 is a loopback address, refused unless an allow entry names it by address"},
		{plain, "10.1.2.3", 5432, "", false, "private address", "add --allow-net 10.1.2.3:5432 to allow this private address explicitly"},
		// Explicit IP/CIDR entries allow special addresses, on their port.
		{explicit, "127.0.0.1", 5432, "allowed.test", true, "127.0.0.1:5432", ""},
		{explicit, "127.0.0.1", 5432, "", true, "127.0.0.1:5432", ""},
		{explicit, "::ffff:127.0.0.1", 5432, "", true, "127.0.0.1:5432", ""},
		{explicit, "127.0.0.1", 5433, "allowed.test", false, "loopback address", ""},
		{explicit, "10.1.2.3", 5432, "allowed.test", true, "10.1.0.0/16", ""},
		{explicit, "10.2.0.1", 5432, "allowed.test", false, "private address", ""},
		{explicit, "169.254.169.254", 80, "", true, "169.254.169.254:80", ""},
		{explicit, "169.254.169.254", 443, "", false, "cloud metadata address", ""},
		{explicit, "::1", 8080, "", true, "[::1]:8080", ""},
		{explicit, "fd00::1", 443, "", true, "[fd00::/8]:443", ""},
		{explicit, "100.64.1.1", 443, "allowed.test", true, "100.64.0.0/10", ""},
		{explicit, "100.100.100.200", 443, "allowed.test", true, "100.64.0.0/10", ""}, // the CIDR names it: the user asked
		{explicit, "93.184.215.14", 443, "", false, RuleNoAllow, "no allow entry matches 93.184.215.14:443; add --allow-net 93.184.215.14:443"},
		{explicit, "2606:2800::1", 443, "", false, RuleNoAllow, "add --allow-net [2606:2800::1]:443"},
		// Deny IP/CIDR entries beat explicit allows, for literals and
		// resolved addresses alike.
		{explicit, "10.1.9.9", 5432, "", false, "10.1.9.0/24", `10.1.9.9:5432 matches the deny entry "10.1.9.0/24", and deny beats allow`},
		{explicit, "10.1.9.9", 5432, "allowed.test", false, "10.1.9.0/24", "(an address of allowed.test)"},
		{explicit, "fd00::bad", 443, "", false, "[fd00::bad]", ""},
		// Ports, and a deny "*" with a port applies to IP literals.
		{ports, "93.184.215.14", 443, "", true, "*:443", ""},
		{ports, "93.184.215.14", 80, "", false, RuleNoAllow, ""},
		{ports, "1.2.3.4", 22, "", true, "1.2.3.4:22", ""},
		{ports, "1.2.3.4", 25, "", false, "*:25", "deny beats allow"},
		{ports, "93.184.215.14", 0, "", false, RuleInvalid, "out of range"},
	}
	for _, tt := range tests {
		d := tt.set.DecideAddr(netip.MustParseAddr(tt.addr), tt.port, tt.name)
		if d.Allowed != tt.allow || d.Rule != tt.rule || !strings.Contains(d.Reason, tt.reason) || d.Reason == "" {
			t.Errorf("DecideAddr(%s, %d, %q) = %+v, want allowed %v rule %q reason mentioning %q", tt.addr, tt.port, tt.name, d, tt.allow, tt.rule, tt.reason)
		}
	}
	if d := plain.DecideAddr(netip.Addr{}, 443, ""); d.Allowed || d.Rule != RuleInvalid {
		t.Errorf("DecideAddr(zero Addr) = %+v, want refused as invalid", d)
	}
}

// TestDecideRebindingTwoSteps plays the proxy's two questions for a name
// the allow list names, whose DNS answer points at the host: the name
// passes, every address of the answer is refused but the public one.
func TestDecideRebindingTwoSteps(t *testing.T) {
	s := mustCompile(t, []string{"*.example.com:443"}, []string{"169.254.169.254"})
	tg := mustTarget(t, "Rebind.Example.COM")
	if d := s.DecideName(tg, 443); !d.Allowed {
		t.Fatalf("DecideName(%s) = %+v, want allowed", tg, d)
	}
	answer := []string{"127.0.0.1", "::1", "169.254.169.254", "10.0.0.1", "::ffff:7f00:1", "64:ff9b::7f00:1", "93.184.215.14"}
	var passed []string
	for _, a := range answer {
		if d := s.DecideAddr(netip.MustParseAddr(a), 443, tg.Name); d.Allowed {
			passed = append(passed, a)
		}
	}
	if len(passed) != 1 || passed[0] != "93.184.215.14" {
		t.Errorf("addresses passed: %q, want only the public one", passed)
	}
}

// BenchmarkDecide measures the two questions the proxy asks per new
// connection (ParseTarget, DecideName, DecideAddr) against a list of a
// dozen entries.
func BenchmarkDecide(b *testing.B) {
	s := mustCompile(b,
		[]string{"proxy.golang.org:443", "sum.golang.org:443", "registry.npmjs.org:443", "pypi.org:443", "files.pythonhosted.org:443",
			"*.github.com:443", "github.com", "*.githubusercontent.com:443", "crates.io", "static.crates.io", "10.0.0.0/8:5432", "127.0.0.1:8080"},
		[]string{"169.254.169.254", "metadata.google.*", "*.evil.example"})
	addr := netip.MustParseAddr("140.82.112.3")
	b.ReportAllocs()
	for b.Loop() {
		tg, err := ParseTarget("Objects.GitHubUserContent.com")
		if err != nil {
			b.Fatal(err)
		}
		if d := s.DecideName(tg, 443); !d.Allowed {
			b.Fatal(d)
		}
		if d := s.DecideAddr(addr, 443, tg.Name); !d.Allowed {
			b.Fatal(d)
		}
	}
}
