package plan

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// TestDenyResolvConf: a denied network's sandbox gets cordon's resolv.conf
// (naming only 127.0.0.1, where its name server answers) bound where the
// host's /etc/resolv.conf leads; npm is told not to retry (unless the user
// says otherwise); and --explain says what the name server does. Another
// mode keeps the host's.
func TestDenyResolvConf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		net      policy.Network
		set      map[string]string
		bind     bool
		retries  string
		explains string
	}{
		{"deny", policy.Network{Mode: policy.NetDeny}, nil, true, "0", "name server at 127.0.0.1:53 inside"},
		{"deny, npm's retries the user's", policy.Network{Mode: policy.NetDeny}, map[string]string{"npm_config_fetch_retries": "3"}, true, "3", ""},
		{"deny, forwarded", policy.Network{Mode: policy.NetDeny, ForwardPorts: []int{5432}}, nil, true, "0", "nothing reachable but the forwarded ports"},
		{"loopback", policy.Network{Mode: policy.NetLoopback}, nil, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, opts := testPolicy(t)
			p.Network = tc.net
			for k, v := range tc.set {
				p.Env.Set[k] = v
			}
			opts.Host.ResolvConf = "/run/systemd/resolve/stub-resolv.conf"
			pl, err := Build(p, []string{"true"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.Index(pl.Argv, opts.Host.ResolvConf)
			bound := i >= 2 && pl.Argv[i-2] == "--ro-bind" && pl.Argv[i-1] == filepath.Join(opts.StateDir, denyResolvConf)
			if bound != tc.bind {
				t.Errorf("resolv.conf bound %v, want %v: %q", bound, tc.bind, pl.Argv)
			}
			if v, _ := envValue(pl.Env, "npm_config_fetch_retries"); v != tc.retries {
				t.Errorf("npm_config_fetch_retries=%q, want %q", v, tc.retries)
			}
			if d := strings.Join(pl.Net.Describe(), "\n"); !strings.Contains(d, tc.explains) {
				t.Errorf("explain %q, want it to say %q", d, tc.explains)
			}
		})
	}
	if !strings.Contains(denyResolvConfText, "\nnameserver 127.0.0.1\n") || strings.Count(denyResolvConfText, "nameserver") != 1 {
		t.Errorf("resolv.conf %q", denyResolvConfText)
	}
}
