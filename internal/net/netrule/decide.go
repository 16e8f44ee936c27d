package netrule

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Built-in Decision rules, used when no entry decided.
const (
	// RuleNoAllow is the Rule of a connection no allow entry matches.
	RuleNoAllow = "no allow rule"
	// RuleInvalid is the Rule of a target or port that is not valid.
	RuleInvalid = "invalid target"
	// RulePublic is the Rule of a public address an allowed name resolved
	// to, when no allow IP/CIDR entry names it.
	RulePublic = "public address"
	// RulePrivateName is the Rule of a private address that a name of
	// Set.PrivateNames resolved to.
	RulePrivateName = "private address of a registry your tool configuration names"
)

// DecideName decides a connection to the name t (t.Name != "") on port
// before any DNS lookup: a deny entry matching it refuses, then an allow
// entry must match it. IP and CIDR entries never match a name. A Target
// holding an address is decided by DecideAddr; a name that is not in
// ParseTarget's canonical form is refused.
func (s *Set) DecideName(t Target, port int) Decision {
	if t.Name == "" && t.Addr.IsValid() {
		return s.DecideAddr(t.Addr, port, "")
	}
	if d, bad := invalid(t.Name, port); bad {
		return d
	}
	if c, err := ParseTarget(t.Name); err != nil || c.Name != t.Name {
		return Decision{Rule: RuleInvalid, Reason: fmt.Sprintf("the host %q is not a canonical host name", t.Name)}
	}
	hp := hostPort(t.Name, port)
	for _, r := range s.Deny {
		if !r.IsAddr() && portMatches(r.Port, port) && matchHost(r.Host, t.Name) {
			return denied(r, hp)
		}
	}
	for _, r := range s.Allow {
		if !r.IsAddr() && portMatches(r.Port, port) && matchHost(r.Host, t.Name) {
			return Decision{Allowed: true, Rule: r.Raw, Reason: fmt.Sprintf("%s is allowed by the entry %q", hp, r.Raw)}
		}
	}
	return Decision{Rule: RuleNoAllow, Reason: fmt.Sprintf("no allow entry matches %s; add --allow-net %s", hp, hp)}
}

// DecideAddr decides a connection to addr on port: addr is either the IP
// literal the client asked for (name "") or one address the allowed name
// resolved to. Deny IP/CIDR entries refuse; a special address (loopback,
// link-local, private, CGNAT, multicast, unspecified, broadcast, cloud
// metadata, or an IPv6 form embedding one) is refused unless an allow
// IP/CIDR entry covers it; an IP literal otherwise needs an allow entry
// (an IP/CIDR entry, or the host pattern "*").
//
// A deny entry "*" (with its port, if any) also refuses an IP literal. An
// IPv4-mapped address is decided as its IPv4 address; a zone is ignored.
// With a name, the caller has had DecideName allow that name first: a
// public address of it is then allowed with the Rule "public address"
// (the name's Decision holds the entry that allowed it).
func (s *Set) DecideAddr(addr netip.Addr, port int, name string) Decision {
	if !addr.IsValid() {
		return Decision{Rule: RuleInvalid, Reason: "the address is not valid"}
	}
	addr = addr.WithZone("").Unmap()
	if d, bad := invalid(addr.String(), port); bad {
		return d
	}
	hp := hostPort(addr.String(), port)
	what := hp
	if name != "" {
		what = fmt.Sprintf("%s (an address of %s)", hp, name)
	}
	for _, r := range s.Deny {
		if !portMatches(r.Port, port) {
			continue
		}
		if r.IsAddr() && r.Prefix.Contains(addr) || name == "" && r.Host == "*" {
			return denied(r, what)
		}
	}
	var byAddr *Rule
	for i, r := range s.Allow {
		if r.IsAddr() && portMatches(r.Port, port) && r.Prefix.Contains(addr) {
			byAddr = &s.Allow[i]
			break
		}
	}
	if byAddr != nil {
		return Decision{Allowed: true, Rule: byAddr.Raw, Reason: fmt.Sprintf("%s is allowed by the entry %q", what, byAddr.Raw)}
	}
	if kind, inner, via, ok := classify(addr); ok {
		if kind == kindPrivate && via == "" && name != "" && slices.Contains(s.PrivateNames, name) {
			return Decision{Allowed: true, Rule: RulePrivateName, Reason: fmt.Sprintf("%s is a private address, allowed for %s only: your own tool configuration names it as a registry", what, name)}
		}
		is := fmt.Sprintf("%s %s", kind.article, kind.kind)
		if via != "" {
			is = fmt.Sprintf("a %s address embedding %s, %s", via, inner, is)
		}
		subject := addr.String()
		if name != "" {
			subject = fmt.Sprintf("%s resolved to %s, which", name, addr)
		}
		return Decision{Rule: kind.kind, Reason: fmt.Sprintf(
			"%s is %s, refused unless an allow entry names it by address; add --allow-net %s to allow this %s explicitly",
			subject, is, hp, kind.kind)}
	}
	if name != "" {
		// The name was allowed by DecideName; a public address it resolved
		// to needs nothing more.
		return Decision{Allowed: true, Rule: RulePublic, Reason: fmt.Sprintf("%s is a public address", what)}
	}
	for _, r := range s.Allow {
		if r.Host == "*" && portMatches(r.Port, port) {
			return Decision{Allowed: true, Rule: r.Raw, Reason: fmt.Sprintf("%s is allowed by the entry %q", hp, r.Raw)}
		}
	}
	return Decision{Rule: RuleNoAllow, Reason: fmt.Sprintf("no allow entry matches %s; add --allow-net %s", hp, hp)}
}

// invalid refuses a port outside 1..65535 or an empty host.
func invalid(host string, port int) (Decision, bool) {
	if host == "" {
		return Decision{Rule: RuleInvalid, Reason: "the host is empty"}, true
	}
	if port < 1 || port > 65535 {
		return Decision{Rule: RuleInvalid, Reason: fmt.Sprintf("the port %d of %s is out of range (1-65535)", port, host)}, true
	}
	return Decision{}, false
}

// denied is the Decision of a deny entry r matching what.
func denied(r Rule, what string) Decision {
	return Decision{Rule: r.Raw, Reason: fmt.Sprintf(
		"%s matches the deny entry %q, and deny beats allow; remove or narrow that entry to allow it", what, r.Raw)}
}

// hostPort joins a host and port as an --allow-net value: [v6]:port.
func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// portMatches says whether a rule's port (0 = every port) admits port.
func portMatches(rule, port int) bool {
	return rule == 0 || rule == port
}

// matchHost says whether the host pattern matches name. A label "*"
// matches one or more whole labels; a '*' inside a label matches any
// characters within that one label. name may itself be a pattern (when
// checking whether one rule covers another): its '*' is then matched only
// by a '*' of the pattern, so a true answer means every name the second
// pattern matches, the first matches too.
func matchHost(pattern, name string) bool {
	p := strings.Split(pattern, ".")
	n := strings.Split(name, ".")
	// m[i][j]: p[i:] matches n[j:]. Bounded: at most 127 labels each.
	m := make([][]bool, len(p)+1)
	for i := range m {
		m[i] = make([]bool, len(n)+1)
	}
	m[len(p)][len(n)] = true
	for i := len(p) - 1; i >= 0; i-- {
		for j := len(n) - 1; j >= 0; j-- {
			if p[i] == "*" {
				// One label here, then either the rest of the pattern or
				// more labels for the same "*".
				m[i][j] = m[i+1][j+1] || m[i][j+1]
			} else {
				m[i][j] = n[j] != "*" && matchLabel(p[i], n[j]) && m[i+1][j+1]
			}
		}
	}
	return m[0][0]
}

// matchLabel matches one label against a label pattern whose '*' matches
// any run of characters (a '*' of name only by a '*' of pattern).
func matchLabel(pattern, name string) bool {
	// The classic linear glob: on a mismatch, backtrack to the last '*'.
	pi, ni := 0, 0
	star, mark := -1, 0
	for ni < len(name) {
		switch {
		case pi < len(pattern) && pattern[pi] == '*':
			star, mark = pi, ni
			pi++
		case pi < len(pattern) && pattern[pi] == name[ni]:
			pi++
			ni++
		case star >= 0:
			pi = star + 1
			mark++
			ni = mark
		default:
			return false
		}
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}
