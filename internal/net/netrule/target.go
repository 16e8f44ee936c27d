package netrule

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// maxHostInput bounds the raw host handed to the IDNA mapping; a DNS name
// is at most 253 bytes, and no mapping turns 1024 bytes into a valid one.
const maxHostInput = 1024

// maxName is the longest DNS name (without the root's trailing dot).
const maxName = 253

// maxLabel is the longest DNS label.
const maxLabel = 63

// lookup is the UTS #46 mapping a browser applies to a URL's host
// (WHATWG URL "domain to ASCII"): case and width folded, NFC, Bidi and
// joiner rules, non-transitional, hyphens unchecked ("r3---sn-x" labels
// exist), STD3 off so that the ASCII checks below, which also know '_'
// and '*', give the error.
var lookup = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.CheckHyphens(false),
	idna.StrictDomainName(false),
)

// ParseTarget canonicalises the host part of a request target (a CONNECT
// authority, an absolute URL's host, a SOCKS5 address): "127.1",
// "2130706433", "0x7f.1" and "0177.0.0.1" are 127.0.0.1, "[::ffff:7f00:1]"
// is 127.0.0.1, "Example.COM." is example.com, IDNA names become
// punycode. A host with NUL, CR, LF, spaces or other characters no DNS
// name has is an error.
//
// The canonical form is a fixed point: ParseTarget(t.String()) is t. The
// caller resolves and dials t.Name (or t.Addr), never the raw host, so
// that the host decided on is the host connected to; it resolves a t.Name
// with a dot as an absolute name (t.Name + "."), so that a resolv.conf
// search domain cannot turn an allowed name into another one (a single
// label, such as localhost, is resolved as the host's own tools would:
// see netproxy), and checks every address with DecideAddr.
func ParseTarget(host string) (Target, error) {
	name, addr, err := canonicalHost(host, false)
	if err != nil {
		return Target{}, fmt.Errorf("host %s: %w", quoteShort(host), err)
	}
	return Target{Name: name, Addr: addr}, nil
}

// quoteShort Go-quotes a host for an error, cut after 128 bytes (a
// client's host may be a megabyte long).
func quoteShort(host string) string {
	const show = 128
	if len(host) <= show {
		return strconv.Quote(host)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(host[:show]), len(host))
}

// canonicalHost canonicalises a target host, or, with pattern, the host
// part of a rule (where '*' is allowed in a name). It returns either a
// name or an address.
func canonicalHost(host string, pattern bool) (string, netip.Addr, error) {
	if host == "" {
		return "", netip.Addr{}, errors.New("the host is empty")
	}
	if len(host) > maxHostInput {
		return "", netip.Addr{}, fmt.Errorf("the host is %d bytes long; a DNS name has at most %d", len(host), maxName)
	}
	if err := forbiddenBytes(host, false); err != nil {
		return "", netip.Addr{}, err
	}
	if !utf8.ValidString(host) {
		return "", netip.Addr{}, errors.New("the host is not valid UTF-8, so it is no DNS name")
	}
	if host[0] == '[' {
		if host[len(host)-1] != ']' {
			if !pattern && strings.Contains(host, "]:") {
				return "", netip.Addr{}, errors.New("the host carries a port; pass the host alone")
			}
			return "", netip.Addr{}, errors.New("an opening '[' without its closing ']'")
		}
		a, err := parseIPv6(host[1:len(host)-1], pattern)
		return "", a, err
	}
	if strings.ContainsAny(host, "[]") {
		return "", netip.Addr{}, errors.New("brackets belong only around a whole IPv6 address, as in [::1]")
	}
	if !pattern && strings.Count(host, ":") == 1 {
		return "", netip.Addr{}, errors.New("the host carries a port (one colon, and no IPv6 address has only one); pass the host alone")
	}
	if strings.Contains(host, ":") {
		a, err := parseIPv6(host, pattern)
		return "", a, err
	}
	return canonicalName(host, pattern)
}

// forbiddenBytes refuses the bytes that end or split a host in the
// protocols the proxy speaks (NUL, CR, LF, space, userinfo and path
// separators) with a sentence naming the byte. A rule may hold a '/' (a
// CIDR), with slashOK.
func forbiddenBytes(host string, slashOK bool) error {
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c == 0:
			return errors.New("a NUL byte is not allowed in a host")
		case c == '\r' || c == '\n':
			return errors.New("a line break (CR or LF) is not allowed in a host")
		case c == ' ' || c == '\t':
			return errors.New("a space is not allowed in a host")
		case c < 0x20 || c == 0x7f:
			return fmt.Errorf("the control byte 0x%02x is not allowed in a host", c)
		case c == '@':
			return errors.New("'@' (user information) is not allowed in a host")
		case c == '/' && slashOK:
		case c == '/' || c == '\\':
			return fmt.Errorf("%q (a path separator) is not allowed in a host", string(c))
		}
	}
	return nil
}

// parseIPv6 parses an IPv6 literal without brackets; the zone is dropped
// and an IPv4-mapped address becomes its IPv4 address.
func parseIPv6(s string, pattern bool) (netip.Addr, error) {
	if pattern && strings.Contains(s, "*") {
		return netip.Addr{}, errIPWildcard
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() {
		return netip.Addr{}, errors.New("not a valid IPv6 address")
	}
	if pattern && a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("a rule cannot name an IPv6 zone (%q); write the address without %%%s", s, a.Zone())
	}
	return a.WithZone("").Unmap(), nil
}

// errIPWildcard is the error of a rule with '*' in an IP address.
var errIPWildcard = errors.New("a wildcard cannot stand in an IP address; write a CIDR such as 10.0.0.0/8 or fd00::/8")

// canonicalName maps a host name (or, with pattern, a host pattern) to its
// canonical ASCII form, or to an IPv4 address when its last label is a
// number (the WHATWG URL rule: "127.1", "0x7f.1", "2130706433").
func canonicalName(host string, pattern bool) (string, netip.Addr, error) {
	name, err := lookup.ToASCII(host)
	if err != nil {
		return "", netip.Addr{}, fmt.Errorf("not a valid DNS name (%v)", idnaReason(err))
	}
	// ToASCII can map characters outside the ASCII checks' view (a
	// full-width '@', "℀" to "a/c"): check the bytes it produced again.
	if err := forbiddenBytes(name, false); err != nil {
		return "", netip.Addr{}, err
	}
	if err := checkALabels(host, name); err != nil {
		return "", netip.Addr{}, err
	}
	name = strings.TrimSuffix(name, ".")
	if name == "" {
		return "", netip.Addr{}, errors.New("the host is only a dot")
	}
	labels := strings.Split(name, ".")
	last := labels[len(labels)-1]
	switch {
	case pattern && strings.Contains(name, "*") && name != "*":
		if strings.ContainsAny(name, "0123456789") && numericLike(strings.ReplaceAll(name, "*", "0")) {
			return "", netip.Addr{}, errIPWildcard
		}
		if isNumber(last) {
			return "", netip.Addr{}, errors.New("the pattern ends in a number, so it could only match an IPv4 address; write a CIDR such as 10.0.0.0/8")
		}
	case isNumber(last):
		a, ok := parseIPv4(name)
		if !ok {
			return "", netip.Addr{}, errors.New("the host ends in a number but is not a valid IPv4 address")
		}
		return "", a, nil
	}
	if len(name) > maxName {
		return "", netip.Addr{}, fmt.Errorf("the name is %d bytes long; a DNS name has at most %d", len(name), maxName)
	}
	for _, l := range labels {
		if err := checkLabel(l, pattern); err != nil {
			return "", netip.Addr{}, err
		}
	}
	if pattern {
		return name, netip.Addr{}, nil
	}
	// The canonical form must be a fixed point: the proxy decides on it
	// and dials it, and the SNI check compares canonical forms.
	again, err := lookup.ToASCII(name)
	if err != nil || again != name {
		return "", netip.Addr{}, errors.New("the name has no stable canonical form")
	}
	return name, netip.Addr{}, nil
}

// checkALabels refuses an ASCII "xn--" label of host that ToASCII did not
// keep as it is: a punycode label that decodes to plain ASCII
// ("xn--example-" is "example") is an alias no client should send.
func checkALabels(host, name string) error {
	if !strings.Contains(strings.ToLower(host), "xn--") {
		return nil
	}
	kept := map[string]bool{}
	for _, l := range strings.Split(name, ".") {
		kept[l] = true
	}
	for _, l := range strings.Split(strings.ToLower(host), ".") {
		if strings.HasPrefix(l, "xn--") && !kept[l] {
			return fmt.Errorf("the label %q is not a valid internationalised (xn--) label", l)
		}
	}
	return nil
}

// idnaReason shortens an idna error ("idna: disallowed rune U+2028") to
// its reason.
func idnaReason(err error) string {
	return strings.TrimPrefix(err.Error(), "idna: ")
}

// checkLabel checks one label of a canonical ASCII name: non-empty, at
// most 63 bytes, letters, digits, '-' and '_' ('*' too in a pattern), no
// leading or trailing hyphen.
func checkLabel(l string, pattern bool) error {
	if l == "" {
		return errors.New("the name has an empty label (two dots in a row, or a leading dot)")
	}
	if len(l) > maxLabel {
		return fmt.Errorf("the label %q is %d bytes long; a DNS label has at most %d", l, len(l), maxLabel)
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		case c == '*' && pattern:
		case c == '*':
			return errors.New("'*' is a wildcard of rules, not a character of a host")
		default:
			return fmt.Errorf("the character %q is not allowed in a DNS name", string(c))
		}
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return fmt.Errorf("the label %q starts or ends with a hyphen", l)
	}
	if pattern && strings.Contains(l, "*") && strings.HasPrefix(l, "xn--") {
		return fmt.Errorf("the label %q mixes a wildcard with an internationalised (xn--) label", l)
	}
	return nil
}

// isNumber says whether a label is a number in the WHATWG URL sense: all
// decimal digits, or "0x"/"0X" followed by hex digits (possibly none).
func isNumber(l string) bool {
	if l == "" {
		return false
	}
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		for i := 2; i < len(l); i++ {
			if !isHex(l[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// numericLike says whether s (a pattern with its '*' replaced by '0') is
// an IPv4 address in some numeric form: "10.0", "0.1", "102.3.4.5".
func numericLike(s string) bool {
	labels := strings.Split(s, ".")
	if !isNumber(labels[len(labels)-1]) {
		return false
	}
	_, ok := parseIPv4(s)
	return ok
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// parseIPv4 is the WHATWG URL IPv4 parser: one to four parts, each
// decimal, octal (leading 0) or hex (0x); every part but the last at most
// 255, the last filling the remaining bytes. s has no trailing dot.
func parseIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var nums [4]uint64
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 && n > 255 {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	last := nums[len(parts)-1]
	if last >= 1<<(8*(5-len(parts))) {
		return netip.Addr{}, false
	}
	v := last
	for i := 0; i < len(parts)-1; i++ {
		v += nums[i] << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseIPv4Number parses one part of a numeric IPv4 host; a value past
// 2^32 fails (no part of an address can be that large).
func parseIPv4Number(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := uint64(10)
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true
		}
	case len(p) >= 2 && p[0] == '0':
		base, p = 8, p[1:]
	}
	var n uint64
	for i := 0; i < len(p); i++ {
		c := p[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		n = n*base + d
		if n > 1<<32 {
			return 0, false
		}
	}
	return n, true
}
