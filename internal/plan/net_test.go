package plan

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/policy"
)

// TestBwrapNet: under bubblewrap, the loopback and filtered modes get a
// network namespace of their own, the helper's listeners (the proxies at
// fixed inside ports moved off forwarded ports, and the forwarded ports),
// and, filtered, the proxy variables (a user's --env wins) and ssh's
// ProxyCommand; open with deny entries is filtered with every host
// allowed; deny and open serve nothing.
func TestBwrapNet(t *testing.T) {
	for _, tc := range []struct {
		name       string
		net        policy.Network
		set        map[string]string
		unshare    bool
		mode       policy.NetMode // "" for no Net
		allow      []string
		listeners  []helperspec.Listener
		httpProxy  string // HTTP_PROXY, "" for none
		allProxy   string
		landlockNo bool // Landlock's DenyNetwork
	}{
		{name: "deny", net: policy.Network{Mode: policy.NetDeny}, unshare: true, landlockNo: true, mode: policy.NetDeny,
			listeners: []helperspec.Listener{{Kind: "dns", Port: 53}}},
		{name: "deny, forwarded", net: policy.Network{Mode: policy.NetDeny, ForwardPorts: []int{5432}}, unshare: true, landlockNo: true, mode: policy.NetDeny,
			listeners: []helperspec.Listener{{Kind: "forward", Port: 5432}, {Kind: "dns", Port: 53}}},
		{name: "open", net: policy.Network{Mode: policy.NetOpen}},
		{name: "open with a forwarded port", net: policy.Network{Mode: policy.NetOpen, ForwardPorts: []int{5432}}},
		{name: "loopback", net: policy.Network{Mode: policy.NetLoopback}, unshare: true, mode: policy.NetLoopback},
		{name: "loopback, forwarded", net: policy.Network{Mode: policy.NetLoopback, ForwardPorts: []int{5432, 50051}}, unshare: true, mode: policy.NetLoopback,
			listeners: []helperspec.Listener{{Kind: "forward", Port: 5432}, {Kind: "forward", Port: 50051}}},
		{name: "filtered", net: policy.Network{Mode: policy.NetFiltered, Allow: []string{"example.com:443"}}, unshare: true, mode: policy.NetFiltered,
			allow:     []string{"example.com:443"},
			listeners: []helperspec.Listener{{Kind: "http", Port: 3128}, {Kind: "socks5", Port: 1081}},
			httpProxy: "http://127.0.0.1:3128", allProxy: "socks5h://127.0.0.1:1081"},
		{name: "filtered, ports taken by forwards", net: policy.Network{Mode: policy.NetFiltered, Allow: []string{"*"}, ForwardPorts: []int{3128, 3129, 1081}}, unshare: true, mode: policy.NetFiltered,
			allow:     []string{"*"},
			listeners: []helperspec.Listener{{Kind: "http", Port: 3130}, {Kind: "socks5", Port: 1082}, {Kind: "forward", Port: 3128}, {Kind: "forward", Port: 3129}, {Kind: "forward", Port: 1081}},
			httpProxy: "http://127.0.0.1:3130", allProxy: "socks5h://127.0.0.1:1082"},
		{name: "open with deny entries", net: policy.Network{Mode: policy.NetOpen, Deny: []string{"169.254.169.254"}}, unshare: true, mode: policy.NetFiltered,
			allow:     []string{"*"},
			listeners: []helperspec.Listener{{Kind: "http", Port: 3128}, {Kind: "socks5", Port: 1081}},
			httpProxy: "http://127.0.0.1:3128", allProxy: "socks5h://127.0.0.1:1081"},
		{name: "filtered, the user's proxy variables win", net: policy.Network{Mode: policy.NetFiltered, Allow: []string{"*"}}, unshare: true, mode: policy.NetFiltered,
			set:       map[string]string{"HTTP_PROXY": "http://mine:1", "NO_PROXY": ""},
			allow:     []string{"*"},
			listeners: []helperspec.Listener{{Kind: "http", Port: 3128}, {Kind: "socks5", Port: 1081}},
			httpProxy: "http://mine:1", allProxy: "socks5h://127.0.0.1:1081"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, opts := testPolicy(t)
			p.Backend = backend.Bwrap
			p.Network = tc.net
			for k, v := range tc.set {
				p.Env.Set[k] = v
			}
			pl, err := Build(p, []string{"true"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(pl.Argv, "--unshare-net"); got != tc.unshare {
				t.Errorf("--unshare-net: %v, want %v", got, tc.unshare)
			}
			if pl.Spec.Landlock.DenyNetwork != tc.landlockNo {
				t.Errorf("Landlock DenyNetwork %v, want %v", pl.Spec.Landlock.DenyNetwork, tc.landlockNo)
			}
			// A network namespace does not confine AF_VSOCK (the
			// hypervisor's host) and other families: seccomp refuses them
			// whenever the network is not open.
			if got := pl.Spec.Seccomp.DenyOtherFamilies; got != tc.unshare {
				t.Errorf("seccomp DenyOtherFamilies %v, want %v", got, tc.unshare)
			}
			if tc.mode == "" {
				if pl.Net != nil || pl.Spec.Net != nil {
					t.Fatalf("Net %+v, spec %+v: want none", pl.Net, pl.Spec.Net)
				}
				return
			}
			if pl.Net == nil || pl.Net.Mode != tc.mode || pl.Net.HostListen {
				t.Fatalf("Net %+v: want mode %s, listening inside", pl.Net, tc.mode)
			}
			if !slices.Equal(pl.Net.Allow, tc.allow) || !slices.Equal(pl.Net.Deny, tc.net.Deny) {
				t.Errorf("rules allow %q deny %q, want %q %q", pl.Net.Allow, pl.Net.Deny, tc.allow, tc.net.Deny)
			}
			var got []helperspec.Listener
			if pl.Spec.Net != nil {
				got = pl.Spec.Net.Listeners
			}
			if !slices.Equal(got, tc.listeners) {
				t.Errorf("listeners %v, want %v", got, tc.listeners)
			}
			v, ok := envValue(pl.Env, "HTTP_PROXY")
			if v != tc.httpProxy || ok != (tc.httpProxy != "") {
				t.Errorf("HTTP_PROXY=%q (%v), want %q", v, ok, tc.httpProxy)
			}
			if v, _ := envValue(pl.Env, "all_proxy"); v != tc.allProxy {
				t.Errorf("all_proxy=%q, want %q", v, tc.allProxy)
			}
			if tc.httpProxy == "" {
				return
			}
			wantNo := noProxy
			if v, ok := tc.set["NO_PROXY"]; ok {
				wantNo = v
			}
			if v, _ := envValue(pl.Env, "NO_PROXY"); v != wantNo {
				t.Errorf("NO_PROXY=%q, want %q", v, wantNo)
			}
			if v, _ := envValue(pl.Env, "https_proxy"); v != "http://127.0.0.1:"+strconv.Itoa(pl.Net.HTTPPort) {
				t.Errorf("https_proxy=%q", v)
			}
			if v, _ := envValue(pl.Env, "GIT_SSH_COMMAND"); v != "ssh -o ProxyCommand='"+helperspec.HelperPath+" __connect %h %p'" {
				t.Errorf("GIT_SSH_COMMAND=%q", v)
			}
			if !slices.IsSorted(pl.Env) {
				t.Errorf("env not sorted: %q", pl.Env)
			}
		})
	}
}

// TestLandlockNet: on the Landlock-only backend, filtered mode makes the
// launcher listen on the host (with a token) and confines TCP connect to
// the forwarded ports (the launcher adds the proxy's) and sockets to
// streams, with a degraded line saying what that cannot stop; loopback
// mode and a kernel below Landlock ABI 4 are refused; strict mode
// refuses it all.
func TestLandlockNet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		net    policy.Network
		abi    int
		strict bool
		err    string
	}{
		{name: "filtered", net: policy.Network{Mode: policy.NetFiltered, Allow: []string{"*:443"}, ForwardPorts: []int{5432}}, abi: 6},
		{name: "open with deny entries", net: policy.Network{Mode: policy.NetOpen, Deny: []string{"10.0.0.0/8"}}, abi: 4},
		{name: "abi 3", net: policy.Network{Mode: policy.NetFiltered, Allow: []string{"*:443"}}, abi: 3, err: "needs Landlock ABI 4"},
		{name: "loopback", net: policy.Network{Mode: policy.NetLoopback}, abi: 6, err: "--net loopback needs a network namespace"},
		{name: "strict", net: policy.Network{Mode: policy.NetFiltered, Allow: []string{"*:443"}}, abi: 6, strict: true, err: "strict mode refuses"},
		{name: "privileged forward", net: policy.Network{Mode: policy.NetFiltered, Allow: []string{"*:443"}, ForwardPorts: []int{80}}, abi: 6, err: "from 1024 to 65535"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, opts := testPolicy(t)
			p.Backend = backend.Landlock
			p.Network = tc.net
			if tc.strict {
				p.Mode = policy.ModeStrict
			}
			opts.Host.LandlockABI = tc.abi
			pl, err := Build(p, []string{"true"}, opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := pl.Net
			if n == nil || !n.Filtered() || !n.HostListen || n.HTTPPort != 0 {
				t.Fatalf("Net %+v: want filtered, listening on the host", n)
			}
			if pl.Spec.Net != nil {
				t.Errorf("the helper must not listen without a network namespace: %+v", pl.Spec.Net)
			}
			r := pl.Spec.Landlock
			if !r.DenyNetwork || !slices.Equal(r.ConnectTCP, tc.net.ForwardPorts) || len(r.BindTCP) != 0 {
				t.Errorf("Landlock deny %v connect %v bind %v, want deny, connect %v", r.DenyNetwork, r.ConnectTCP, r.BindTCP, tc.net.ForwardPorts)
			}
			if s := pl.Spec.Seccomp; !s.StreamOnly || s.DenyNetwork || !s.DenyOtherFamilies {
				t.Errorf("seccomp %+v: want stream sockets only, and no other family", s)
			}
			if !slices.Contains(pl.Degraded, landlockNetGap) {
				t.Errorf("degraded %q: want the filtered network's gap", pl.Degraded)
			}
			if _, ok := envValue(pl.Env, "HTTP_PROXY"); ok {
				t.Errorf("the plan cannot know the proxy's port: HTTP_PROXY is the launcher's")
			}
			n.HTTPPort, n.SOCKSPort, n.Token = 40000, 40001, "tok"
			env := n.MergeEnv(pl.Env)
			if v, _ := envValue(env, "HTTPS_PROXY"); v != "http://cordon:tok@127.0.0.1:40000" {
				t.Errorf("HTTPS_PROXY=%q", v)
			}
			if v, _ := envValue(env, "ALL_PROXY"); v != "socks5h://cordon:tok@127.0.0.1:40001" {
				t.Errorf("ALL_PROXY=%q", v)
			}
			if v, _ := envValue(env, "GIT_SSH_COMMAND"); !strings.Contains(v, opts.Host.Helper+" __connect %h %p") || !slices.Contains(r.ReadOnly, opts.Host.Helper) {
				t.Errorf("GIT_SSH_COMMAND=%q, Landlock read-only %q: want cordon's binary as ProxyCommand, executable", v, r.ReadOnly)
			}
		})
	}
}

// TestNetDescribe: --explain says where the proxies are and what is
// forwarded.
func TestNetDescribe(t *testing.T) {
	p, opts := testPolicy(t)
	p.Backend = backend.Bwrap
	p.Network = policy.Network{Mode: policy.NetFiltered, Allow: []string{"example.com"}, Deny: []string{"evil.example.com"}, ForwardPorts: []int{5432}}
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	d := strings.Join(pl.Net.Describe(), "\n")
	for _, want := range []string{"127.0.0.1:3128", "127.0.0.1:1081", "allow: example.com; deny: evil.example.com", "forwarded port 5432"} {
		if !strings.Contains(d, want) {
			t.Errorf("Describe lacks %q:\n%s", want, d)
		}
	}
}
