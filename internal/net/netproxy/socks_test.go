package netproxy

import (
	"fmt"
	"strings"
	"testing"
)

func TestSOCKS5OnlyConnect(t *testing.T) {
	o := newOrigin(t, false)
	h := newHarness(t, []string{"*", fmt.Sprintf("127.0.0.1:%d", o.port())}, nil, "")
	tests := []struct {
		name string
		cmd  byte
		host string
		want byte
	}{
		{"UDP ASSOCIATE", 3, "127.0.0.1", 0x07},
		{"UDP ASSOCIATE to a name", 3, "allowed.test", 0x07},
		{"BIND", 2, "127.0.0.1", 0x07},
		{"an unknown command", 9, "127.0.0.1", 0x07},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, _, err := socksRaw(t, h.socksAddr, "", "", tt.cmd, tt.host, o.port())
			if err != nil || rep != tt.want {
				t.Errorf("command %d: reply 0x%02x, %v; want 0x%02x", tt.cmd, rep, err, tt.want)
			}
		})
	}
	if ev, d, l := h.Events(), h.Dials(), h.Lookups(); len(ev)+len(d)+len(l) != 0 {
		t.Errorf("events %+v, dials %q, lookups %q; want none", ev, d, l)
	}
}

func TestSOCKS5Malformed(t *testing.T) {
	h := newHarness(t, []string{"*"}, nil, "")
	tests := []struct {
		name, host, shown string
		port              int
	}{
		{"a NUL in the name", "a\x00b.test", `"a\x00b.test"`, 80},
		{"a space in the name", "a b.test", `"a b.test"`, 80},
		{"a CR LF in the name", "a.test\r\nX: y", `"a.test\r\nX: y"`, 80},
		{"port 0", "allowed.test", "allowed.test", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := len(h.Events())
			rep, _, err := socksRaw(t, h.socksAddr, "", "", 1, tt.host, tt.port)
			if err != nil || rep != 0x02 {
				t.Fatalf("reply 0x%02x, %v; want 0x02", rep, err)
			}
			evs := h.Events()[n:]
			if len(evs) != 1 || evs[0].Rule != RuleMalformed || evs[0].Host != tt.shown || evs[0].Allowed {
				t.Errorf("events %+v; want one %q refusal of %s", evs, RuleMalformed, tt.shown)
			}
		})
	}
	for _, r := range h.srv.Refusals() {
		if strings.ContainsAny(r.Host, "\x00\r\n") {
			t.Errorf("Refusals() holds the raw host %q", r.Host)
		}
	}
	if d, l := h.Dials(), h.Lookups(); len(d)+len(l) != 0 {
		t.Errorf("dials %q, lookups %q; want none", d, l)
	}
}

func TestSOCKS5UnresolvedName(t *testing.T) {
	h := newHarness(t, []string{"*.test"}, nil, "")
	rep, _, err := socksRaw(t, h.socksAddr, "", "", 1, "nowhere.test", 443)
	if err != nil || rep != 0x04 {
		t.Fatalf("reply 0x%02x, %v; want 0x04 (host unreachable)", rep, err)
	}
	evs := h.Events()
	if len(evs) != 1 || evs[0].Rule != RuleUnresolved || evs[0].Allowed || evs[0].Addr.IsValid() {
		t.Errorf("events %+v; want one %q", evs, RuleUnresolved)
	}
	if r := h.srv.Refusals(); len(r) != 0 {
		t.Errorf("Refusals() = %+v; want none (not a policy refusal)", r)
	}
}
