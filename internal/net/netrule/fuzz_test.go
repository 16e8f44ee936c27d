package netrule

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// The seed corpus of the three fuzzers is committed under
// testdata/fuzz/<FuzzName>/; the f.Add seeds below are the shortest
// reminders of each form.

// FuzzParse: Parse never panics; an entry it accepts is one host pattern
// or one address range, canonical (re-parsing the canonical form gives
// the same rule), with a port in range; an entry with NUL, CR or LF is
// always refused; an error is one line.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"example.com", "*.example.com:443", "*:443", "metadata.google.*", "api-*.x.y",
		"10.0.0.0/8:5432", "[fd00::/8]:443", "::1", "127.1", "0x7f.1:80", "bücher.de", "10.0.0.1/8", "x:0", "a\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := Parse(raw)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("Parse(%q) error %q is not one line", raw, err)
			}
			return
		}
		if strings.ContainsAny(raw, "\x00\r\n") {
			t.Fatalf("Parse(%q) accepted NUL, CR or LF: %+v", raw, r)
		}
		if r.Raw != raw || r.IsAddr() == (r.Host != "") || r.Port < 0 || r.Port > 65535 {
			t.Fatalf("Parse(%q) = %+v: malformed rule", raw, r)
		}
		port := ""
		if r.Port != 0 {
			port = ":" + strconv.Itoa(r.Port)
		}
		var canon string
		if r.IsAddr() {
			if r.Prefix != r.Prefix.Masked() || r.Prefix.Addr().Is4In6() || r.Prefix.Addr().Zone() != "" {
				t.Fatalf("Parse(%q) = %+v: prefix not canonical", raw, r)
			}
			canon = r.Prefix.String()
			if r.Prefix.Addr().Is6() {
				canon = "[" + canon + "]"
			}
		} else {
			if r.Host != strings.ToLower(r.Host) || strings.HasSuffix(r.Host, ".") || len(r.Host) > maxName {
				t.Fatalf("Parse(%q) = %+v: host pattern not canonical", raw, r)
			}
			canon = r.Host
		}
		again, err := Parse(canon + port)
		if err != nil || again.Host != r.Host || again.Prefix != r.Prefix || again.Port != r.Port {
			t.Fatalf("Parse(%q) = %+v, but its canonical form %q parses to %+v, %v", raw, r, canon+port, again, err)
		}
	})
}

// FuzzParseTarget: ParseTarget never panics; a target it accepts is a
// name or an address, and re-parses to itself (also in brackets, for an
// IPv6 address); NUL, CR, LF, spaces, '@', '/' and '\' are always
// refused; a name is a valid DNS name.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"example.com", "Example.COM.", "bücher.de", "127.1", "2130706433", "0x7f.1", "0177.0.0.1",
		"[::ffff:7f00:1]", "fe80::1%eth0", "a\r\nb", "a@b", "xn--bcher-kva.de", "ｅｘａｍｐｌｅ．ｃｏｍ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		tg, err := ParseTarget(host)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("ParseTarget(%q) error %q is not one line", host, err)
			}
			return
		}
		if strings.ContainsAny(host, "\x00\r\n \t@/\\") {
			t.Fatalf("ParseTarget(%q) = %+v, want refused", host, tg)
		}
		if (tg.Name == "") == (!tg.Addr.IsValid()) {
			t.Fatalf("ParseTarget(%q) = %+v: want exactly a name or an address", host, tg)
		}
		if tg.Addr.IsValid() && (tg.Addr.Is4In6() || tg.Addr.Zone() != "") {
			t.Fatalf("ParseTarget(%q) = %+v: address not canonical", host, tg)
		}
		if tg.Name != "" {
			if len(tg.Name) > maxName || strings.HasSuffix(tg.Name, ".") {
				t.Fatalf("ParseTarget(%q) = %+v: name too long or with a trailing dot", host, tg)
			}
			for _, l := range strings.Split(tg.Name, ".") {
				if err := checkLabel(l, false); err != nil {
					t.Fatalf("ParseTarget(%q) = %+v: %v", host, tg, err)
				}
			}
		}
		again, err := ParseTarget(tg.String())
		if err != nil || again != tg {
			t.Fatalf("ParseTarget(%q) = %+v, but ParseTarget(%q) = %+v, %v", host, tg, tg.String(), again, err)
		}
		if tg.Addr.Is6() {
			if b, err := ParseTarget("[" + tg.String() + "]"); err != nil || b != tg {
				t.Fatalf("ParseTarget([%s]) = %+v, %v, want %+v", tg, b, err, tg)
			}
		}
	})
}

// FuzzDecide: whatever the allow entries (allow is split at ','), a target that a deny entry
// names (exactly, with its port, with "*" for its port, by a parent
// wildcard, by a CIDR around its address) is refused by that entry; an
// address of an allowed name that is special is refused unless an
// IP/CIDR entry allows it; every decision has a Rule and a Reason.
func FuzzDecide(f *testing.F) {
	f.Add("*,example.com:443", "example.com", uint16(443), []byte{127, 0, 0, 1})
	f.Add("*.example.com", "a.example.com", uint16(443), []byte{169, 254, 169, 254})
	f.Add("10.0.0.0/8", "10.1.2.3", uint16(5432), []byte{10, 1, 2, 3})
	f.Add("*:443", "0x7f.1", uint16(443), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1})
	f.Add("localhost", "localhost", uint16(5432), []byte{0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 127, 0, 0, 1})
	f.Fuzz(func(t *testing.T, allow, host string, port16 uint16, raw []byte) {
		port := int(port16)
		var allows []string // "a,b" is two allow entries, "" none
		for _, e := range strings.Split(allow, ",") {
			if e != "" {
				allows = append(allows, e)
			}
		}
		tg, err := ParseTarget(host)
		if err != nil {
			return
		}
		check := func(s *Set, d Decision, what string) {
			if d.Rule == "" || d.Reason == "" || strings.ContainsAny(d.Reason, "\r\n") {
				t.Fatalf("%s: decision %+v lacks a one-line Rule and Reason (allow %q deny %+v)", what, d, allow, s.Deny)
			}
		}
		for _, deny := range denyForms(tg, port) {
			s, err := Compile(allows, []string{deny})
			if err != nil {
				continue // a bad allow entry, or one the deny entry covers
			}
			d := s.DecideName(tg, port)
			check(s, d, "DecideName")
			if d.Allowed {
				t.Fatalf("deny %q, allow %q: DecideName(%+v, %d) = %+v, want refused", deny, allow, tg, port, d)
			}
			if port >= 1 && d.Rule != deny {
				t.Fatalf("deny %q, allow %q: DecideName(%+v, %d) = %+v, want refused by the deny entry", deny, allow, tg, port, d)
			}
		}
		a, ok := netip.AddrFromSlice(raw)
		if !ok {
			return
		}
		name := tg.Name
		if name == "" {
			name = "resolved.test"
		}
		bits := int(port16) % (a.BitLen() + 1)
		cidr := netip.PrefixFrom(a.Unmap(), min(bits, a.Unmap().BitLen())).Masked()
		cidrEntry := cidr.String()
		if cidr.Addr().Is6() {
			cidrEntry = "[" + cidrEntry + "]"
		}
		if s, err := Compile(allows, []string{cidrEntry}); err == nil {
			for _, n := range []string{name, ""} {
				d := s.DecideAddr(a, port, n)
				check(s, d, "DecideAddr")
				if d.Allowed {
					t.Fatalf("deny %q, allow %q: DecideAddr(%s, %d, %q) = %+v, want refused", cidrEntry, allow, a, port, n, d)
				}
			}
		}
		s, err := Compile(allows, nil)
		if err != nil {
			return
		}
		d := s.DecideAddr(a, port, name)
		check(s, d, "DecideAddr")
		if _, _, _, special := classify(a); special && d.Allowed {
			named := false
			for _, r := range s.Allow {
				named = named || r.IsAddr() && r.Prefix.Contains(a.WithZone("").Unmap())
			}
			if !named {
				t.Fatalf("allow %q: DecideAddr(%s, %d, %q) = %+v: a special address passed without an IP/CIDR entry naming it", allow, a, port, name, d)
			}
		}
	})
}

// denyForms are deny entries that each match tg on port.
func denyForms(tg Target, port int) []string {
	host := tg.String()
	if tg.Addr.Is6() {
		host = "[" + host + "]"
	}
	forms := []string{host, host + ":*", "*", "*:" + strconv.Itoa(port)}
	if port >= 1 && port <= 65535 {
		forms = append(forms, host+":"+strconv.Itoa(port))
	}
	if labels := strings.Split(tg.Name, "."); len(labels) >= 2 {
		forms = append(forms, "*."+strings.Join(labels[1:], "."))
		if l := labels[0]; len(l) > 1 {
			forms = append(forms, l[:1]+"*."+strings.Join(labels[1:], "."))
		}
		forms = append(forms, strings.Join(labels[:len(labels)-1], ".")+".*")
	}
	return forms
}
