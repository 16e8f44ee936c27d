package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/enforce/landlock"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
	"github.com/cordon-sandbox/cordon/policy"
)

// Net is the network part of a plan in the loopback and filtered modes,
// and in deny mode with a network namespace (its name server) or
// forwarded ports: what the launcher serves on the host for the run. Under bubblewrap the
// helper creates the listeners inside the sandbox's network namespace
// (Spec.Net) and hands them over; on the Landlock-only backend the
// launcher listens on the host's 127.0.0.1 itself (HostListen).
type Net struct {
	// Mode is loopback, filtered or deny.
	Mode policy.NetMode `json:"mode"`
	// DNS says that the network is denied and the sandbox has a network
	// namespace of its own: its resolv.conf names 127.0.0.1, where cordon
	// answers every lookup at once with "not found" (dnsstub) and then
	// names each host looked up, with Denied's advice.
	DNS bool `json:"dns,omitempty"`
	// Denied is what denied the network (deny mode).
	Denied *policy.NetDenied `json:"-"`
	// Allow and Deny are the rules of the filtering proxy (netrule.Compile).
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// PrivateNames may resolve to a private address
	// (policy.Network.PrivateNames, netrule.Set.PrivateNames).
	PrivateNames []string `json:"private_names,omitempty"`
	// ForwardPorts are host loopback TCP ports reachable from the command
	// at the same number; the launcher checks, before the run, that
	// something listens on each but those of AllowForwards.
	ForwardPorts []int `json:"forward_ports,omitempty"`
	// AllowForwards are the ports of ForwardPorts that an allow entry
	// naming a loopback address forwards (policy.Network.AllowForwards).
	AllowForwards []int `json:"allow_forwards,omitempty"`
	// HTTPPort and SOCKSPort are the ports on the command's 127.0.0.1 where
	// it reaches the HTTP and SOCKS5 proxies (filtered mode): fixed inside
	// a network namespace, chosen by the launcher with HostListen.
	HTTPPort  int `json:"http_port,omitempty"`
	SOCKSPort int `json:"socks_port,omitempty"`
	// HostListen makes the launcher listen for the proxies on the host's
	// 127.0.0.1 (ephemeral ports) with a per-run Token, set HTTPPort and
	// SOCKSPort, allow both ports (in Spec.Landlock.ConnectTCP on the
	// Landlock-only backend, in the profile with Seatbelt) and add the
	// proxy variables (Env) to the command's environment.
	HostListen bool `json:"host_listen,omitempty"`
	// Seatbelt says that the plan is macOS's Seatbelt: with HostListen,
	// the profile (SeatbeltWithProxy), not Landlock, confines the
	// command's connections to the proxy's ports on the loopback.
	Seatbelt bool `json:"seatbelt,omitempty"`
	// Token is the per-run secret the proxies require with HostListen
	// (set by the launcher; never printed).
	Token string `json:"-"`
	// Helper is cordon's binary as the command sees it, for ssh's
	// ProxyCommand (helperspec.ConnectCommand); "" for none.
	Helper string `json:"helper,omitempty"`
	// Keep are the variables of Env that the policy sets or passes itself
	// (--env): the user's value wins.
	Keep []string `json:"keep,omitempty"`
	// Credentials are the policy's credentials (filtered mode): the
	// launcher resolves their secrets on the host, sets their variables
	// to per-run placeholders, and the proxy swaps them (see
	// internal/net/credential).
	Credentials []policy.Credential `json:"credentials,omitempty"`
	// CABundle is where, inside, the helper writes the trust bundle of a
	// run with credentials (the host's roots and the run's CA) that
	// CAVars name; "" without credentials.
	CABundle string `json:"ca_bundle,omitempty"`
}

// MustListen are the forwarded ports the launcher checks something
// listens on before the run: all but AllowForwards.
func (n *Net) MustListen() []int {
	return slices.DeleteFunc(slices.Clone(n.ForwardPorts), func(p int) bool { return slices.Contains(n.AllowForwards, p) })
}

// NpmTokenVar is the variable through which npm reads the _authToken of
// the registry at host:port (port 0 or 443: none written), as a
// credential's placeholder (Credential.Npmrc).
func NpmTokenVar(host string, port int) string {
	if port != 0 && port != 443 {
		host += ":" + strconv.Itoa(port)
	}
	return "npm_config_//" + host + "/:_authToken"
}

// CredentialVars are the variables the launcher sets to a credential's
// placeholder: its Env, and with Npmrc npm's token variables.
func CredentialVars(c policy.Credential) []string {
	out := slices.Clone(c.Env)
	if c.Npmrc {
		for _, h := range c.Hosts {
			if r, err := netrule.Parse(h); err == nil && !strings.Contains(r.Host, "*") {
				out = append(out, NpmTokenVar(r.Host, r.Port))
			}
		}
	}
	return out
}

// CredentialGitEnv is the git configuration, as GIT_CONFIG_COUNT,
// GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n variables, that makes git
// answer HTTPS authentication to each host of a credential with a
// GitUsername with that name and the placeholder its first variable
// holds: a credential helper, a shell line of cordon's own (the name and
// the variable are checked plain words), for each such host.
func CredentialGitEnv(creds []policy.Credential) []string {
	var out []string
	n := 0
	for _, c := range creds {
		if c.GitUsername == "" || len(c.Env) == 0 {
			continue
		}
		helper := fmt.Sprintf(`!f() { test "$1" = get || exit 0; echo username=%s; echo "password=$%s"; }; f`, c.GitUsername, c.Env[0])
		for _, h := range c.Hosts {
			r, err := netrule.Parse(h)
			if err != nil || strings.Contains(r.Host, "*") {
				continue
			}
			host := r.Host
			if r.Port != 0 && r.Port != 443 {
				host += ":" + strconv.Itoa(r.Port)
			}
			out = append(out, fmt.Sprintf("GIT_CONFIG_KEY_%d=credential.https://%s.helper", n, host), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, helper))
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return append(out, "GIT_CONFIG_COUNT="+strconv.Itoa(n))
}

// CABundleName is the file name of Net.CABundle in the sandbox's
// private temporary directory.
const CABundleName = "cordon-credentials-ca.pem"

// CAVars are the variables that point the command's TLS clients at
// Net.CABundle: OpenSSL and Go (SSL_CERT_FILE), Node, Python's requests,
// curl, git, pip, and npm (whose cafile, which Debian's global npmrc
// sets, replaces Node's roots and NODE_EXTRA_CA_CERTS with it).
var CAVars = []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT", "npm_config_cafile"}

// Filtered reports whether the run is served the proxies.
func (n *Net) Filtered() bool { return n != nil && n.Mode == policy.NetFiltered }

// Inside ports of the proxies in a network namespace: unprivileged (the
// helper has no CAP_NET_BIND_SERVICE) and moved up past forwarded ports.
const (
	insideHTTPPort  = 3128
	insideSOCKSPort = 1081
)

// npmRetries is npm's setting of how often it retries a failed request.
const npmRetries = "npm_config_fetch_retries"

// noProxy is NO_PROXY inside: the sandbox's own loopback is direct.
const noProxy = "localhost,127.0.0.1,::1"

// proxyVars are the variables that name the proxies, by the proxy.
var proxyVars = []struct{ name, kind string }{
	{"HTTP_PROXY", "http"}, {"http_proxy", "http"},
	{"HTTPS_PROXY", "http"}, {"https_proxy", "http"},
	{"ALL_PROXY", "socks5"}, {"all_proxy", "socks5"},
	{"NO_PROXY", ""}, {"no_proxy", ""},
}

// Env is what the command's environment gets in filtered mode: the proxy
// variables (with the token as userinfo under HostListen), NO_PROXY and
// GIT_SSH_COMMAND with cordon's ProxyCommand; in deny mode, npm told not
// to retry; but the variables in Keep. It is empty in loopback mode.
func (n *Net) Env() []string {
	if n != nil && n.Mode == policy.NetDeny && !slices.Contains(n.Keep, npmRetries) {
		// npm retries a failed request for 70 s (its fetch-retries
		// and back-off), lookups failing at once or not: on a denied
		// network no retry can succeed.
		return []string{npmRetries + "=0"}
	}
	if !n.Filtered() {
		return nil
	}
	auth := ""
	if n.Token != "" {
		auth = "cordon:" + n.Token + "@"
	}
	httpURL := "http://" + auth + "127.0.0.1:" + strconv.Itoa(n.HTTPPort)
	socksURL := "socks5h://" + auth + "127.0.0.1:" + strconv.Itoa(n.SOCKSPort)
	var out []string
	add := func(name, value string) {
		if !slices.Contains(n.Keep, name) {
			out = append(out, name+"="+value)
		}
	}
	for _, v := range proxyVars {
		switch v.kind {
		case "http":
			add(v.name, httpURL)
		case "socks5":
			add(v.name, socksURL)
		default:
			add(v.name, noProxy)
		}
	}
	if n.Helper != "" {
		// ssh runs ProxyCommand with the user's shell: the path is
		// cordon's own (no agent input), quoted for it.
		add("GIT_SSH_COMMAND", "ssh -o ProxyCommand='"+n.Helper+" "+helperspec.ConnectCommand+" %h %p'")
	}
	return out
}

// MergeEnv returns env with n's variables (Env) in place of the same
// names; env stays sorted.
func (n *Net) MergeEnv(env []string) []string {
	add := n.Env()
	if len(add) == 0 {
		return env
	}
	names := make([]string, 0, len(add))
	for _, kv := range add {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
	out = append(out, add...)
	slices.Sort(out)
	return out
}

// Describe says, for cordon policy --explain, what the launcher serves
// and where the command reaches it.
func (n *Net) Describe() []string {
	if n == nil {
		return nil
	}
	var out []string
	where := "in the sandbox's own network namespace (only loopback)"
	switch {
	case n.Mode == policy.NetDeny && len(n.ForwardPorts) > 0 && !n.HostListen && !n.Seatbelt:
		where = "in the sandbox's own network namespace (only loopback), nothing reachable but the forwarded ports (Landlock allows no other TCP connect or bind)"
	case n.Mode == policy.NetDeny && len(n.ForwardPorts) > 0:
		where = "without a network namespace: nothing reachable but the forwarded ports"
	case n.Seatbelt:
		where = "without a network namespace (the Seatbelt profile allows connecting only to the proxy's two ports and the forwarded ports, on the host's loopback)"
	case n.HostListen:
		where = "without a network namespace (Landlock confines TCP connect to the proxy's and the forwarded ports)"
	}
	out = append(out, fmt.Sprintf("mode %s, %s", n.Mode, where))
	if n.DNS {
		out = append(out, "name server at 127.0.0.1:53 inside (the sandbox's /etc/resolv.conf names it), served by cordon on the host: every lookup fails at once (\"not found\"), and after the run cordon names each host looked up and how to allow it")
	}
	if n.Filtered() {
		rules := "allow: " + orNone(n.Allow) + "; deny: " + orNone(n.Deny)
		if n.HostListen {
			out = append(out, "HTTP and SOCKS5 proxies served by cordon on the host's 127.0.0.1, on ports chosen at run time, with a per-run token (the proxy variables carry it as http://cordon:TOKEN@127.0.0.1:PORT)")
		} else {
			out = append(out, fmt.Sprintf("HTTP proxy at 127.0.0.1:%d and SOCKS5 proxy at 127.0.0.1:%d inside: the helper listens there and hands the sockets to cordon, which serves them on the host", n.HTTPPort, n.SOCKSPort))
		}
		out = append(out, "proxy rules: "+rules+" (deny wins; loopback, private, link-local and metadata addresses only by an IP or CIDR allow entry); every decision is an audit record")
		if len(n.PrivateNames) > 0 {
			out = append(out, "registries your own tool configuration names may resolve to a private address (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7), for these names only: "+strings.Join(n.PrivateNames, ", ")+"; loopback, link-local and metadata addresses stay refused")
		}
	}
	for _, c := range n.Credentials {
		out = append(out, fmt.Sprintf("credential %s: TLS to %s ends at the proxy, whose per-run CA the command trusts through %s (%s); the command holds a placeholder, the proxy puts the secret in; every use is an audit record", c.Name, strings.Join(c.Hosts, ", "), strings.Join(CAVars, ", "), n.CABundle))
	}
	for _, p := range n.ForwardPorts {
		if slices.Contains(n.AllowForwards, p) {
			out = append(out, fmt.Sprintf("forwarded port %d, for the allow entry naming a loopback address at that port: every client reaches it directly (NO_PROXY, and Go, never send a loopback address to the proxy)", p))
		}
		if n.Seatbelt {
			out = append(out, fmt.Sprintf("forwarded port %d: the host's 127.0.0.1:%d, reached directly (the profile allows connecting to that port of the loopback)", p, p))
		} else if n.HostListen {
			out = append(out, fmt.Sprintf("forwarded port %d: the host's 127.0.0.1:%d, reached directly (Landlock allows connecting to that port)", p, p))
		} else {
			out = append(out, fmt.Sprintf("forwarded port %d: 127.0.0.1:%d inside is joined to the host's 127.0.0.1:%d", p, p, p))
		}
	}
	return out
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

// netMode is the network mode a policy runs with (policy.Network.Effective).
func netMode(p *policy.Policy) (mode policy.NetMode, allow []string) {
	return p.Network.Effective()
}

// planNet is the plan's Net for the policy's network, or nil when it is
// deny or open (nothing to serve). inside says that the sandbox has its
// own network namespace (the helper listens there); helper is cordon's
// binary as the command sees it.
func planNet(p *policy.Policy, inside bool, helper string) (*Net, error) {
	mode, allow := netMode(p)
	if mode == policy.NetDeny {
		// Nothing but the forwarded ports; with a network namespace,
		// the name server that names what was looked up.
		if !inside && len(p.Network.ForwardPorts) == 0 {
			return nil, nil
		}
		if err := checkForwardPorts(p.Network.ForwardPorts); err != nil {
			return nil, err
		}
		n := &Net{Mode: mode, DNS: inside, Denied: p.Network.Denied, ForwardPorts: slices.Clone(p.Network.ForwardPorts), HostListen: !inside}
		if userSets(p, npmRetries) {
			n.Keep = []string{npmRetries}
		}
		return n, nil
	}
	if mode != policy.NetFiltered && mode != policy.NetLoopback {
		// An open network reaches the host's loopback ports directly.
		return nil, nil
	}
	if err := checkForwardPorts(p.Network.ForwardPorts); err != nil {
		return nil, err
	}
	n := &Net{Mode: mode, ForwardPorts: slices.Clone(p.Network.ForwardPorts), HostListen: !inside}
	if mode == policy.NetFiltered {
		n.AllowForwards = slices.Clone(p.Network.AllowForwards)
		n.PrivateNames = slices.Clone(p.Network.PrivateNames)
		n.ForwardPorts = append(n.ForwardPorts, n.AllowForwards...)
		n.Allow, n.Deny = slices.Clone(allow), slices.Clone(p.Network.Deny)
		n.Helper = helper
		if p.Mode != policy.ModeOff && len(p.Credentials) > 0 {
			n.Credentials = slices.Clone(p.Credentials)
			if inside {
				n.CABundle = privateTmp + "/" + CABundleName
			}
		}
		if inside {
			n.HTTPPort = freePort(insideHTTPPort, n.ForwardPorts)
			n.SOCKSPort = freePort(insideSOCKSPort, append(slices.Clone(n.ForwardPorts), n.HTTPPort))
		}
		for _, v := range proxyVars {
			if userSets(p, v.name) {
				n.Keep = append(n.Keep, v.name)
			}
		}
		if userSets(p, "GIT_SSH_COMMAND") {
			n.Keep = append(n.Keep, "GIT_SSH_COMMAND")
		}
	}
	return n, nil
}

// checkForwardPorts refuses a port the helper could not listen on.
func checkForwardPorts(ports []int) error {
	for _, port := range ports {
		if port < 1024 || port > 65535 {
			return fmt.Errorf("--forward-port %d: forwarded ports must be from 1024 to 65535 (the sandbox cannot listen on a privileged port)", port)
		}
	}
	return nil
}

// userSets reports whether the policy's environment allowlist sets name
// or passes it from the host (--env NAME=VALUE, --env NAME).
func userSets(p *policy.Policy, name string) bool {
	if _, ok := p.Env.Set[name]; ok {
		return true
	}
	return slices.Contains(p.Env.Pass, name)
}

// freePort is the first port from want up that is not in taken.
func freePort(want int, taken []int) int {
	for slices.Contains(taken, want) {
		want++
	}
	return want
}

// spec is the helper's part: the listeners to create inside.
func (n *Net) spec() *helperspec.Net {
	s := &helperspec.Net{}
	if n.Filtered() {
		s.Listeners = append(s.Listeners,
			helperspec.Listener{Kind: helperspec.ListenHTTP, Port: n.HTTPPort},
			helperspec.Listener{Kind: helperspec.ListenSOCKS5, Port: n.SOCKSPort})
	}
	for _, p := range n.ForwardPorts {
		s.Listeners = append(s.Listeners, helperspec.Listener{Kind: helperspec.ListenForward, Port: p})
	}
	if n.DNS {
		s.Listeners = append(s.Listeners, helperspec.Listener{Kind: helperspec.ListenDNS, Port: helperspec.DNSPort})
	}
	if len(s.Listeners) == 0 {
		return nil
	}
	return s
}

// landlockNetGap is the degraded line of the Landlock-only backend's
// filtered mode: what Landlock's port rules cannot tell apart.
const landlockNetGap = "filtered network without a network namespace: Landlock confines TCP connect by port number only, so the command can connect to ANY address on the proxy's two ports (chosen at run time) and on the forwarded ports, bypassing the proxy there; UDP, raw and other sockets are refused by seccomp, and TCP to every other port by Landlock"

// landlockDenyForwardGap is the degraded line of the Landlock-only
// backend's denied network with forwarded ports.
const landlockDenyForwardGap = "denied network with forwarded ports without a network namespace: Landlock confines TCP connect by port number only, so the command can connect to ANY address on the forwarded ports; UDP, raw and other sockets are refused by seccomp, and TCP to every other port by Landlock"

// landlockNet sets up the Landlock-only backend's part of filtered and
// loopback modes on rules and the seccomp options: TCP connect to the
// forwarded ports (the launcher adds the proxy's), stream sockets only. It
// refuses loopback mode (it needs a network namespace) and a kernel whose
// Landlock cannot confine TCP (ABI < 4).
func landlockNet(pl *Plan, n *Net, rules *landlock.Rules, abi int) error {
	if n == nil {
		return nil
	}
	if n.Mode == policy.NetDeny {
		// Nothing but the forwarded ports, by port number as in
		// filtered mode.
		rules.DenyNetwork = true
		rules.ConnectTCP = slices.Clone(n.ForwardPorts)
		pl.Spec.Seccomp.DenyNetwork = false
		pl.Spec.Seccomp.StreamOnly = true
		pl.Degraded = append(pl.Degraded, landlockDenyForwardGap)
		if abi < 4 {
			return fmt.Errorf("--forward-port with the network denied on the Landlock-only backend needs Landlock ABI 4 to confine TCP to the forwarded ports, and this kernel has ABI %d: run where bubblewrap works (see cordon status)", abi)
		}
		return nil
	}
	if n.Mode == policy.NetLoopback {
		return fmt.Errorf("--net loopback needs a network namespace of its own, which the Landlock-only backend cannot make: run where bubblewrap works (see cordon status), or use --net deny, or --allow-net with the hosts the command needs")
	}
	if abi < 4 {
		return fmt.Errorf("a filtered network (--allow-net, --deny-net, --forward-port) on the Landlock-only backend needs Landlock ABI 4 to confine TCP to the proxy's ports, and this kernel has ABI %d: run where bubblewrap works (see cordon status), or use --net deny", abi)
	}
	rules.DenyNetwork = true
	rules.ConnectTCP = slices.Clone(n.ForwardPorts)
	pl.Spec.Seccomp.StreamOnly = true
	pl.Degraded = append(pl.Degraded, landlockNetGap)
	return nil
}

// LandlockNetGap is what the Landlock-only backend cannot stop in filtered
// mode (its degraded line; cordon status shows it).
func LandlockNetGap() string { return landlockNetGap }
