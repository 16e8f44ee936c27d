package toolenv

import (
	"encoding/json"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
)

// Registry is one host that a host tool is configured to fetch from: a
// module proxy, a checksum database, a package registry or index, a code
// host. The ci profile allows these and nothing else.
type Registry struct {
	// Entry is the network.allow entry for it: "host:port" ("[::1]:8080"
	// for an IPv6 literal), with the port the tool's URL names or its
	// scheme's default (https 443, http 80, ssh 22, git 9418).
	Entry string `json:"entry"`
	// Source says which setting names the host and where it was found,
	// e.g. "GOPROXY (go's default, from go env)".
	Source string `json:"source"`
	// Remote says that the entry is a git remote of the workspace's
	// repository, not a registry a tool's own configuration names.
	Remote bool `json:"remote,omitempty"`
}

// Unlisted is a host a tool may use that FindRegistries does not allow,
// or a tool setting it could not read, and why.
type Unlisted struct {
	// Entry is the network.allow entry that would allow the host, or ""
	// when no host is known.
	Entry string `json:"entry,omitempty"`
	// Source names the setting, as in Registry.Source.
	Source string `json:"source"`
	// Why it is not allowed, and how to allow it.
	Why string `json:"why"`
}

// Registries is what FindRegistries found.
type Registries struct {
	// Allow lists the hosts the host's tools are configured to use, each
	// once, in the order found (go, npm, pip, cargo, git).
	Allow []Registry
	// Unlisted lists what was left out, and why.
	Unlisted []Unlisted
}

// FindRegistries returns the hosts that the host's own tools are
// configured to fetch from, each with the setting that names it:
//
//   - go: GOPROXY, GOSUMDB and GONOPROXY (or GOPRIVATE), from the
//     environment, else the go env file, else what the go command
//     reports as its default (go env, run with GOTOOLCHAIN=local);
//   - npm: npm_config_registry, else the user's npmrc, else npm's global
//     config or its default (npm config get, cached), plus every
//     @scope:registry of the user's and the global npmrc;
//   - pip: index-url, extra-index-url and find-links from PIP_*
//     variables and pip.conf files (global, user, site, PIP_CONFIG_FILE,
//     in pip's order); without an index-url, pip's own default index
//     and file host (asked of python3, cached);
//   - cargo: the registries and source replacements of
//     $CARGO_HOME/config.toml and CARGO_REGISTRIES_*_INDEX, and the
//     registries cargo has used (its index cache under
//     $CARGO_HOME/registry/index names each one and its download host);
//   - git: the remotes of the workspace's repository, when the host
//     side knows their host too (see gitRemotes).
//
// It never names a registry itself: a company mirror configured on the
// host is what it finds. What a repository's own files say (the
// project's .npmrc, .cargo/config.toml, a remote no host-side setting
// confirms) is never allowed: it is listed in Unlisted with the flag that
// would allow it. FindRegistries never returns a credential: an entry is
// a host and a port.
func FindRegistries(h Host) Registries {
	c := newCollector(h)
	c.regs = &registries{seen: map[string]bool{}}
	c.goRegistries()
	c.npmRegistries()
	c.pipRegistries()
	c.cargoRegistries()
	c.gitRemotes()
	return c.regs.out
}

// registries accumulates FindRegistries' answer.
type registries struct {
	out  Registries
	seen map[string]bool
}

// allow adds the entry for a host unless it is there already; while a
// workspace file is read (trusting), it lists the entry instead.
func (c *collector) allow(entry, source string) {
	c.allowRemote(entry, source, false)
}

// allowRemote is allow, for a git remote when remote is set.
func (c *collector) allowRemote(entry, source string, remote bool) {
	if entry == "" || c.regs.seen[entry] {
		return
	}
	if c.untrusted != "" {
		c.unlisted(entry, source, c.untrustedWhy(entry))
		return
	}
	c.regs.seen[entry] = true
	c.regs.out.Allow = append(c.regs.out.Allow, Registry{Entry: entry, Source: source, Remote: remote})
}

// allowURL adds the host of a tool's URL; a URL that names no network
// host (a path, file://) adds nothing, one that cannot be read is
// listed as such.
func (c *collector) allowURL(raw, source string) {
	entry, ok, network := urlEntry(raw)
	switch {
	case ok:
		c.allow(entry, source)
	case network:
		c.unlisted("", source, "cordon could not read the host of this URL; allow its host with --allow-net HOST:PORT")
	}
}

func (c *collector) unlisted(entry, source, why string) {
	c.regs.out.Unlisted = append(c.regs.out.Unlisted, Unlisted{Entry: entry, Source: source, Why: why})
}

// defaultPorts are the ports of the URL schemes tools fetch with.
var defaultPorts = map[string]string{"https": "443", "http": "80", "ssh": "22", "git": "9418"}

// urlEntry returns the allow entry for a tool's URL, "host:port". Cargo's
// "sparse+", "registry+" and "git+" prefixes are dropped. ok is false for
// what names no network host (a path, file://, "direct"); network is
// true when raw looks like a network URL that could not be read.
func urlEntry(raw string) (entry string, ok, network bool) {
	raw = strings.TrimSpace(raw)
	for _, p := range []string{"sparse+", "registry+", "git+"} {
		raw = strings.TrimPrefix(raw, p)
	}
	scheme, _, hasScheme := strings.Cut(raw, "://")
	if !hasScheme {
		return "", false, false
	}
	scheme = strings.ToLower(scheme)
	def, known := defaultPorts[scheme]
	if !known {
		return "", false, scheme != "file"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", false, true
	}
	port := u.Port()
	if port == "" {
		port = def
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", false, true
	}
	return hostPort(u.Hostname(), port), true, true
}

// hostPort joins a host and a port as an allow entry.
func hostPort(host, port string) string {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if strings.Contains(host, ":") {
		return net.JoinHostPort(host, port)
	}
	return host + ":" + port
}

// goRegistries adds the go command's module proxies, checksum database
// and the hosts of the modules it fetches directly (GONOPROXY, which
// defaults to GOPRIVATE).
func (c *collector) goRegistries() {
	keys := []string{"GOPROXY", "GOSUMDB", "GONOPROXY", "GOPRIVATE"}
	vals, from := map[string]string{}, map[string]string{}
	if file := c.goEnvFile(); file != "" {
		fileVals, fileFrom := map[string]string{}, map[string]string{}
		for k, v := range parseGoEnv(c.readFile(file)) {
			if v != "" {
				fileVals[k], fileFrom[k] = v, "go env -w "+k+", in "+c.short(file)
			}
		}
		if c.inWorkspace(file) {
			// Listed, and not read by go env either (goDefaults).
			c.trusting(file, func() { c.goAllow(fileVals, fileFrom) })
		} else {
			vals, from = fileVals, fileFrom
		}
	}
	for _, k := range keys {
		// An empty value is unset, as the go command has it.
		if v, where, ok := c.variable(k); ok && v != "" {
			vals[k], from[k] = v, where
		}
	}
	if _, set := vals["GONOPROXY"]; !set {
		if v, ok := vals["GOPRIVATE"]; ok {
			vals["GONOPROXY"], from["GONOPROXY"] = v, strings.Replace(from["GOPRIVATE"], "GOPRIVATE", "GOPRIVATE (so GONOPROXY)", 1)
		}
	}
	if bin := c.lookPath("go"); bin != "" {
		if _, set := vals["GOPROXY"]; !set || !hasKey(vals, "GOSUMDB") {
			c.goDefaults(bin, vals, from)
		}
	}
	c.goAllow(vals, from)
}

// goAllow adds the hosts of the go settings vals (GOPROXY, GOSUMDB,
// GONOPROXY), each named by its from.
func (c *collector) goAllow(vals, from map[string]string) {
	if _, set := vals["GONOPROXY"]; !set {
		if v, ok := vals["GOPRIVATE"]; ok {
			vals["GONOPROXY"], from["GONOPROXY"] = v, strings.Replace(from["GOPRIVATE"], "GOPRIVATE", "GOPRIVATE (so GONOPROXY)", 1)
		}
	}
	if v := vals["GOPROXY"]; v != "" {
		for _, p := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' }) {
			if p = strings.TrimSpace(p); p != "direct" && p != "off" {
				c.allowURL(p, "GOPROXY: "+from["GOPROXY"])
			}
		}
	}
	if v := strings.Fields(vals["GOSUMDB"]); len(v) > 0 && v[0] != "off" {
		// "name", "name+key" or "name+key URL"; without a URL the
		// database is https://name.
		if len(v) > 1 {
			c.allowURL(v[1], "GOSUMDB: "+from["GOSUMDB"])
		} else {
			name, _, _ := strings.Cut(v[0], "+")
			c.allowURL("https://"+name, "GOSUMDB: "+from["GOSUMDB"])
		}
	}
	for _, pat := range strings.Split(vals["GONOPROXY"], ",") {
		// A module path pattern: its first element is the host (a
		// path.Match pattern, whose * matches across dots as a
		// leading "*." rule does).
		host, _, _ := strings.Cut(strings.TrimSpace(pat), "/")
		switch {
		case host == "":
		case strings.ContainsAny(host, "?[]\\"):
			c.unlisted("", "GONOPROXY: "+from["GONOPROXY"], "the pattern "+strconv.Quote(host)+" cannot be written as a network rule; allow its hosts with --allow-net HOST:443")
		default:
			c.allow(hostPort(host, "443"), "GONOPROXY: "+from["GONOPROXY"]+" (fetched directly from the code host)")
		}
	}
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// goDefaults fills, from `go env`, the go settings neither the
// environment nor the go env file sets: the go command's own defaults
// (its GOROOT/go.env). It runs with GOTOOLCHAIN=local in /, so that it
// never downloads a toolchain.
func (c *collector) goDefaults(bin string, vals, from map[string]string) {
	env := append([]string{"GOTOOLCHAIN=local"}, c.toolEnv([]string{"PATH", "HOME", "XDG_CONFIG_HOME", "GOENV", "GOROOT", "GOPROXY", "GOSUMDB", "GOPRIVATE", "GONOPROXY"}, false)...)
	if file := c.goEnvFile(); file != "" && c.inWorkspace(file) {
		// Its settings are the workspace's, not go's defaults.
		env = append(env, "GOENV=off")
	}
	out, err := runTool(bin, []string{"env", "-json", "GOPROXY", "GOSUMDB", "GONOPROXY"}, env)
	if err != nil {
		c.unlisted("", "go's default module proxy", "cordon could not ask go env: "+err.Error()+"; set GOPROXY, or allow the proxy with --allow-net")
		return
	}
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		c.unlisted("", "go's default module proxy", "cordon could not read go env's answer; set GOPROXY, or allow the proxy with --allow-net")
		return
	}
	for _, k := range []string{"GOPROXY", "GOSUMDB", "GONOPROXY"} {
		if _, set := vals[k]; !set && got[k] != "" {
			vals[k], from[k] = got[k], "go's default, from go env "+k
		}
	}
}

// variable looks up a tool's variable as the tools inside will see it:
// set for the sandbox (Host.Set), else the host's; where says which.
func (c *collector) variable(name string) (v, where string, ok bool) {
	if v, ok := c.h.Set[name]; ok {
		return v, name + " set for the sandbox (--env or env:)", true
	}
	if v, ok := c.h.Getenv(name); ok {
		return v, name + " in the environment", true
	}
	return "", "", false
}

// lookPath finds an executable on the host's PATH (from Getenv, not
// cordon's own), or "": never in a directory inside the workspace, nor
// one that is a link into it (cordon runs it on the host).
func (c *collector) lookPath(name string) string {
	path, _ := c.h.Getenv("PATH")
	for _, dir := range filepath.SplitList(c.safePATH(path)) {
		p := filepath.Join(dir, name)
		if isExecutable(p) {
			if c.inWorkspace(p) {
				return ""
			}
			return p
		}
	}
	return ""
}
