package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/host/gitrepo"
	"github.com/cordon-sandbox/cordon/internal/host/toolenv"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
	"go.yaml.in/yaml/v3"
)

// MinForwardPort is the lowest port --forward-port accepts in loopback
// and filtered modes: nothing inside the sandbox may bind a port below
// 1024 (it holds no CAP_NET_BIND_SERVICE).
const MinForwardPort = 1024

// NetSource says where a network entry comes from, or why a host a tool
// would use is not allowed.
type NetSource struct {
	// Entry is the network.allow or network.deny entry.
	Entry string `yaml:"entry,omitempty" json:"entry,omitempty"`
	// Source names the setting, flag, file and line, or built-in rule
	// that wrote it.
	Source string `yaml:"source" json:"source"`
	// Why is set for an entry that is not allowed: why, and how to
	// allow it.
	Why string `yaml:"why,omitempty" json:"why,omitempty"`
	// remote marks a git remote among the ci profile's tool registries.
	remote bool
}

// netOrigin is where an entry was written: its layer and key.
type netOrigin struct {
	l   layer
	key string
}

// describe names the origin for cordon policy: the flag, the file and
// line, or the profile.
func (o netOrigin) describe() string {
	switch {
	case o.l.profile:
		return "the " + o.l.Source
	case o.l.IsFlags():
		return o.l.Name(o.key)
	case o.l.Line(o.key) > 0:
		return fmt.Sprintf("%s:%d", o.l.Source, o.l.Line(o.key))
	}
	return o.l.Source
}

// netState is what the builder records about the network while layers
// apply, for finishNetwork.
type netState struct {
	allowFrom map[string]netOrigin // the first layer that wrote each allow entry
	denyFrom  map[string]netOrigin
	fwdFrom   map[int]netOrigin
	// userAllow are the allow entries of non-profile layers (strict mode
	// keeps only these).
	userAllow []string
	// modeBy says which setting chose the current mode, for messages,
	// and modeLayer is its layer (zero for strict mode's own choice).
	modeBy    string
	modeLayer layer
}

func (n *netState) init() {
	if n.allowFrom == nil {
		n.allowFrom, n.denyFrom, n.fwdFrom = map[string]netOrigin{}, map[string]netOrigin{}, map[int]netOrigin{}
	}
}

// checkHost validates one network.allow or network.deny entry with the
// rules' own parser (netrule.Parse).
func checkHost(l layer, key, raw string) error {
	if _, err := netrule.Parse(raw); err != nil {
		msg := err.Error()
		if u := errors.Unwrap(err); u != nil {
			msg = u.Error()
		}
		return l.Errorf(key, "%s: %s", entryName(l, key, raw), msg)
	}
	return nil
}

// modeSetting names the setting of layer l that set the network mode m,
// e.g. "--net deny" or "sandbox.network.mode: deny (in FILE:LINE)".
func modeSetting(l layer, key string, m NetMode) string {
	switch {
	case l.profile:
		return fmt.Sprintf("the %s profile's network: %s", strings.TrimPrefix(l.Source, "profile "), m)
	case l.IsFlags():
		return l.Name(key) + " " + string(m)
	}
	val := string(m)
	if key == config.KeyNetworkEnabled {
		val = "false"
	}
	return fmt.Sprintf("%s: %s in %s", key, val, netOrigin{l, key}.describe())
}

func (b *builder) applyNetwork(l layer) error {
	b.net.init()
	n := l.Network
	var m NetMode
	set := false
	modeKey := config.KeyNetworkMode
	if n.Mode != nil {
		// Only a profile names filtered mode; a user's allow list makes it.
		if !(l.profile && *n.Mode == string(NetFiltered)) {
			if err := checkEnum(l, config.KeyNetworkMode, *n.Mode, config.NetworkModes); err != nil {
				return err
			}
		}
		m, set = NetMode(*n.Mode), true
	}
	if n.Enabled != nil {
		switch {
		case !*n.Enabled && set && m != NetDeny:
			return l.Errorf(config.KeyNetworkEnabled, "%s: false contradicts %s: %s; remove one of them", l.Name(config.KeyNetworkEnabled), l.Name(config.KeyNetworkMode), m)
		case *n.Enabled && set && m == NetDeny:
			return l.Errorf(config.KeyNetworkEnabled, "%s: true contradicts %s: deny; remove one of them", l.Name(config.KeyNetworkEnabled), l.Name(config.KeyNetworkMode))
		case !*n.Enabled:
			m, set, modeKey = NetDeny, true, config.KeyNetworkEnabled
		case !set:
			if l.tighten {
				return b.loosen(l, config.KeyNetworkEnabled, config.KeyNetworkEnabled+": true")
			}
			m, set, modeKey = NetOpen, true, config.KeyNetworkEnabled
		}
	}
	if l.tighten {
		// Deny is tighter than loopback, loopback than filtered; open
		// never tightens anything.
		switch {
		case set && m == NetOpen:
			return b.loosen(l, config.KeyNetworkMode, fmt.Sprintf("%s: %s", config.KeyNetworkMode, m))
		case set && netRank[string(m)] > netRank[string(b.p.Network.Mode)]:
			return b.loosen(l, config.KeyNetworkMode, fmt.Sprintf("%s: %s (looser than the current %s)", config.KeyNetworkMode, m, b.p.Network.Mode))
		}
		if len(n.Allow) > 0 {
			return b.loosen(l, config.KeyNetworkAllow, config.KeyNetworkAllow)
		}
		if len(n.ForwardPorts) > 0 {
			return b.loosen(l, config.KeyNetworkForwardPort, config.KeyNetworkForwardPort)
		}
	}
	for i, raw := range n.Allow {
		key := config.EntryKey(config.KeyNetworkAllow, i)
		if err := checkHost(l, key, raw); err != nil {
			return err
		}
		if _, seen := b.net.allowFrom[raw]; !seen {
			b.net.allowFrom[raw] = netOrigin{l, key}
		}
	}
	for i, raw := range n.Deny {
		key := config.EntryKey(config.KeyNetworkDeny, i)
		if err := checkHost(l, key, raw); err != nil {
			return err
		}
		if _, seen := b.net.denyFrom[raw]; !seen {
			b.net.denyFrom[raw] = netOrigin{l, key}
		}
	}
	for i, port := range n.ForwardPorts {
		key := config.EntryKey(config.KeyNetworkForwardPort, i)
		if port < 1 || port > 65535 {
			return l.Errorf(key, "%s must be a TCP port from 1 to 65535, not %d", l.Name(key), port)
		}
		if _, seen := b.net.fwdFrom[port]; !seen {
			b.net.fwdFrom[port] = netOrigin{l, key}
		}
	}
	if len(n.Allow) > 0 {
		if set && m == NetDeny {
			return l.Errorf(config.KeyNetworkAllow, "%s has entries but the same %s denies the network; remove one of them", l.Name(config.KeyNetworkAllow), sourceWord(l))
		}
		if set && m == NetLoopback {
			return l.Errorf(config.KeyNetworkAllow, "%s has entries but the same %s sets %s loopback, which reaches no host outside; remove one of them", l.Name(config.KeyNetworkAllow), sourceWord(l), l.Name(config.KeyNetworkMode))
		}
		if !set {
			modeKey = config.KeyNetworkAllow
		}
		m, set = NetFiltered, true
		if !l.profile {
			b.net.userAllow = append(b.net.userAllow, n.Allow...)
		}
	}
	if set {
		b.p.Network.Mode = m
		b.net.modeBy, b.net.modeLayer = modeSetting(l, modeKey, m), l
		if modeKey == config.KeyNetworkAllow {
			b.net.modeBy = netOrigin{l, modeKey}.describe()
		}
	}
	b.p.Network.Allow = append(b.p.Network.Allow, n.Allow...)
	b.p.Network.Deny = append(b.p.Network.Deny, n.Deny...)
	b.p.Network.ForwardPorts = append(b.p.Network.ForwardPorts, n.ForwardPorts...)
	return nil
}

func sourceWord(l layer) string {
	if l.IsFlags() {
		return "command line"
	}
	return "file"
}

// finishNetwork settles the network once every layer applied:
//
//   - strict mode keeps a filtered network only for the hosts a user
//     listed (the profile's are dropped), keeps loopback, and denies the
//     network otherwise;
//   - the ci profile's filtered network allows the hosts the host's own
//     tools are configured to use (toolRegistries);
//   - a mode other than filtered drops the allow entries; an open network
//     with deny entries becomes filtered with the allow entry "*" (every
//     host but the denied ones; special addresses still need an IP or
//     CIDR allow entry);
//   - forward ports need a network namespace with loopback (refused when
//     the network is denied) and a port from MinForwardPort up;
//   - an allow entry that a deny entry covers whole is refused, unless a
//     profile wrote it (it is then left out and listed as not allowed).
//
// Every entry gets its source in Network.Sources.
func (b *builder) finishNetwork() error {
	p, n := b.p, &b.net
	n.init()
	net := &p.Network
	toolSource := map[string]string{}
	var private []string // the tool registries' names (PrivateNames)
	if p.Mode == ModeStrict {
		switch {
		case net.Mode == NetFiltered && len(n.userAllow) > 0:
			net.Allow = n.userAllow
		case net.Mode == NetLoopback:
		default:
			if net.Mode != NetDeny {
				n.modeBy, n.modeLayer = "strict mode, which turns the network off unless --allow-net or network.allow names hosts", layer{}
			}
			net.Mode = NetDeny
		}
	} else if net.Mode == NetFiltered && p.Mode != ModeOff && p.Profile == ProfileCI {
		var add []string
		for _, r := range toolRegistries(b.host, b.ws, p.Env.Set) {
			if r.Why != "" {
				net.NotAllowed = append(net.NotAllowed, r)
				continue
			}
			if _, err := netrule.Parse(r.Entry); err != nil {
				net.NotAllowed = append(net.NotAllowed, NetSource{Entry: r.Entry, Source: r.Source, Why: "not a valid network entry: " + err.Error()})
				continue
			}
			add = append(add, r.Entry)
			toolSource[r.Entry] = r.Source
			if name := registryName(r); name != "" {
				private = append(private, name)
			}
		}
		net.Allow = append(add, net.Allow...)
	}
	if net.Mode != NetFiltered {
		net.Allow = nil
	}
	if len(p.Credentials) > 0 && p.Mode != ModeOff {
		// The proxy puts the secrets into requests: the network goes
		// through it, and each credential's hosts are allowed.
		if net.Mode == NetOpen {
			net.Allow = []string{"*"}
			toolSource["*"] = "an open network with credentials: every host, through the proxy that uses them"
		}
		net.Mode = NetFiltered
		for _, c := range p.Credentials {
			for _, h := range c.Hosts {
				net.Allow = append(net.Allow, h)
				if toolSource[h] == "" && n.allowFrom[h].l.Layer == nil {
					toolSource[h] = "credential " + c.Name + " (" + c.Source + ")"
				}
			}
		}
	}
	if net.Mode == NetOpen && len(net.Deny) > 0 {
		net.Mode, net.Allow = NetFiltered, []string{"*"}
		toolSource["*"] = "an open network with deny entries: every host but the denied ones"
	}
	net.Allow, net.Deny, net.ForwardPorts = dedup(net.Allow), dedup(net.Deny), dedup(net.ForwardPorts)
	if err := b.checkForwardPorts(); err != nil {
		return err
	}
	if net.Mode == NetFiltered {
		if err := b.checkAllowCanMatch(toolSource); err != nil {
			return err
		}
	}
	net.PrivateNames = nil
	for _, name := range private {
		if slices.ContainsFunc(net.Allow, func(e string) bool { r, err := netrule.Parse(e); return err == nil && r.Host == name }) && !slices.Contains(net.PrivateNames, name) {
			net.PrivateNames = append(net.PrivateNames, name)
		}
	}
	net.AllowForwards = nil
	if net.Mode == NetFiltered {
		for _, e := range n.userAllow {
			if port := loopbackPort(e); port >= MinForwardPort && slices.Contains(net.Allow, e) &&
				!slices.Contains(net.ForwardPorts, port) && !slices.Contains(net.AllowForwards, port) {
				net.AllowForwards = append(net.AllowForwards, port)
			}
		}
	}
	net.Denied = nil
	if net.Mode == NetDeny {
		net.Denied = &NetDenied{By: n.modeBy, Locked: n.modeLayer.tighten}
		if l := n.modeLayer; l.Layer != nil && l.IsFlags() && !l.profile {
			net.Denied.Flag = n.modeBy
		}
	}
	net.Sources = nil
	for _, e := range net.Allow {
		src := toolSource[e]
		if src == "" {
			src = n.allowFrom[e].describe()
		}
		net.Sources = append(net.Sources, NetSource{Entry: e, Source: src})
	}
	for _, e := range net.Deny {
		net.Sources = append(net.Sources, NetSource{Entry: e, Source: n.denyFrom[e].describe()})
	}
	return nil
}

// registryName is the host name of a registry a tool's own configuration
// names (not a git remote, not an IP or a pattern), or "".
func registryName(r NetSource) string {
	if r.remote {
		return ""
	}
	e, err := netrule.Parse(r.Entry)
	if err != nil || e.IsAddr() || strings.Contains(e.Host, "*") {
		return ""
	}
	return e.Host
}

// loopbackPort is the port of an allow entry naming one port of a
// loopback address or localhost, or 0.
func loopbackPort(entry string) int {
	r, err := netrule.Parse(entry)
	if err != nil || r.Port == 0 {
		return 0
	}
	if r.Host == "localhost" || r.IsAddr() && r.Prefix.IsSingleIP() && r.Prefix.Addr().Unmap().IsLoopback() {
		return r.Port
	}
	return 0
}

// checkForwardPorts refuses ports below MinForwardPort where the sandbox
// has a network of its own. With the network denied, forwarded ports are
// all it reaches ("nothing but these").
func (b *builder) checkForwardPorts() error {
	net := &b.p.Network
	if b.p.Mode == ModeOff {
		return nil // unconfined: the host's loopback is the command's
	}
	for _, port := range net.ForwardPorts {
		o := b.net.fwdFrom[port]
		what := fmt.Sprintf("%s %d", o.l.Name(o.key), port)
		if !o.l.IsFlags() {
			what = fmt.Sprintf("%s entry %d", config.BaseKey(o.key), port)
		}
		switch {
		case net.Mode != NetOpen && port < MinForwardPort:
			return o.l.Errorf(o.key, "%s: a port below %d cannot be forwarded, because nothing inside the sandbox may listen on it (no CAP_NET_BIND_SERVICE); forward a port from %d up", what, MinForwardPort, MinForwardPort)
		}
	}
	return nil
}

// checkAllowCanMatch refuses an allow entry that a deny entry covers
// whole (netrule.Compile), naming where it was written; one a profile or
// the open network's "*" added is left out instead (and listed in
// NotAllowed), or, for "*", the deny entry that denies everything is
// named.
func (b *builder) checkAllowCanMatch(toolSource map[string]string) error {
	net := &b.p.Network
	var keep []string
	for _, a := range net.Allow {
		_, err := netrule.Compile([]string{a}, net.Deny)
		if err == nil {
			keep = append(keep, a)
			continue
		}
		if src, ok := toolSource[a]; ok && src != "" && a != "*" {
			net.NotAllowed = append(net.NotAllowed, NetSource{Entry: a, Source: src, Why: "a deny entry covers it"})
			continue
		}
		_, generated := toolSource["*"]
		for _, d := range net.Deny {
			if _, err := netrule.Compile([]string{a}, []string{d}); err == nil {
				continue
			}
			od := b.net.denyFrom[d]
			if a == "*" && generated {
				return od.l.Errorf(od.key, "%s denies every host, so nothing of the open network is left; use --net deny (or network.mode: deny) instead", entryName(od.l, od.key, d))
			}
			o := b.net.allowFrom[a]
			return o.l.Errorf(o.key, "%s can never match: the deny entry %q (%s) covers it whole, and deny beats allow; remove one of the two", entryName(o.l, o.key, a), d, od.describe())
		}
		o := b.net.allowFrom[a]
		return o.l.Errorf(o.key, "%s: %v", entryName(o.l, o.key, a), err)
	}
	net.Allow = slices.Clip(keep)
	if net.Allow == nil {
		net.Allow = []string{}
	}
	return nil
}

// toolRegistries returns the hosts the host's own tools are configured
// to use (toolenv.FindRegistries), for the ci profile: as entries with
// their source, and, with Why set, what was left out. set are the
// variables the policy sets for the sandbox, which the tools inside use
// rather than the host's.
func toolRegistries(h Host, ws string, set map[string]string) []NetSource {
	getenv, environ := h.Getenv, h.Environ
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	if environ == nil {
		environ = func() []string { return nil }
	}
	common := ""
	if r, err := gitrepo.Find(ws); err == nil && r != nil {
		common = r.CommonDir
	}
	regs := toolenv.FindRegistries(toolenv.Host{Home: h.Home, Workspace: ws, Getenv: getenv, Environ: environ, StateDir: h.StateDir(), GitCommonDir: common, Set: set})
	var out []NetSource
	for _, r := range regs.Allow {
		out = append(out, NetSource{Entry: r.Entry, Source: r.Source, remote: r.Remote})
	}
	for _, u := range regs.Unlisted {
		out = append(out, NetSource{Entry: u.Entry, Source: u.Source, Why: u.Why})
	}
	return out
}

// MarshalYAML writes the network section as cordon policy prints it:
// each allow and deny entry with its source as a comment on its line,
// and the hosts left out (NotAllowed) under not_allowed.
func (n Network) MarshalYAML() (any, error) {
	src := map[string]string{}
	for _, s := range n.Sources {
		src[s.Entry] = s.Source
	}
	m := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, v any) error {
		var k, val yaml.Node
		if err := k.Encode(key); err != nil {
			return err
		}
		if err := val.Encode(v); err != nil {
			return err
		}
		if seq, ok := v.([]string); ok {
			for i, e := range seq {
				if s := src[e]; s != "" {
					val.Content[i].LineComment = "# " + s
				}
			}
		}
		m.Content = append(m.Content, &k, &val)
		return nil
	}
	for _, kv := range []struct {
		key string
		v   any
	}{{"mode", n.Mode}, {"allow", nonNil(n.Allow)}, {"deny", nonNil(n.Deny)}, {"forward_ports", nonNil(n.ForwardPorts)}} {
		if err := add(kv.key, kv.v); err != nil {
			return nil, err
		}
	}
	if len(n.NotAllowed) > 0 {
		if err := add("not_allowed", n.NotAllowed); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// nonNil returns s, or an empty slice for nil (printed as []).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Effective returns the network mode the backends enforce and the hosts it
// allows: an open network with deny entries is filtered, with every host
// allowed but the denied ones ("*"). Load already settles this; a Policy
// built otherwise may not have.
func (n Network) Effective() (NetMode, []string) {
	if n.Mode == NetOpen && len(n.Deny) > 0 {
		return NetFiltered, []string{"*"}
	}
	return n.Mode, n.Allow
}
