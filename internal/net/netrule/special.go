package netrule

import (
	"net/netip"
)

// special is a kind of address that is refused unless an allow IP or CIDR
// entry covers it: it reaches the host itself, its network, or a cloud's
// metadata service rather than the public internet.
type special struct {
	// kind is the Decision's Rule: "loopback address", ...
	kind string
	// article is "a" or "an" before kind in a sentence.
	article string
}

var (
	kindLoopback    = special{"loopback address", "a"}
	kindLinkLocal   = special{"link-local address", "a"}
	kindPrivate     = special{"private address", "a"}
	kindShared      = special{"shared (CGNAT) address", "a"}
	kindMulticast   = special{"multicast address", "a"}
	kindUnspecified = special{"unspecified address", "an"}
	kindBroadcast   = special{"broadcast address", "a"}
	kindReserved    = special{"reserved address", "a"}
	kindMetadata    = special{"cloud metadata address", "a"}
)

// specialRange is one range of special addresses; the first range that
// contains an address decides its kind, so narrower ranges come first.
type specialRange struct {
	prefix netip.Prefix
	kind   special
}

var specialRanges = []specialRange{
	// Cloud metadata services, before the ranges that hold them.
	{netip.MustParsePrefix("169.254.169.254/32"), kindMetadata},  // AWS, GCP, Azure, OCI, ...
	{netip.MustParsePrefix("100.100.100.200/32"), kindMetadata},  // Alibaba Cloud
	{netip.MustParsePrefix("168.63.129.16/32"), kindMetadata},    // Azure WireServer (a public address every Azure VM reaches)
	{netip.MustParsePrefix("fd00:ec2::254/128"), kindMetadata},   // AWS over IPv6
	{netip.MustParsePrefix("255.255.255.255/32"), kindBroadcast}, // limited broadcast
	{netip.MustParsePrefix("0.0.0.0/8"), kindUnspecified},        // "this network": 0.0.0.0 reaches the host itself
	{netip.MustParsePrefix("10.0.0.0/8"), kindPrivate},           // RFC 1918
	{netip.MustParsePrefix("100.64.0.0/10"), kindShared},         // RFC 6598 carrier-grade NAT
	{netip.MustParsePrefix("127.0.0.0/8"), kindLoopback},         // RFC 1122
	{netip.MustParsePrefix("169.254.0.0/16"), kindLinkLocal},     // RFC 3927
	{netip.MustParsePrefix("172.16.0.0/12"), kindPrivate},        // RFC 1918
	{netip.MustParsePrefix("192.0.0.0/24"), kindReserved},        // RFC 6890 IETF protocol assignments
	{netip.MustParsePrefix("192.0.2.0/24"), kindReserved},        // RFC 5737 documentation
	{netip.MustParsePrefix("192.88.99.0/24"), kindReserved},      // RFC 7526 deprecated 6to4 relays
	{netip.MustParsePrefix("192.168.0.0/16"), kindPrivate},       // RFC 1918
	{netip.MustParsePrefix("198.18.0.0/15"), kindReserved},       // RFC 2544 benchmarking
	{netip.MustParsePrefix("198.51.100.0/24"), kindReserved},     // RFC 5737 documentation
	{netip.MustParsePrefix("203.0.113.0/24"), kindReserved},      // RFC 5737 documentation
	{netip.MustParsePrefix("224.0.0.0/4"), kindMulticast},        // RFC 5771
	{netip.MustParsePrefix("240.0.0.0/4"), kindReserved},         // RFC 1112 class E
	{netip.MustParsePrefix("::/128"), kindUnspecified},           // RFC 4291
	{netip.MustParsePrefix("::1/128"), kindLoopback},             // RFC 4291
	{netip.MustParsePrefix("::/96"), kindReserved},               // deprecated IPv4-compatible
	{netip.MustParsePrefix("::ffff:0:0:0/96"), kindReserved},     // RFC 2765 IPv4-translated
	{netip.MustParsePrefix("64:ff9b:1::/48"), kindPrivate},       // RFC 8215 local-use NAT64
	{netip.MustParsePrefix("100::/64"), kindReserved},            // RFC 6666 discard-only
	{netip.MustParsePrefix("2001::/32"), kindReserved},           // RFC 4380 Teredo (embeds obfuscated IPv4)
	{netip.MustParsePrefix("2001:db8::/32"), kindReserved},       // RFC 3849 documentation
	{netip.MustParsePrefix("3fff::/20"), kindReserved},           // RFC 9637 documentation
	{netip.MustParsePrefix("fc00::/7"), kindPrivate},             // RFC 4193 unique local
	{netip.MustParsePrefix("fe80::/10"), kindLinkLocal},          // RFC 4291
	{netip.MustParsePrefix("fec0::/10"), kindPrivate},            // RFC 3879 deprecated site-local
	{netip.MustParsePrefix("ff00::/8"), kindMulticast},           // RFC 4291
}

// nat64 and sixToFour are the IPv6 ranges that embed an IPv4 address a
// gateway or relay connects to: such an address is as special as the
// IPv4 address inside it.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// classify returns the special kind of addr (ok false for a public
// address) and, when the kind comes from an IPv4 address embedded in an
// IPv6 one, that address and the embedding's name ("NAT64", "6to4").
// An IPv4-mapped address is classified as its IPv4 address.
func classify(addr netip.Addr) (kind special, embedded netip.Addr, via string, ok bool) {
	addr = addr.WithZone("").Unmap()
	if k, ok := lookupSpecial(addr); ok {
		return k, netip.Addr{}, "", true
	}
	b := addr.As16()
	switch {
	case !addr.Is6():
	case nat64.Contains(addr):
		v4 := netip.AddrFrom4([4]byte(b[12:16]))
		if k, ok := lookupSpecial(v4); ok {
			return k, v4, "NAT64", true
		}
	case sixToFour.Contains(addr):
		v4 := netip.AddrFrom4([4]byte(b[2:6]))
		if k, ok := lookupSpecial(v4); ok {
			return k, v4, "6to4", true
		}
	}
	return special{}, netip.Addr{}, "", false
}

// lookupSpecial finds addr in specialRanges.
func lookupSpecial(addr netip.Addr) (special, bool) {
	for _, r := range specialRanges {
		if r.prefix.Contains(addr) {
			return r.kind, true
		}
	}
	return special{}, false
}
