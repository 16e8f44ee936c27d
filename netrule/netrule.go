// Package netrule decides, for cordon's network policy, whether a
// connection to a host and port is allowed: it parses the network.allow
// and network.deny entries (host[:port] patterns with * wildcards, IP
// literals and CIDRs with optional ports), canonicalises the host a client
// asked for (case, trailing dot, IDNA, numeric IPv4 forms, brackets, zone
// ids, IPv4-mapped IPv6; NUL, CR and LF refused), and classifies resolved
// addresses (loopback, link-local, private, CGNAT, multicast, cloud
// metadata), which are refused unless an IP or CIDR rule names them.
//
// It is pure: it never resolves a name, opens a socket or reads a file.
// The proxy (package netproxy) asks it twice per connection: once for the
// name before any DNS lookup (Set.DecideName), then for every address the
// name resolved to (Set.DecideAddr).
package netrule

import (
	"net/netip"
)

// Rule is one parsed entry of network.allow or network.deny.
type Rule struct {
	// Raw is the entry as written (the audit log's rule names it).
	Raw string
	// Host is the canonical host pattern ("example.com", "*.example.com",
	// "metadata.google.*", "*"); empty for an IP or CIDR rule.
	Host string
	// Prefix is the address range of an IP literal (a /32 or /128) or CIDR
	// rule; the zero Prefix for a host pattern.
	Prefix netip.Prefix
	// Port is the port the rule applies to; 0 is every port ("*" or none
	// written).
	Port int
}

// IsAddr says whether the rule names addresses (an IP literal or a CIDR)
// rather than host names.
func (r Rule) IsAddr() bool { return r.Prefix.IsValid() }

// Parse parses one network.allow or network.deny entry. Its error is one
// sentence saying what is wrong and what a valid entry looks like.
func Parse(raw string) (Rule, error) {
	panic("netrule.Parse: being built")
}

// Set is a compiled allow and deny list. Deny beats allow.
type Set struct {
	// Allow and Deny are the parsed entries, in the order written.
	Allow, Deny []Rule
}

// Compile parses the allow and deny entries and refuses a rule that can
// never match (an allow entry that a deny entry covers whole).
func Compile(allow, deny []string) (*Set, error) {
	panic("netrule.Compile: being built")
}

// Target is a host a client asked for, canonicalised.
type Target struct {
	// Name is the canonical host name (lower case, ASCII/punycode, no
	// trailing dot); empty when the host is an IP literal.
	Name string
	// Addr is the IP literal the client asked for (IPv4-mapped IPv6
	// unmapped, zone dropped), or the zero Addr for a name.
	Addr netip.Addr
}

// String is the host as it appears in messages and the audit log.
func (t Target) String() string {
	if t.Addr.IsValid() {
		return t.Addr.String()
	}
	return t.Name
}

// ParseTarget canonicalises the host part of a request target (a CONNECT
// authority, an absolute URL's host, a SOCKS5 address): "127.1",
// "2130706433", "0x7f.1" and "0177.0.0.1" are 127.0.0.1, "[::ffff:7f00:1]"
// is 127.0.0.1, "Example.COM." is example.com, IDNA names become
// punycode. A host with NUL, CR, LF, spaces or other characters no DNS
// name has is an error.
func ParseTarget(host string) (Target, error) {
	panic("netrule.ParseTarget: being built")
}

// Decision is the answer for one connection or one of its addresses.
type Decision struct {
	// Allowed says whether the connection may proceed.
	Allowed bool
	// Rule is the entry that decided (its Raw text), or, when no entry
	// did, a short built-in reason: "no allow rule", "loopback address",
	// "cloud metadata address", ...
	Rule string
	// Reason is one sentence for the command's user: why, and what would
	// change it ("add --allow-net example.com:443").
	Reason string
}

// DecideName decides a connection to the name t (t.Name != "") on port
// before any DNS lookup: a deny entry matching it refuses, then an allow
// entry must match it. IP and CIDR entries never match a name.
func (s *Set) DecideName(t Target, port int) Decision {
	panic("netrule.DecideName: being built")
}

// DecideAddr decides a connection to addr on port: addr is either the IP
// literal the client asked for (name "") or one address the allowed name
// resolved to. Deny IP/CIDR entries refuse; a special address (loopback,
// link-local, private, CGNAT, multicast, unspecified, broadcast, cloud
// metadata, or an IPv6 form embedding one) is refused unless an allow
// IP/CIDR entry covers it; an IP literal otherwise needs an allow entry
// (an IP/CIDR entry, or the host pattern "*").
func (s *Set) DecideAddr(addr netip.Addr, port int, name string) Decision {
	panic("netrule.DecideAddr: being built")
}
