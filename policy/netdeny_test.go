package policy

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/config"
)

// TestDenyForwardPorts: with the network denied, forwarded ports are all
// the sandbox reaches ("nothing but P"), whichever setting denied it: the
// command line, a profile, network.enabled: false, strict mode.
func TestDenyForwardPorts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		user  string
		flags func(l *config.Layer)
		want  []int
	}{
		{"--net deny --forward-port", "", func(l *config.Layer) {
			l.Network.Mode = config.Ptr("deny")
			l.Network.ForwardPorts = []int{5432}
		}, []int{5432}},
		{"a file with the minimal profile", "sandbox:\n  profile: minimal\n  network:\n    forward_ports: [8080, 5432]\n", nil, []int{8080, 5432}},
		{"network.enabled: false and --forward-port", "sandbox:\n  network:\n    enabled: false\n", func(l *config.Layer) { l.Network.ForwardPorts = []int{5432} }, []int{5432}},
		{"strict mode", "", func(l *config.Layer) {
			l.Mode = config.Ptr("strict")
			l.Network.ForwardPorts = []int{5432}
		}, []int{5432}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.userConfig(tc.user)
			opts := Options{}
			if tc.flags != nil {
				opts.Flags = flags(tc.flags)
			}
			p, err := f.load(opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if p.Network.Mode != NetDeny || !reflect.DeepEqual(p.Network.ForwardPorts, tc.want) {
				t.Errorf("network %s, forward ports %v; want deny, %v", p.Network.Mode, p.Network.ForwardPorts, tc.want)
			}
		})
	}
}

// TestNetDeniedAdvice: a denied network says which setting denied it and
// how to allow one host: an --allow-net in place of --net deny, an
// --allow-net added over a profile or a config file, none over a
// workspace file (which may only tighten).
func TestNetDeniedAdvice(t *testing.T) {
	for _, tc := range []struct {
		name      string
		user      string
		ws        string
		flags     func(l *config.Layer)
		by, allow string
		hint      string
	}{
		{"--net deny", "", "", func(l *config.Layer) { l.Network.Mode = config.Ptr("deny") },
			"--net deny", "npm.example", "in place of --net deny"},
		{"the minimal profile", "", "", func(l *config.Layer) { l.Profile = config.Ptr("minimal") },
			"the minimal profile's network: deny", "npm.example", ""},
		{"strict mode", "", "", func(l *config.Layer) { l.Mode = config.Ptr("strict") },
			"strict mode, which turns the network off unless --allow-net or network.allow names hosts", "npm.example", ""},
		{"the workspace's .cordon.yaml", "", "sandbox:\n  network:\n    mode: deny\n", nil,
			"", "", "a file in the workspace denies the network"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.userConfig(tc.user)
			if tc.ws != "" {
				f.wsConfig(tc.ws)
			}
			opts := Options{}
			if tc.flags != nil {
				opts.Flags = flags(tc.flags)
			}
			p, err := f.load(opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			d := p.Network.Denied
			if d == nil {
				t.Fatalf("network %s: Denied is nil", p.Network.Mode)
			}
			allow, hint := d.Advice("npm.example")
			if tc.by != "" && d.By != tc.by || allow != tc.allow || !strings.HasPrefix(hint, tc.hint) {
				t.Errorf("denied by %q, advice (%q, %q); want by %q, (%q, %q...)", d.By, allow, hint, tc.by, tc.allow, tc.hint)
			}
		})
	}
}

// TestAllowForwards: the allow entries you wrote naming one port (from
// 1024) of a loopback address or localhost are forwarded; a range, a
// port below 1024, every port, another host and an entry also forwarded
// already are not.
func TestAllowForwards(t *testing.T) {
	f := newFixture(t)
	f.userConfig("sandbox:\n  network:\n    allow: [\"localhost:3000\"]\n")
	p, err := f.load(Options{Flags: flags(func(l *config.Layer) {
		l.Network.Allow = []string{"127.0.0.1:5432", "[::1]:8080", "127.0.0.0/8:9000", "127.0.0.1:80", "127.0.0.1", "example.com:4000", "127.0.0.1:5000"}
		l.Network.ForwardPorts = []int{5000}
	})})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Network.AllowForwards, []int{3000, 5432, 8080}; !reflect.DeepEqual(got, want) {
		t.Errorf("AllowForwards %v, want %v", got, want)
	}
}

// TestDecideConnectDenied: with the network denied, the violation monitor
// reports no connect to what the sandbox does reach, its name server
// (loopback port 53) and the forwarded ports; any other loopback port and
// every other address stay denied.
func TestDecideConnectDenied(t *testing.T) {
	p := &Policy{Mode: ModeStandard, Network: Network{Mode: NetDeny, ForwardPorts: []int{5432}}}
	for addr, denied := range map[string]bool{
		"127.0.0.1:53": false, "[::1]:53": false, "127.0.0.1:5432": false,
		"127.0.0.1:80": true, "10.0.0.1:53": true, "1.2.3.4:5432": true,
	} {
		if d := p.DecideConnect(netip.MustParseAddrPort(addr)); d.Denied != denied {
			t.Errorf("%s: %+v, want denied %v", addr, d, denied)
		}
	}
}
