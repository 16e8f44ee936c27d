// Package netrule decides, for cordon's network policy, whether a
// connection to a host and port is allowed: it parses the network.allow
// and network.deny entries (host[:port] patterns with * wildcards, IP
// literals and CIDRs with optional ports), canonicalises the host a client
// asked for (case, trailing dot, IDNA, numeric IPv4 forms, brackets, zone
// ids, IPv4-mapped IPv6; NUL, CR, LF, spaces, '@', '/' and '\' refused),
// and classifies resolved addresses (loopback, link-local, private, CGNAT,
// multicast, unspecified, broadcast, reserved, cloud metadata, and the
// NAT64 and 6to4 forms embedding them), which are refused unless an allow
// IP or CIDR entry covers them. Deny beats allow.
//
// It is pure: it never resolves a name, opens a socket or reads a file,
// and it holds no state beyond the compiled Set, so one Set serves
// concurrent connections. The proxy (package netproxy) asks it twice per
// connection: once for the name before any DNS lookup (Set.DecideName),
// then for every address the name resolved to (Set.DecideAddr); it then
// dials the checked address, never the name again. The proxy, not this
// package, resolves, dials, records audit records and peeks at SNI (whose
// server name it canonicalises with ParseTarget and compares to the
// CONNECT target's).
//
// Files: parse.go (entries and Compile), target.go (canonical hosts),
// special.go (special address ranges), decide.go (decisions and the
// wildcard matcher).
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

// Set is a compiled allow and deny list. Deny beats allow.
type Set struct {
	// Allow and Deny are the parsed entries, in the order written.
	Allow, Deny []Rule
	// PrivateNames are canonical host names (the ci profile's registries
	// that your own tool configuration names) that may resolve to a
	// private address (RFC 1918, fc00::/7): a company mirror on 10.x. For
	// those names only; loopback, link-local, metadata and every other
	// special address stay refused.
	PrivateNames []string
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
