package netrule

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Parse parses one network.allow or network.deny entry. Its error is one
// sentence saying what is wrong and what a valid entry looks like.
func Parse(raw string) (Rule, error) {
	r, err := parse(raw)
	if err != nil {
		return Rule{}, fmt.Errorf("network entry %q: %w", raw, err)
	}
	return r, nil
}

func parse(raw string) (Rule, error) {
	if raw == "" {
		return Rule{}, errors.New("the entry is empty; entries look like example.com, example.com:443, *.example.com, *:443, 10.0.0.0/8:5432 or [::1]:8080")
	}
	if len(raw) > maxHostInput {
		return Rule{}, fmt.Errorf("the entry is %d bytes long", len(raw))
	}
	if err := forbiddenBytes(raw, true); err != nil {
		return Rule{}, err
	}
	if strings.Contains(raw, "://") {
		return Rule{}, errors.New("an entry is a host, not a URL; write the host and port alone, as in example.com:443")
	}
	host, port, err := splitEntry(raw)
	if err != nil {
		return Rule{}, err
	}
	p, err := parsePort(port)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{Raw: raw, Port: p}
	if strings.Contains(host, "/") {
		r.Prefix, err = parseCIDR(host)
		return r, err
	}
	name, addr, err := canonicalHost(host, true)
	if err != nil {
		return Rule{}, err
	}
	if addr.IsValid() {
		r.Prefix = netip.PrefixFrom(addr, addr.BitLen())
	} else {
		r.Host = name
	}
	return r, nil
}

// splitEntry splits an entry into its host and port ("" when no port is
// written). An unbracketed entry with more than one ':' is an IPv6
// address or CIDR without a port.
func splitEntry(raw string) (host, port string, err error) {
	if raw[0] == '[' {
		end := strings.IndexByte(raw, ']')
		if end < 0 {
			return "", "", errors.New("an opening '[' without its closing ']'")
		}
		host, rest := raw[1:end], raw[end+1:]
		if host == "" {
			return "", "", errors.New("the brackets are empty")
		}
		if !strings.Contains(host, ":") {
			return "", "", errors.New("brackets belong only around an IPv6 address or CIDR, as in [::1]:8080")
		}
		if rest != "" && rest[0] != ':' {
			return "", "", fmt.Errorf("unexpected %q after ']'; write [ADDRESS]:PORT", rest)
		}
		if !strings.Contains(host, "/") {
			host = "[" + host + "]"
		}
		if rest == "" {
			return host, "", nil
		}
		return host, rest[1:], portPresent(rest[1:])
	}
	switch strings.Count(raw, ":") {
	case 0:
		return raw, "", nil
	case 1:
		i := strings.IndexByte(raw, ':')
		if i == 0 {
			return "", "", errors.New("the host before ':' is empty")
		}
		return raw[:i], raw[i+1:], portPresent(raw[i+1:])
	default:
		return raw, "", nil
	}
}

// portPresent refuses a ':' with no port after it.
func portPresent(port string) error {
	if port == "" {
		return errors.New("the port after ':' is empty; write a port (1-65535) or *")
	}
	return nil
}

// parsePort parses an entry's port: "" or "*" is every port (0),
// otherwise a decimal number in 1..65535.
func parsePort(s string) (int, error) {
	if s == "" || s == "*" {
		return 0, nil
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("the port %q is not a number; write a port (1-65535) or *", s)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("the port %s is out of range; a port is 1-65535", s)
	}
	return n, nil
}

// parseCIDR parses an IP/BITS range; host bits set after the mask are an
// error (10.0.0.1/8 is a typo for 10.0.0.0/8 or 10.0.0.1), and an
// IPv4-mapped range becomes its IPv4 range.
func parseCIDR(s string) (netip.Prefix, error) {
	if strings.Contains(s, "*") {
		return netip.Prefix{}, errIPWildcard
	}
	p, err := netip.ParsePrefix(s)
	if addr, bits, ok := strings.Cut(s, "/"); err != nil && ok && strings.Contains(bits, ":") {
		b, port, _ := strings.Cut(bits, ":")
		return netip.Prefix{}, fmt.Errorf("an IPv6 CIDR with a port needs brackets: write [%s/%s]:%s", addr, b, port)
	}
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a valid CIDR; write an address and a prefix length such as 10.0.0.0/8 or fd00::/8", s)
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Errorf("the CIDR %s has host bits set; write %s (or the single address %s)", s, m, p.Addr())
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p, nil
}

// Compile parses the allow and deny entries and refuses a rule that can
// never match (an allow entry that a deny entry covers whole).
func Compile(allow, deny []string) (*Set, error) {
	s := &Set{}
	for _, raw := range deny {
		r, err := Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("deny list: %w", err)
		}
		s.Deny = append(s.Deny, r)
	}
	for _, raw := range allow {
		r, err := Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("allow list: %w", err)
		}
		for _, d := range s.Deny {
			if covers(d, r) {
				return nil, fmt.Errorf("the allow entry %q can never match: the deny entry %q covers it whole, and deny beats allow; remove one of the two", r.Raw, d.Raw)
			}
		}
		s.Allow = append(s.Allow, r)
	}
	return s, nil
}

// covers says whether every connection the rule a matches is also matched
// by d. It is exact for IP and CIDR rules and for host names without a
// wildcard; for two wildcard patterns it may answer false when the answer
// is true (the rule is kept then, and deny still wins when deciding).
func covers(d, a Rule) bool {
	if d.Port != 0 && d.Port != a.Port {
		return false
	}
	if d.Host == "*" {
		// "*" in a deny list matches every name and every IP literal.
		return true
	}
	switch {
	case a.IsAddr() && d.IsAddr():
		return d.Prefix.Bits() <= a.Prefix.Bits() && d.Prefix.Contains(a.Prefix.Addr())
	case a.IsAddr() || d.IsAddr():
		// A name can resolve to anything, and a host pattern never matches
		// an address: neither covers the other.
		return false
	default:
		return matchHost(d.Host, a.Host)
	}
}
