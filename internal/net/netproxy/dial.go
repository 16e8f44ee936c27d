package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/cordon-sandbox/cordon/internal/net/netrule"
)

// upstream is a connection to a checked address.
type upstream struct {
	conn   net.Conn
	target netrule.Target
	port   int
	addr   netip.Addr
}

// denial is a refused request, as its client is answered.
type denial struct {
	host   string // the target as shown (canonical, or quoted when malformed)
	port   int
	rule   string
	reason string
}

// String is the one line a refused client reads.
func (d *denial) String() string {
	return fmt.Sprintf("cordon: network: refused %s (%s): %s",
		net.JoinHostPort(d.host, strconv.Itoa(d.port)), d.rule, d.reason)
}

// errUnresolved marks a name that did not resolve.
var errUnresolved = errors.New("the name did not resolve")

// candidate is an address that passed the rules, with the decision to
// record when it is dialed.
type candidate struct {
	addr     netip.Addr
	decision netrule.Decision
}

// asked asks Config.Ask about host:port, holding the connection; false
// without Ask.
func (s *Server) asked(ctx context.Context, host string, port int) bool {
	return s.cfg.Ask != nil && s.cfg.Ask(ctx, host, port)
}

// open decides a request for host:port (host as the client wrote it,
// without brackets) and connects to a checked address: the target is
// canonicalised; an IP literal is decided by DecideAddr; a name by
// DecideName, then, only when allowed, resolved once with the Resolver,
// every address decided by DecideAddr, and only the addresses that passed
// dialed, in order, the first that connects winning. Every decision is
// an Event. Exactly one of the results is not nil: the connection, the
// refusal (already recorded in Refusals), or the error of a name that
// did not resolve (wrapping errUnresolved) or of the connects.
func (s *Server) open(ctx context.Context, proto Protocol, host string, port int) (*upstream, *denial, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	ev := Event{Protocol: proto, Port: port}
	t, err := netrule.ParseTarget(host)
	if err != nil {
		ev.Host = quoteHost(host)
		return nil, s.refuse(ev, RuleMalformed, fmt.Sprintf("the host %s cannot be used: %v", ev.Host, err), "", "", true), nil
	}
	ev.Host = t.String()
	if port < 1 || port > 65535 {
		return nil, s.refuse(ev, RuleMalformed, fmt.Sprintf("the port %d is out of range (1-65535)", port), "", "", true), nil
	}
	if t.Addr.IsValid() {
		d := s.hostCheck(s.rules.DecideAddr(t.Addr, port, ""), t.Addr, port)
		if !d.Allowed && d.Rule == netrule.RuleNoAllow && s.asked(ctx, ev.Host, port) {
			d = netrule.Decision{Allowed: true, Rule: RuleAsked, Reason: fmt.Sprintf("%s was allowed when asked", net.JoinHostPort(ev.Host, strconv.Itoa(port)))}
		}
		if !d.Allowed {
			ev.Addr = t.Addr
			return nil, s.refuseAddr(ev, d, t.Addr, port, true), nil
		}
		return s.connect(ctx, ev, t, []candidate{{t.Addr, d}})
	}

	nd := s.rules.DecideName(t, port)
	if !nd.Allowed && nd.Rule == netrule.RuleNoAllow && s.asked(ctx, t.Name, port) {
		nd = netrule.Decision{Allowed: true, Rule: RuleAsked, Reason: fmt.Sprintf("%s was allowed when asked", net.JoinHostPort(t.Name, strconv.Itoa(port)))}
	}
	if !nd.Allowed {
		allow := net.JoinHostPort(t.Name, strconv.Itoa(port))
		if s.isEntry(s.rules.Deny, nd.Rule) {
			allow = "" // a deny entry refused it: no flag allows it
		}
		return nil, s.refuse(ev, nd.Rule, nd.Reason, allow, "", true), nil
	}
	addrs, err := s.lookup(ctx, t.Name)
	if err != nil {
		ev.Rule = RuleUnresolved
		ev.Reason = err.Error()
		s.record(ev)
		return nil, nil, err
	}
	var pass []candidate
	var first *netrule.Decision
	var firstAddr netip.Addr
	for _, a := range addrs {
		ad := s.hostCheck(s.rules.DecideAddr(a, port, t.Name), a, port)
		if !ad.Allowed {
			e := ev
			e.Addr, e.Rule, e.Reason = a, ad.Rule, ad.Reason
			s.record(e)
			if first == nil {
				first, firstAddr = &ad, a
			}
			continue
		}
		// The name's entry decided, unless an allow IP/CIDR entry had to
		// (a special address the user allowed by address).
		d := nd
		if s.isEntry(s.rules.Allow, ad.Rule) {
			d = ad
		}
		pass = append(pass, candidate{a, d})
	}
	if len(pass) == 0 {
		// Each refused address is already an Event.
		return nil, s.refuseAddr(ev, *first, firstAddr, port, false), nil
	}
	return s.connect(ctx, ev, t, pass)
}

// hostCheck refuses, when d allowed it, an address of the host the proxy
// runs on (Config.HostAddrs) unless d's rule is an allow IP or CIDR entry
// naming it.
func (s *Server) hostCheck(d netrule.Decision, addr netip.Addr, port int) netrule.Decision {
	addr = addr.WithZone("").Unmap()
	if !d.Allowed || !s.hostAddr[addr] {
		return d
	}
	for _, r := range s.rules.Allow {
		if r.Raw == d.Rule && r.IsAddr() {
			return d
		}
	}
	entry := net.JoinHostPort(addr.String(), strconv.Itoa(port))
	return netrule.Decision{Rule: RuleHostAddress, Reason: fmt.Sprintf(
		"%s is an address of the host cordon runs on, which reaches its services bound to every interface; refused unless an allow entry names it by address: add --allow-net %s to allow it explicitly", addr, entry)}
}

// refuse records a refusal (its Event when event is set, and its entry in
// Refusals, with the --allow-net entry that would allow it, or a hint
// saying why none would: hint, or one for the rule) and returns it.
func (s *Server) refuse(ev Event, rule, reason, allow, hint string, event bool) *denial {
	if event {
		ev.Rule, ev.Reason = rule, reason
		s.record(ev)
	}
	r := Refused{Host: ev.Host, Port: ev.Port, Rule: rule, Allow: allow, Hint: hint}
	if allow == "" && hint == "" {
		switch {
		case s.isEntry(s.rules.Deny, rule):
			r.Hint = hintDeny
		case rule == RuleMalformed || rule == netrule.RuleInvalid:
			r.Hint = hintMalformed
		case rule == RuleSNIMismatch:
			r.Hint = hintSNI
		case rule == RuleBadHello:
			r.Hint = hintBadHello
		}
	}
	s.addRefusal(r)
	return &denial{host: ev.Host, port: ev.Port, rule: rule, reason: reason}
}

// refuseAddr refuses a connection to addr on port that d refused (the
// IP literal asked for, or the first address of a name), recording its
// Event when event is set: a public address no entry allows gets the
// --allow-net entry that would; a special one (loopback, metadata, ...)
// the hint that only an entry naming the address would, never a flag to
// paste; a deny entry's refusal the deny hint (refuse's).
func (s *Server) refuseAddr(ev Event, d netrule.Decision, addr netip.Addr, port int, event bool) *denial {
	entry := net.JoinHostPort(addr.WithZone("").Unmap().String(), strconv.Itoa(port))
	switch {
	case s.isEntry(s.rules.Deny, d.Rule) || d.Rule == netrule.RuleInvalid:
		return s.refuse(ev, d.Rule, d.Reason, "", "", event)
	case d.Rule == netrule.RuleNoAllow:
		return s.refuse(ev, d.Rule, d.Reason, entry, "", event)
	}
	hint := fmt.Sprintf("only an --allow-net entry naming its address (%s) or a range holding it would allow it", entry)
	return s.refuse(ev, d.Rule, d.Reason, "", hint, event)
}

// isEntry says whether rule is the Raw text of one of rules.
func (s *Server) isEntry(rules []netrule.Rule, rule string) bool {
	for _, r := range rules {
		if r.Raw == rule {
			return true
		}
	}
	return false
}

// lookup resolves name once, bounded by the dial timeout, and returns its
// distinct addresses in the resolver's order: from the host's hosts file
// first when the resolver is the host's own (Go's skips that file for an
// absolute name), else asking for the absolute name (absolute), so that
// no resolv.conf search domain turns the name the rules decided on into
// another host ("wiki" into a denied wiki.corp.example).
func (s *Server) lookup(ctx context.Context, name string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	var addrs []netip.Addr
	var err error
	if s.hosts != nil {
		addrs = s.hosts.lookup(name)
	}
	if len(addrs) == 0 {
		addrs, err = s.resolver.LookupNetIP(ctx, "ip", absolute(name))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errUnresolved, name, err)
	}
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, a := range addrs {
		// Go's resolver may answer an IPv4 address in its IPv4-mapped
		// IPv6 form: the same destination, decided and shown as IPv4.
		a = a.Unmap()
		if a.IsValid() && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s has no address", errUnresolved, name)
	}
	return out, nil
}

// connect dials the candidates in order and returns the first connection;
// each address dialed is an allowed Event.
func (s *Server) connect(ctx context.Context, ev Event, t netrule.Target, cands []candidate) (*upstream, *denial, error) {
	var errs []error
	for _, c := range cands {
		e := ev
		e.Addr, e.Allowed, e.Rule, e.Reason = c.addr, true, c.decision.Rule, c.decision.Reason
		s.record(e)
		address := netip.AddrPortFrom(c.addr, uint16(ev.Port)).String()
		dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
		conn, err := s.dial(dctx, "tcp", address)
		cancel()
		if err == nil {
			return &upstream{conn: conn, target: t, port: ev.Port, addr: c.addr}, nil, nil
		}
		errs = append(errs, err)
	}
	return nil, nil, fmt.Errorf("connecting to %s: %w",
		net.JoinHostPort(t.String(), strconv.Itoa(ev.Port)), errors.Join(errs...))
}

// absolute is the name the resolver is asked for: the canonical name with
// the root's dot, which no search domain extends. "localhost" stays as it
// is: Go's resolver finds a single-label name of /etc/hosts only without
// the dot, and RFC 6761 keeps localhost out of DNS (its addresses are
// loopback ones, which the rules refuse unless allowed by address).
func absolute(name string) string {
	if name == "localhost" {
		return name
	}
	return name + "."
}

// maxShownHost bounds the bytes of a malformed host that its Event, its
// refusal and its answer show (a request line may be a megabyte long).
const maxShownHost = 128

// quoteHost shows a host that could not be parsed: Go-quoted (no control
// byte reaches a terminal or the audit log), cut after maxShownHost bytes.
func quoteHost(host string) string {
	if len(host) <= maxShownHost {
		return strconv.QuoteToASCII(host)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.QuoteToASCII(host[:maxShownHost]), len(host))
}
