// Package toolenv carries the host's non-secret developer tool settings
// into a sandbox's environment: npm's registries (~/.npmrc and
// npm_config_* variables), pip's indexes (pip.conf and PIP_* variables),
// the go command's settings (`go env -w`, kept in the file go env GOENV
// names, and GO* variables) and, while the network is open, the proxy
// variables. Inside the sandbox the files they live in cannot be read
// (~/.npmrc is denied as a whole because it may hold tokens, ~/.config is
// not in the read allowlist) and the environment is an allowlist, so
// without this a private module name would be sent to a public registry
// and tools behind a company proxy would fail.
//
// The package owns one decision: what of a tool's settings is a secret.
// It never returns a credential into a sandbox: a setting that holds one
// (a token, a password, a URL with a user name or password in it) is
// dropped and reported as a Dropped with the flag that passes it. Only
// NpmToken and NetrcPassword return one, to the launcher, for the
// host-side proxy to put into requests to its host. It reads the host's
// files with config.ReadFile and decides nothing else about the policy.
//
// The parsers are written by hand: npmrc, pip.conf and the go env file
// are small line formats, and the parts a library would add (writing,
// sections of other tools, INI dialects) are not wanted here.
package toolenv

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/config"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// Host is what Collect may read of the host.
type Host struct {
	// Home is the user's home directory.
	Home string
	// Workspace is the project directory: npm reads its .npmrc itself,
	// and lets it override the user's config.
	Workspace string
	// Getenv looks up a host variable; nil means os.LookupEnv.
	Getenv func(string) (string, bool)
	// Environ lists the host's variables as NAME=VALUE; nil means
	// os.Environ.
	Environ func() []string
	// NetworkOpen says whether the sandbox shares the host's network;
	// the proxy variables pass only then.
	NetworkOpen bool
	// StateDir is where FindRegistries caches what npm and python3
	// report as their defaults (asking takes them a tenth of a second);
	// "" means no cache. It must be a directory no sandbox can write.
	StateDir string
	// GitCommonDir is the common git directory of the workspace's
	// repository, whose remotes FindRegistries reads; "" for none.
	GitCommonDir string
	// Set are the variables the sandbox's environment sets (--env
	// NAME=VALUE, env:): the tools inside use them rather than the
	// host's, so FindRegistries reads them first.
	Set map[string]string
}

// Dropped is one host setting that was not carried into the sandbox.
type Dropped struct {
	// Setting names it: a variable, or the file and its key.
	Setting string
	// Var is the variable that would have carried it into the sandbox;
	// a policy that passes or sets Var has dealt with it.
	Var string
	// Why it was dropped, e.g. "it holds a credential".
	Why string
	// Pass says how a user passes it anyway, e.g. "pass it with --env
	// HTTPS_PROXY".
	Pass string
}

// String is the one line cordon prints for d.
func (d Dropped) String() string {
	return fmt.Sprintf("%s not passed (%s); %s", d.Setting, d.Why, d.Pass)
}

// Result is what Collect carries over and what it dropped.
type Result struct {
	// Env holds the variables to set in the sandbox.
	Env map[string]string
	// Dropped lists the settings that were not carried, sorted.
	Dropped []Dropped
}

// Collect reads the host's tool settings and returns the non-secret ones
// as variables, and the rest as Dropped. A file that cannot be read is
// treated as absent: the tool would not have read it either, or cordon
// says so in the Dropped list when it exists but cannot be read.
func Collect(h Host) Result {
	c := newCollector(h)
	c.goEnv()
	c.npm()
	c.pip()
	c.proxies()
	sort.Slice(c.res.Dropped, func(i, j int) bool { return c.res.Dropped[i].Setting < c.res.Dropped[j].Setting })
	return c.res
}

type collector struct {
	h    Host
	res  Result
	regs *registries // FindRegistries' answer
	// untrusted names the workspace file being read (trusting): what it
	// names is listed in Unlisted, never allowed.
	untrusted string
}

// newCollector returns a collector for h, with Getenv and Environ
// defaulted to the process's own.
func newCollector(h Host) *collector {
	if h.Getenv == nil {
		h.Getenv = os.LookupEnv
	}
	if h.Environ == nil {
		h.Environ = os.Environ
	}
	return &collector{h: h, res: Result{Env: map[string]string{}}}
}

func (c *collector) set(name, value string) { c.res.Env[name] = value }

func (c *collector) drop(setting, variable, why, pass string) {
	c.res.Dropped = append(c.res.Dropped, Dropped{Setting: setting, Var: variable, Why: why, Pass: pass})
}

// readFile reads a host config file; a missing file is nil, a file that
// exists but cannot be read is reported once.
func (c *collector) readFile(path string) []byte {
	data, err := config.ReadFile(path, config.ReadOptions{})
	if err != nil {
		if _, serr := os.Lstat(path); serr == nil {
			c.drop(c.short(path), "", "cordon could not read it: "+err.Error(), "fix the file, or pass its settings with --env")
		}
		return nil
	}
	return data
}

// short writes a path under the home directory as ~/...
func (c *collector) short(path string) string {
	if c.h.Home != "" {
		if rel, ok := subpath.Rel(c.h.Home, path); ok {
			return "~/" + rel
		}
	}
	return path
}

// configHome is $XDG_CONFIG_HOME, else ~/.config, as the tools find it.
func (c *collector) configHome() string {
	if v, ok := c.h.Getenv("XDG_CONFIG_HOME"); ok && filepath.IsAbs(v) {
		return v
	}
	return filepath.Join(c.h.Home, ".config")
}

// proxyNames are the proxy variables curl, git, pip, npm and the go
// command read, in both cases.
var proxyNames = []string{
	"HTTP_PROXY", "HTTPS_PROXY", "FTP_PROXY", "ALL_PROXY", "NO_PROXY",
	"http_proxy", "https_proxy", "ftp_proxy", "all_proxy", "no_proxy",
}

// proxies carries the proxy variables while the network is open.
func (c *collector) proxies() {
	for _, name := range proxyNames {
		v, ok := c.h.Getenv(name)
		if !ok || v == "" {
			continue
		}
		switch {
		case !c.h.NetworkOpen:
			c.drop(name, name, "the network is off", "--net open passes it")
		case hasCredential(v):
			c.drop(name, name, "it holds a user name or password", "pass it with --env "+name)
		default:
			c.set(name, v)
		}
	}
}

// hasCredential reports whether a setting's value holds a credential: a
// URL (or a list of them, split at commas, pipes and white space) with a
// user name or password (without a scheme, user:password@host), or a
// query parameter named like a token.
func hasCredential(v string) bool {
	for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' || r == ' ' || r == '\t' || r == '\n' }) {
		rest, scheme := item, false
		if _, after, ok := strings.Cut(item, "://"); ok {
			rest, scheme = after, true
		}
		authority, _, _ := strings.Cut(rest, "/")
		if userinfo, _, ok := strings.Cut(authority, "@"); ok && (scheme || strings.Contains(userinfo, ":")) {
			// Without a scheme, only user:password@host is one: an
			// e-mail address is not.
			return true
		}
		if u, err := url.Parse(item); err == nil {
			for k := range u.Query() {
				if secretName(k) {
					return true
				}
			}
			if scheme {
				for _, seg := range strings.Split(u.Path, "/") {
					if tokenLike(seg) {
						return true
					}
				}
			}
		}
	}
	return false
}

// tokenLike reports whether a URL path segment looks like an access token
// that some registries take in the path (Gemfury's
// https://npm-proxy.fury.io/TOKEN/acct/): 20 or more letters, digits, '-'
// and '_', with both letters and digits, or one of the prefixes of
// well-known token formats.
func tokenLike(seg string) bool {
	for _, p := range []string{"ghp_", "gho_", "ghs_", "github_pat_", "glpat-", "npm_", "pypi-", "xoxb-", "AKIA"} {
		if strings.HasPrefix(seg, p) && len(seg) > len(p)+8 {
			return true
		}
	}
	if len(seg) < 20 {
		return false
	}
	letters, digits := false, false
	for _, r := range seg {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letters = true
		case r >= '0' && r <= '9':
			digits = true
		case r == '-' || r == '_':
		default:
			return false
		}
	}
	return letters && digits
}

// secretName reports whether a setting's name says it holds a secret.
func secretName(name string) bool {
	n := strings.ToLower(name)
	if i := strings.LastIndexAny(n, ":/"); i >= 0 {
		n = n[i+1:]
	}
	n = strings.TrimLeft(n, "_-")
	switch n {
	case "auth", "authtoken", "password", "passwd", "username", "otp", "cert", "certfile", "key", "keyfile", "client_cert", "client-cert", "token", "access_token", "apikey", "api_key", "api-key":
		return true
	}
	for _, s := range []string{"token", "password", "secret", "credential"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// goKeys are the go command's settings that carry over: where modules
// come from and how they are checked, build flags and the toolchain.
var goKeys = []string{
	"GOPROXY", "GOPRIVATE", "GONOPROXY", "GONOSUMDB", "GOSUMDB", "GOINSECURE",
	"GOFLAGS", "GOTOOLCHAIN", "GOVCS", "GOEXPERIMENT", "GOAMD64", "GOARM64",
	"GO386", "GOARM", "CGO_ENABLED",
}

// goPathKeys are go settings that name host directories; the sandbox
// uses its own (the sandbox cache) or cannot write them.
var goPathKeys = []string{"GOPATH", "GOBIN", "GOCACHE", "GOMODCACHE", "GOTMPDIR"}

// goEnv carries the go command's settings: the GOENV file first, then
// the host's variables, which win, as the go command has it.
func (c *collector) goEnv() {
	vals := map[string]string{}
	from := map[string]string{}
	file := c.goEnvFile()
	if file != "" {
		for k, v := range parseGoEnv(c.readFile(file)) {
			vals[k], from[k] = v, "go env "+k+" (in "+c.short(file)+")"
		}
	}
	for _, k := range append(append(append([]string{}, goKeys...), goPathKeys...), "GOAUTH") {
		if v, ok := c.h.Getenv(k); ok {
			vals[k], from[k] = v, k
		}
	}
	for _, k := range goKeys {
		v, ok := vals[k]
		if !ok || v == "" {
			continue
		}
		if hasCredential(v) {
			c.drop(from[k], k, "it holds a user name or password", "pass it with --env "+k)
			continue
		}
		c.set(k, v)
	}
	defaults := map[string]string{
		"GOPATH":     filepath.Join(c.h.Home, "go"),
		"GOCACHE":    filepath.Join(c.h.Home, ".cache", "go-build"),
		"GOMODCACHE": filepath.Join(c.h.Home, "go", "pkg", "mod"),
	}
	for _, k := range goPathKeys {
		// Setting the go command's own default loses nothing.
		if v := vals[k]; v != "" && filepath.Clean(v) != defaults[k] {
			c.drop(from[k], k, "a host directory; the sandbox uses its own", "pass it with --env "+k+" and make it readable or writable with --allow-read or --allow-write")
		}
	}
	if v := vals["GOAUTH"]; v != "" && v != "off" {
		c.drop(from["GOAUTH"], "GOAUTH", "it gives the go command credentials", "pass it with --env GOAUTH")
	}
}

// goEnvFile is the file `go env -w` writes: $GOENV, else
// <config home>/go/env; "" when GOENV is off.
func (c *collector) goEnvFile() string {
	if v, ok := c.h.Getenv("GOENV"); ok {
		if v == "off" || !filepath.IsAbs(v) {
			return ""
		}
		return v
	}
	return filepath.Join(c.configHome(), "go", "env")
}

// parseGoEnv reads the go env file: one NAME=VALUE per line, as the go
// command writes it; other lines are ignored, as the go command does.
func parseGoEnv(data []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), "=")
		if !ok || k == "" || k[0] < 'A' || k[0] > 'Z' {
			continue
		}
		out[k] = v
	}
	return out
}

// npm carries npm's user config (~/.npmrc, or the file
// npm_config_userconfig names) and the host's npm_config_* variables, as
// npm_config_* variables, leaving out what authenticates. The project's
// .npmrc and npm's global config are readable inside and npm reads them
// itself; a key the project's .npmrc sets is not carried from the user
// config, since npm_config_* variables would override the project's value,
// which npm ranks above the user's.
func (c *collector) npm() {
	project := map[string]bool{}
	if c.h.Workspace != "" {
		if data, err := config.ReadFile(filepath.Join(c.h.Workspace, ".npmrc"), config.ReadOptions{Beneath: c.h.Workspace}); err == nil {
			for _, kv := range parseNpmrc(data) {
				project[kv[0]] = true
			}
		}
	}
	path := filepath.Join(c.h.Home, ".npmrc")
	for _, name := range []string{"npm_config_userconfig", "NPM_CONFIG_USERCONFIG"} {
		if v, ok := c.h.Getenv(name); ok && filepath.IsAbs(v) {
			path = v
		}
	}
	file := c.short(path)
	for _, kv := range parseNpmrc(c.readFile(path)) {
		key, val := kv[0], kv[1]
		setting := file + ": " + key
		if project[key] {
			continue
		}
		if strings.HasSuffix(key, "[]") {
			c.drop(setting, "npm_config_"+key, "a list, which npm_config_ variables cannot carry", "write it in the project's .npmrc")
			continue
		}
		if secretName(key) || strings.HasPrefix(key, "//") {
			pass := "to use it inside, pass its value with --env NAME and write " + key + "=${NAME} in the project's .npmrc"
			if host, ok := npmTokenHost(key); ok {
				pass = npmCredentialHint(host)
			}
			c.drop(setting, "npm_config_"+key, "a credential or a registry's own setting", pass)
			continue
		}
		if secret := secretReference(val); secret != "" {
			c.drop(setting, "npm_config_"+key, "it names ${"+secret+"}, a secret", "write it in the project's .npmrc with ${"+secret+"} and pass "+secret+" with --env")
			continue
		}
		expanded, missing := expandEnv(val, c.h.Getenv)
		if missing != "" {
			c.drop(setting, "npm_config_"+key, "it names ${"+missing+"}, which is not set", "set the variable, or write the value in the project's .npmrc")
			continue
		}
		if hasCredential(expanded) {
			c.drop(setting, "npm_config_"+key, "it holds a user name or password", "write it in the project's .npmrc with ${NAME} and pass NAME with --env")
			continue
		}
		c.set("npm_config_"+key, expanded)
	}
	c.prefixed("npm_config_", func(name string) bool {
		key := strings.ToLower(name[len("npm_config_"):])
		return key != "userconfig" && key != "cache"
	}, func(name string) bool {
		return strings.Contains(name, "//") || secretName(name[len("npm_config_"):])
	})
}

// pip carries pip's user config files ([global] and [install] sections)
// and the host's PIP_* variables, as PIP_* variables.
func (c *collector) pip() {
	files := []string{
		filepath.Join(c.h.Home, ".pip", "pip.conf"),
		filepath.Join(c.configHome(), "pip", "pip.conf"),
	}
	if v, ok := c.h.Getenv("PIP_CONFIG_FILE"); ok && filepath.IsAbs(v) {
		files = append(files, v)
	}
	for _, f := range files {
		for _, kv := range parsePipConf(c.readFile(f)) {
			key, val := kv[0], kv[1]
			name := "PIP_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
			setting := c.short(f) + ": " + key
			switch {
			case pipSecret(name):
				c.drop(setting, name, "a credential", "pass it with --env "+name)
			case hasCredential(val):
				c.drop(setting, name, "it holds a user name or password", "pass it with --env "+name)
			case name == "PIP_CACHE_DIR" || name == "PIP_CONFIG_FILE":
			default:
				c.set(name, val)
			}
		}
	}
	c.prefixed("PIP_", func(name string) bool {
		return name != "PIP_CONFIG_FILE" && name != "PIP_CACHE_DIR"
	}, pipSecret)
}

// pipSecret reports whether pip's variable name holds a secret. PIP_CERT
// is the path of a CA bundle, not a secret; PIP_CLIENT_CERT holds a key.
func pipSecret(name string) bool {
	return name == "PIP_CLIENT_CERT" || name != "PIP_CERT" && secretName(strings.TrimPrefix(name, "PIP_"))
}

// prefixed carries the host's variables starting with prefix (in any
// case) that keep passes, unless secret says the name is a credential or
// the value holds one.
func (c *collector) prefixed(prefix string, keep, secret func(string) bool) {
	env := c.h.Environ()
	slices.Sort(env)
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(strings.ToLower(name), strings.ToLower(prefix)) || !keep(name) {
			continue
		}
		if secret(name) || hasCredential(val) {
			c.drop(name, name, "it holds a credential", "pass it with --env "+name)
			continue
		}
		c.set(name, val)
	}
}

// secretReference returns the first ${NAME} in s whose name says it holds
// a secret (NPM_TOKEN, FURY_TOKEN, ...), or "": its value must not be
// expanded into a variable the sandbox sees.
func secretReference(s string) string {
	for rest := s; ; {
		i := strings.Index(rest, "${")
		if i < 0 {
			return ""
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return ""
		}
		if name := rest[i+2 : i+j]; secretName(name) {
			return name
		}
		rest = rest[i+j+1:]
	}
}

// expandEnv replaces ${NAME} as npm does in its config files (only the
// braced form); missing names the first variable that is not set.
func expandEnv(s string, getenv func(string) (string, bool)) (out, missing string) {
	var b strings.Builder
	for rest := s; ; {
		i := strings.Index(rest, "${")
		j := -1
		if i >= 0 {
			j = strings.IndexByte(rest[i:], '}')
		}
		if i < 0 || j < 0 {
			b.WriteString(rest)
			return b.String(), missing
		}
		name := rest[i+2 : i+j]
		v, ok := getenv(name)
		if !ok && missing == "" {
			missing = name
		}
		b.WriteString(rest[:i])
		b.WriteString(v)
		rest = rest[i+j+1:]
	}
}

// parseNpmrc reads an npmrc file: key = value lines; '#' and ';' start
// comments; a quoted value loses its quotes. Sections are ignored, as npm
// ignores them.
func parseNpmrc(data []byte) [][2]string {
	var out [][2]string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimRight(line, "\r"))
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		if k != "" {
			out = append(out, [2]string{k, v})
		}
	}
	return out
}

// parsePipConf reads the [global] and [install] sections of a pip.conf
// (Python's configparser dialect: "key = value" or "key: value",
// indented continuation lines, '#' and ';' comments). A key in [install]
// overrides [global]; continuation lines join with a space, as pip's
// variables take lists.
func parsePipConf(data []byte) [][2]string {
	var (
		section string
		order   []string
		vals    = map[string]string{}
		from    = map[string]string{}
		last    string
	)
	for _, raw := range strings.Split(string(data), "\n") {
		raw = strings.TrimRight(raw, "\r")
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if raw[0] == ' ' || raw[0] == '\t' {
			if last != "" && (section == "global" || section == "install") {
				vals[last] = strings.TrimSpace(vals[last] + " " + line)
			}
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section, last = strings.ToLower(strings.TrimSpace(line[1:len(line)-1])), ""
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 || (section != "global" && section != "install") {
			last = ""
			continue
		}
		// pip reads index_url as index-url.
		k, v := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(line[:i])), "_", "-"), strings.TrimSpace(line[i+1:])
		if from[k] == "install" && section == "global" {
			last = ""
			continue
		}
		if _, seen := vals[k]; !seen {
			order = append(order, k)
		}
		vals[k], from[k], last = v, section, k
	}
	out := make([][2]string, 0, len(order))
	for _, k := range order {
		out = append(out, [2]string{k, vals[k]})
	}
	return out
}

// npmTokenHost returns the host of an npmrc key "//HOST[:PORT]/...:_authToken".
func npmTokenHost(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "//")
	if !ok || !strings.HasSuffix(key, ":_authToken") {
		return "", false
	}
	host, _, _ := strings.Cut(rest, "/")
	if u, err := url.Parse("https://" + host); err == nil && u.Hostname() != "" {
		return u.Hostname(), true
	}
	return "", false
}

// npmCredentialHint says how npm inside can use the token of host
// without the token entering the sandbox: a credential.
func npmCredentialHint(host string) string {
	if host == "registry.npmjs.org" {
		return "to let npm use it without seeing it, pass --credential npm"
	}
	return "to let npm use it without seeing it, add {name: NAME, hosts: [" + host + "], npmrc: true} to sandbox.credentials in your config"
}
