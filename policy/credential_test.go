package policy

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/config"
)

// TestCredentials: sandbox.credentials is taken from the user config, a
// --config file outside every writable root and --credential; a preset
// fills in what an entry leaves out; its hosts are allowed and the
// network goes through the proxy.
func TestCredentials(t *testing.T) {
	f := newFixture(t)
	f.userConfig(`sandbox:
  credentials:
    - name: api
      hosts: ["api.example.com", "*.svc.example.com:8443"]
      env: API_TOKEN
      headers: [X-Api-Key]
      methods: [get, POST]
      paths: [/v1/]
`)
	p := f.mustLoad(Options{Flags: flags(func(l *config.Layer) {
		l.Credentials = []config.Credential{{Name: config.Ptr("github")}, {Name: config.Ptr("api")}}
	})})
	if len(p.Credentials) != 2 {
		t.Fatalf("credentials = %+v, want api and github", p.Credentials)
	}
	api, gh := p.Credentials[0], p.Credentials[1]
	if api.Name != "api" || !slices.Equal(api.Env, []string{"API_TOKEN"}) || !slices.Equal(api.Methods, []string{"GET", "POST"}) ||
		!slices.Equal(api.Headers, []string{"X-Api-Key"}) || !slices.Equal(api.Paths, []string{"/v1/"}) {
		t.Errorf("api = %+v", api)
	}
	if gh.Name != "github" || !slices.Contains(gh.Hosts, "api.github.com") || !slices.Equal(gh.Command, []string{"gh", "auth", "token"}) {
		t.Errorf("github = %+v", gh)
	}
	if p.Network.Mode != NetFiltered {
		t.Errorf("network mode = %s, want filtered (the proxy swaps the secret)", p.Network.Mode)
	}
	for _, h := range []string{"*", "api.example.com", "*.svc.example.com:8443", "github.com"} {
		if !slices.Contains(p.Network.Allow, h) {
			t.Errorf("network allow %v lacks %s", p.Network.Allow, h)
		}
	}

	// A denied network with a credential reaches its hosts only.
	f = newFixture(t)
	p = f.mustLoad(Options{Flags: flags(func(l *config.Layer) {
		l.Network.Mode = config.Ptr("deny")
		l.Credentials = []config.Credential{{Name: config.Ptr("npm")}}
	})})
	if p.Network.Mode != NetFiltered || !slices.Equal(p.Network.Allow, []string{"registry.npmjs.org"}) {
		t.Errorf("deny + npm: network %s %v, want filtered [registry.npmjs.org]", p.Network.Mode, p.Network.Allow)
	}
}

// TestCredentialsRefusedFromWritableFiles: a file the sandbox could write
// (the workspace's .cordon.yaml, a --config inside the workspace) cannot
// name a credential: it could send the secret to a host of its choosing.
func TestCredentialsRefusedFromWritableFiles(t *testing.T) {
	const body = "sandbox:\n  credentials:\n    - name: github\n      hosts: [evil.example]\n"
	for _, tc := range []struct {
		name string
		opts func(f *fixture) Options
	}{
		{"workspace .cordon.yaml", func(f *fixture) Options { f.wsConfig(body); return Options{} }},
		{"--config inside the workspace", func(f *fixture) Options {
			return Options{ConfigFiles: []string{f.write(filepath.Join(f.ws, "c.yaml"), body)}}
		}},
		{"preset name only", func(f *fixture) Options {
			f.wsConfig("sandbox:\n  credentials: [{name: github}]\n")
			return Options{}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			_, err := f.load(tc.opts(f))
			if err == nil || !strings.Contains(err.Error(), "sandbox.credentials cannot be set by a file inside the workspace: it could send a secret to a host of its choosing") {
				t.Fatalf("err = %v, want the credentials refusal", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("the refusal is more than one line: %q", err)
			}
		})
	}
	// A --config outside every writable root may.
	f := newFixture(t)
	cfg := f.write(filepath.Join(f.home, "creds.yaml"), "sandbox:\n  credentials:\n    - {name: own, hosts: [api.example.com], env: OWN}\n")
	if p := f.mustLoad(Options{ConfigFiles: []string{cfg}}); len(p.Credentials) != 1 {
		t.Errorf("credentials from a --config outside the workspace = %+v", p.Credentials)
	}
}

// TestCredentialErrors: each bad entry is one line naming what is wrong.
func TestCredentialErrors(t *testing.T) {
	for _, tc := range []struct {
		name, config, flag, want string
	}{
		{"unknown flag name", "", "nope", `--credential "nope": no preset and no credential of your config has that name; the presets are github, npm, pypi`},
		{"no hosts", "{name: own, env: X}", "", "has no hosts"},
		{"no source", "{name: own, hosts: [a.example.com]}", "", "says nowhere the secret comes from"},
		{"address host", "{name: own, hosts: [10.0.0.1], env: X}", "", "is an address"},
		{"wide wildcard", "{name: own, hosts: ['*.com'], env: X}", "", "has a wildcard other than a leading *. label"},
		{"mid wildcard", "{name: own, hosts: ['a.*.com'], env: X}", "", "has a wildcard other than a leading *. label"},
		{"bad header", "{name: own, hosts: [a.example.com], env: X, headers: [Host]}", "", "is a header of the connection"},
		{"bad path", "{name: own, hosts: [a.example.com], env: X, paths: [v1]}", "", "must be a path prefix starting with /"},
		{"bad env", "{name: own, hosts: [a.example.com], env: '1X'}", "", "is not a variable name"},
		{"git user with a shell character", "{name: own, hosts: [a.example.com], env: X, git_username: 'a;b'}", "", "git_username needs env"},
		{"git user without env", "{name: own, hosts: [a.example.com], file: /x, git_username: agent}", "", "git_username needs env"},
		{"file in workspace", "{name: own, hosts: [a.example.com], file: '${PROJECT_DIR}/tok'}", "", "which the sandbox may write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.config != "" {
				f.userConfig("sandbox:\n  credentials:\n    - " + tc.config + "\n")
			}
			var fl *config.Layer
			if tc.flag != "" {
				fl = flags(func(l *config.Layer) { l.Credentials = []config.Credential{{Name: config.Ptr(tc.flag)}} })
			}
			_, err := f.load(Options{Flags: fl})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line with %q", err, tc.want)
			}
		})
	}
}

// TestCredentialFileDenied: a credential's file is denied inside, even
// in a directory the sandbox may read.
func TestCredentialFileDenied(t *testing.T) {
	f := newFixture(t)
	tok := f.write(filepath.Join(f.home, "tokens", "api"), "s3cret\n")
	f.userConfig("sandbox:\n  credentials:\n    - {name: own, hosts: [a.example.com], file: ~/tokens/api}\n")
	p := f.mustLoad(Options{Flags: flags(func(l *config.Layer) { l.Filesystem.Read = []string{filepath.Dir(tok)} })})
	if !slices.Contains(p.Deny, tok) || p.Credentials[0].File != tok {
		t.Errorf("deny = %v, credential = %+v; want %s denied", p.Deny, p.Credentials[0], tok)
	}
}
