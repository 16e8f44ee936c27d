package policy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// Credential is a secret the command can use but never see: the sandbox
// holds a per-run placeholder, and the host-side proxy puts the secret
// into the allowed headers of requests to Hosts. It holds where the
// secret comes from, never the secret.
type Credential struct {
	// Name names it (a preset's name, or the user's own).
	Name string `yaml:"name" json:"name"`
	// Hosts are network entries (netrule syntax, names only) of the
	// hosts it belongs to; each is also allowed by the network rules.
	Hosts []string `yaml:"hosts" json:"hosts"`
	// Env are the variables of cordon's own environment tried first, in
	// order, for the secret; inside, each holds the placeholder.
	Env []string `yaml:"env,omitempty" json:"env,omitempty"`
	// File is a file outside the sandbox holding the secret (absolute;
	// denied inside).
	File string `yaml:"file,omitempty" json:"file,omitempty"`
	// Npmrc takes the secret from ~/.npmrc's _authToken for a host of
	// Hosts; inside, npm finds the placeholder there.
	Npmrc bool `yaml:"npmrc,omitempty" json:"npmrc,omitempty"`
	// Netrc takes the secret from the password of ~/.netrc's machine
	// entry for a host of Hosts.
	Netrc bool `yaml:"netrc,omitempty" json:"netrc,omitempty"`
	// Command is the argv of a command run on the host whose output is
	// the secret (tried last; never a shell string).
	Command []string `yaml:"command,omitempty" json:"command,omitempty"`
	// Headers are the request headers, besides Authorization, the
	// placeholder is replaced in.
	Headers []string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Methods, when set, are the only request methods it is used in.
	Methods []string `yaml:"methods,omitempty" json:"methods,omitempty"`
	// Paths, when set, are the only path prefixes it is used in.
	Paths []string `yaml:"paths,omitempty" json:"paths,omitempty"`
	// GitUsername, when set, makes git inside answer its hosts' HTTPS
	// authentication with this user name and the placeholder (a
	// credential helper in the command's git config), so git needs no
	// helper of its own.
	GitUsername string `yaml:"git_username,omitempty" json:"git_username,omitempty"`
	// Source says where it was set: a file and line, a flag, a preset.
	Source string `yaml:"-" json:"source,omitempty"`
}

// presets are the credentials --credential NAME enables without any
// config: the hosts a service's tools use, and where its tools keep the
// secret on the host.
var presets = []Credential{
	{
		Name: "github",
		// The REST and GraphQL API (gh), git over HTTPS (Basic), and
		// release assets.
		Hosts:       []string{"api.github.com", "github.com", "uploads.github.com"},
		Env:         []string{"GH_TOKEN", "GITHUB_TOKEN"},
		Command:     []string{"gh", "auth", "token"},
		GitUsername: "x-access-token",
	},
	{
		Name:  "npm",
		Hosts: []string{"registry.npmjs.org"},
		Env:   []string{"NPM_TOKEN"},
		Npmrc: true,
	},
	{
		Name: "pypi",
		// Uploads (twine: Basic __token__:TOKEN); the public index needs
		// none.
		Hosts: []string{"upload.pypi.org"},
		Env:   []string{"TWINE_PASSWORD", "PYPI_TOKEN"},
		Netrc: true,
	},
}

// PresetNames are the names --credential accepts without a config entry.
func PresetNames() []string {
	var out []string
	for _, p := range presets {
		out = append(out, p.Name)
	}
	return out
}

// preset returns the preset called name.
func preset(name string) (Credential, bool) {
	for _, p := range presets {
		if p.Name == name {
			c := p
			c.Hosts, c.Env, c.Command = slices.Clone(p.Hosts), slices.Clone(p.Env), slices.Clone(p.Command)
			return c, true
		}
	}
	return Credential{}, false
}

// applyCredentials merges sandbox.credentials (or --credential) of l.
// A file the sandbox could write may not name one: it could send a
// secret to a host of its choosing.
func (b *builder) applyCredentials(l layer) error {
	if len(l.Credentials) == 0 {
		return nil
	}
	if l.tighten {
		where := "a file inside the workspace"
		if l.root != "" {
			where = "a file inside " + l.root + ", which the sandbox may write"
		}
		return l.Errorf(config.KeyCredentials, "%s cannot be set by %s: it could send a secret to a host of its choosing; put it in %s or pass --credential NAME", config.KeyCredentials, where, b.userDisplay)
	}
	for i, e := range l.Credentials {
		key := config.EntryKey(config.KeyCredentials, i)
		c, err := b.credential(l, key, e)
		if err != nil {
			return err
		}
		if j := slices.IndexFunc(b.p.Credentials, func(x Credential) bool { return x.Name == c.Name }); j >= 0 {
			if credentialNameOnly(e) {
				continue // --credential NAME of one already set
			}
			b.p.Credentials[j] = c
			continue
		}
		b.p.Credentials = append(b.p.Credentials, c)
	}
	return nil
}

// credentialNameOnly says whether e names a credential and sets nothing
// else (--credential NAME, or {name: github}).
func credentialNameOnly(e config.Credential) bool {
	return len(e.Hosts) == 0 && len(e.Env) == 0 && len(e.Command) == 0 && e.File == nil &&
		e.Npmrc == nil && e.Netrc == nil && len(e.Headers) == 0 && len(e.Methods) == 0 && len(e.Paths) == 0 && e.GitUsername == nil
}

// credential builds and checks one entry of l: a preset's name fills in
// what the entry leaves out; a name alone may also be a credential an
// earlier layer defined.
func (b *builder) credential(l layer, key string, e config.Credential) (Credential, error) {
	name := ""
	if e.Name != nil {
		name = *e.Name
	}
	what := fmt.Sprintf("%s entry %d", config.KeyCredentials, indexOf(key)+1)
	if l.IsFlags() {
		what = fmt.Sprintf("--credential %q", name)
	}
	if !validCredentialName(name) {
		return Credential{}, l.Errorf(key, "%s needs a name of letters, digits, '-' and '_' (a preset: %s, or your own)", what, strings.Join(PresetNames(), ", "))
	}
	c, isPreset := preset(name)
	if credentialNameOnly(e) {
		if j := slices.IndexFunc(b.p.Credentials, func(x Credential) bool { return x.Name == name }); j >= 0 {
			return b.p.Credentials[j], nil
		}
		if !isPreset {
			return Credential{}, l.Errorf(key, "%s: no preset and no credential of your config has that name; the presets are %s, and sandbox.credentials in %s defines your own", what, strings.Join(PresetNames(), ", "), b.userDisplay)
		}
	}
	c.Name = name
	c.Source = netOrigin{l, key}.describe()
	if isPreset {
		c.Source = "preset " + name + ", " + c.Source
	}
	if len(e.Hosts) > 0 {
		c.Hosts = e.Hosts
	}
	if len(e.Env) > 0 {
		c.Env = e.Env
	}
	if len(e.Command) > 0 {
		c.Command = e.Command
	}
	if e.File != nil {
		p, err := b.path(l, key+".file", *e.File)
		if err != nil {
			return Credential{}, err
		}
		c.File = p
	}
	if e.Npmrc != nil {
		c.Npmrc = *e.Npmrc
	}
	if e.Netrc != nil {
		c.Netrc = *e.Netrc
	}
	c.Headers, c.Methods, c.Paths = e.Headers, e.Methods, e.Paths
	if e.GitUsername != nil {
		c.GitUsername = *e.GitUsername
	}
	if len(c.Hosts) == 0 {
		return Credential{}, l.Errorf(key, "%s (%s) has no hosts: name the hosts it belongs to, like hosts: [api.example.com]", what, name)
	}
	for _, h := range c.Hosts {
		if why := credentialHost(h); why != "" {
			return Credential{}, l.Errorf(key, "%s (%s): hosts entry %q %s", what, name, h, why)
		}
	}
	if len(c.Env) == 0 && len(c.Command) == 0 && c.File == "" && !c.Npmrc && !c.Netrc {
		return Credential{}, l.Errorf(key, "%s (%s) says nowhere the secret comes from: set env, command, file, npmrc or netrc", what, name)
	}
	for _, v := range c.Env {
		if !validEnvName(v) {
			return Credential{}, l.Errorf(key, "%s (%s): env %q is not a variable name", what, name, v)
		}
	}
	for _, h := range c.Headers {
		if why := credentialHeader(h); why != "" {
			return Credential{}, l.Errorf(key, "%s (%s): header %q %s", what, name, h, why)
		}
	}
	for i, m := range c.Methods {
		if !validToken(m) {
			return Credential{}, l.Errorf(key, "%s (%s): method %q is not an HTTP method, like GET or POST", what, name, m)
		}
		c.Methods[i] = strings.ToUpper(m)
	}
	if c.GitUsername != "" && (len(c.Env) == 0 || !validGitUser(c.GitUsername)) {
		return Credential{}, l.Errorf(key, "%s (%s): git_username needs env (the variable git reads the placeholder from) and a name of letters, digits, '.', '_' and '-'", what, name)
	}
	for _, p := range c.Paths {
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?# \t\r\n") {
			return Credential{}, l.Errorf(key, "%s (%s): path %q must be a path prefix starting with /, like /repos/org/", what, name, p)
		}
	}
	return c, nil
}

// indexOf returns the index of a list entry key ("key[2]" gives 2).
func indexOf(key string) int {
	var i int
	if j := strings.LastIndexByte(key, '['); j >= 0 {
		_, _ = fmt.Sscanf(key[j:], "[%d]", &i)
	}
	return i
}

// validCredentialName says whether s may name a credential.
func validCredentialName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// credentialHost says why h cannot be a credential's host, or "": it
// must be a network entry naming a host (not an address, which a TLS
// certificate authority limited to names cannot sign for), with at most
// a leading "*." label as wildcard, below a domain of two labels.
func credentialHost(h string) string {
	r, err := netrule.Parse(h)
	switch {
	case err != nil:
		return "is not a network entry: " + err.Error()
	case r.IsAddr():
		return "is an address; a credential belongs to host names, like api.example.com"
	}
	name, wild := strings.CutPrefix(r.Host, "*.")
	if strings.Contains(name, "*") || wild && !strings.Contains(name, ".") {
		return "has a wildcard other than a leading *. label below a domain, like *.example.com"
	}
	return ""
}

// credentialHeader says why h cannot carry a credential, or "".
func credentialHeader(h string) string {
	if !validToken(h) {
		return "is not a header name"
	}
	switch http.CanonicalHeaderKey(h) {
	case "Host", "Connection", "Content-Length", "Transfer-Encoding", "Te", "Trailer", "Upgrade", "Proxy-Authorization", "Proxy-Connection", "Keep-Alive":
		return "is a header of the connection, not one that carries a credential"
	}
	return ""
}

// validGitUser says whether s may be git_username: it is written into a
// credential helper's shell line, so only plain characters.
func validGitUser(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return s != "" && len(s) <= 64
}

// validToken says whether s is an HTTP token (a method or header name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c > 0x7e || c <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", c) {
			return false
		}
	}
	return true
}

// finishCredentials checks, once the writable roots are known, that no
// credential's file lies where the sandbox may write, and denies each
// file inside (it may lie in a readable directory).
func (b *builder) finishCredentials() error {
	p := b.p
	for _, c := range p.Credentials {
		if c.File == "" {
			continue
		}
		for _, w := range append([]string{p.Workspace}, p.Write...) {
			// The sandbox's /tmp is its own, not the host's.
			if w != SandboxTmpDir && subpath.Within(c.File, w) {
				return fmt.Errorf("credential %s: its file %s is inside %s, which the sandbox may write: a command could replace the secret; keep it outside every writable directory", c.Name, c.File, w)
			}
		}
		p.Deny = append(p.Deny, c.File)
	}
	return nil
}

// Describe is one line for cordon policy --explain: the credential's
// name, hosts, rules and where its secret comes from; never a value.
func (c Credential) Describe() string {
	var from []string
	for _, v := range c.Env {
		from = append(from, "$"+v)
	}
	if c.File != "" {
		from = append(from, c.File)
	}
	if c.Npmrc {
		from = append(from, "~/.npmrc's _authToken")
	}
	if c.Netrc {
		from = append(from, "~/.netrc's password")
	}
	if len(c.Command) > 0 {
		from = append(from, "the output of `"+strings.Join(c.Command, " ")+"`")
	}
	headers := append([]string{"Authorization"}, c.Headers...)
	s := fmt.Sprintf("%s for %s (TLS ends at cordon's proxy there); the secret from the first of %s; swapped for its placeholder in %s",
		c.Name, strings.Join(c.Hosts, ", "), strings.Join(from, ", "), strings.Join(headers, ", "))
	if len(c.Methods) > 0 {
		s += "; methods " + strings.Join(c.Methods, ", ")
	}
	if len(c.Paths) > 0 {
		s += "; paths " + strings.Join(c.Paths, ", ")
	}
	if c.GitUsername != "" {
		s += "; git over HTTPS answers as " + c.GitUsername + " with the placeholder"
	}
	return s + " (" + c.Source + ")"
}
