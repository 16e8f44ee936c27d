package toolenv

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestHasCredential(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"https://proxy.golang.org,direct", false},
		{"http://proxy.corp:3128", false},
		{"proxy.corp:3128", false},
		{"localhost,127.0.0.1,.corp.example", false},
		{"http://user:pw@proxy.corp:3128", true},
		{"user:pw@proxy.corp:3128", true},
		{"me@example.com", false}, // an e-mail address, not a URL
		{"https://proxy.golang.org|https://tok@athens.corp", true},
		{"https://a.example/simple https://u:p@b.example/simple", true},
		{"https://pkgs.example/simple?access_token=abc", true},
		{"https://pkgs.example/simple?page=2", false},
		{"https://example.com/path@v1", false},                               // an @ after the host is a path
		{"https://npm-proxy.fury.io/1a2B3c4D5e6F7g8H9i0J/acme/", true},       // a token in the path
		{"https://goproxy.example/ghp_abcdefghijklmnop1234/", true},          // a known token prefix
		{"https://gitlab.com/api/v4/projects/12345678/packages/npm/", false}, // digits only
		{"https://artifactory.corp/api/npm/npm-virtual-remote-cache/", false},
	}
	for _, tt := range tests {
		if got := hasCredential(tt.v); got != tt.want {
			t.Errorf("hasCredential(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestSecretName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"registry", false},
		{"@corp:registry", false},
		{"ignore-scripts", false},
		{"email", false},
		{"_authToken", true},
		{"//registry.npmjs.org/:_authToken", true},
		{"_auth", true},
		{"_password", true},
		{"username", true},
		{"certfile", true},
		{"keyfile", true},
		{"NPM_TOKEN", true},
		{"client-cert", true},
		{"MY_SECRET_THING", true},
	}
	for _, tt := range tests {
		if got := secretName(tt.name); got != tt.want {
			t.Errorf("secretName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestParsers(t *testing.T) {
	npmrc := "; comment\n# comment\nregistry = https://r.example/\n@corp:registry=\"https://npm.corp/\"\n[section]\nnot a setting\nca[]=x\n"
	if got, want := parseNpmrc([]byte(npmrc)), [][2]string{{"registry", "https://r.example/"}, {"@corp:registry", "https://npm.corp/"}, {"ca[]", "x"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("parseNpmrc = %q, want %q", got, want)
	}
	pip := "[global]\nindex-url = https://a/simple\nextra-index-url =\n    https://b/simple\n    https://c/simple\ntimeout: 30\n[freeze]\ntimeout = 1\n[install]\ntimeout = 60\ntrusted-host = b\n"
	if got, want := parsePipConf([]byte(pip)), [][2]string{
		{"index-url", "https://a/simple"},
		{"extra-index-url", "https://b/simple https://c/simple"},
		{"timeout", "60"},
		{"trusted-host", "b"},
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("parsePipConf = %q, want %q", got, want)
	}
	goenv := "GOPRIVATE=corp/*\nGOFLAGS=-mod=mod -tags=x\n# not a setting\nlower=1\n"
	if got, want := parseGoEnv([]byte(goenv)), map[string]string{"GOPRIVATE": "corp/*", "GOFLAGS": "-mod=mod -tags=x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("parseGoEnv = %q, want %q", got, want)
	}
}

// TestCollect reads a home with every tool's settings and checks what is
// carried and what is dropped, with the network open and off.
func TestCollect(t *testing.T) {
	home := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".npmrc", "registry=https://r.example/\n//r.example/:_authToken=TOK1\n@corp:registry=${CORP_REG}\n@x:registry=${UNSET_VAR}\nstrict-ssl=false\n@fury:registry=https://npm-proxy.fury.io/${FURY_TOKEN}/acme/\ninit-author-name=${NPM_TOKEN}\n")
	// The project's .npmrc ranks above the user's: its keys are not
	// carried as variables, which would override it.
	write("proj/.npmrc", "strict-ssl=true\n")
	write(".config/go/env", "GOPRIVATE=corp/*\nGOPROXY=https://u:TOK2@athens.corp\nGOAUTH=netrc\nGOPATH="+filepath.Join(home, "go")+"\nGOBIN=/opt/bin\n")
	write(".config/pip/pip.conf", "[global]\nindex-url = https://pypi.corp/simple\nclient-cert = /k.pem\n")
	env := map[string]string{
		"HOME":                  home,
		"CORP_REG":              "https://npm.corp/",
		"HTTPS_PROXY":           "http://proxy:3128",
		"NO_PROXY":              "localhost",
		"GOFLAGS":               "-mod=mod", // the variable wins over the file
		"PIP_TRUSTED_HOST":      "pypi.corp",
		"PIP_CERT":              "/etc/ssl/corp.pem",
		"NPM_CONFIG_FUND":       "false",
		"npm_config__auth":      "TOK3",
		"PIP_CONFIG_FILE":       "/nonexistent/pip.conf",
		"UNRELATED_VARIABLE":    "x",
		"npm_config_userconfig": "",
	}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	environ := func() []string {
		var out []string
		for k, v := range env {
			out = append(out, k+"="+v)
		}
		return out
	}
	res := Collect(Host{Home: home, Workspace: filepath.Join(home, "proj"), Getenv: getenv, Environ: environ, NetworkOpen: true})
	want := map[string]string{
		"npm_config_registry":       "https://r.example/",
		"npm_config_@corp:registry": "https://npm.corp/",
		"NPM_CONFIG_FUND":           "false",
		"GOPRIVATE":                 "corp/*",
		"GOFLAGS":                   "-mod=mod",
		"PIP_INDEX_URL":             "https://pypi.corp/simple",
		"PIP_TRUSTED_HOST":          "pypi.corp",
		"PIP_CERT":                  "/etc/ssl/corp.pem",
		"HTTPS_PROXY":               "http://proxy:3128",
		"NO_PROXY":                  "localhost",
	}
	if !reflect.DeepEqual(res.Env, want) {
		t.Errorf("Env =\n%q\nwant\n%q", res.Env, want)
	}
	var dropped []string
	for _, d := range res.Dropped {
		dropped = append(dropped, d.String())
	}
	all := strings.Join(dropped, "\n")
	for _, secret := range []string{"TOK1", "TOK2", "TOK3", "TOK4", "TOK5"} {
		if strings.Contains(all, secret) {
			t.Errorf("a dropped note shows the secret %s: %s", secret, all)
		}
	}
	for _, v := range res.Env {
		if strings.Contains(v, "TOK") {
			t.Errorf("a secret was carried: %q", v)
		}
	}
	for _, want := range []string{
		"~/.npmrc: //r.example/:_authToken not passed (a credential or a registry's own setting); to let npm use it without seeing it, add {name: NAME, hosts: [r.example], npmrc: true} to sandbox.credentials",
		"~/.npmrc: @x:registry not passed (it names ${UNSET_VAR}, which is not set)",
		"~/.npmrc: @fury:registry not passed (it names ${FURY_TOKEN}, a secret)",
		"~/.npmrc: init-author-name not passed (it names ${NPM_TOKEN}, a secret)",
		"go env GOPROXY (in ~/.config/go/env) not passed (it holds a user name or password); pass it with --env GOPROXY",
		"go env GOAUTH (in ~/.config/go/env) not passed (it gives the go command credentials)",
		"go env GOBIN (in ~/.config/go/env) not passed (a host directory",
		"~/.config/pip/pip.conf: client-cert not passed (a credential); pass it with --env PIP_CLIENT_CERT",
		"npm_config__auth not passed (it holds a credential); pass it with --env npm_config__auth",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("Dropped lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "GOPATH") {
		t.Errorf("GOPATH set to the go command's default was reported: %s", all)
	}

	off := Collect(Host{Home: home, Getenv: getenv, Environ: environ, NetworkOpen: false})
	if _, ok := off.Env["HTTPS_PROXY"]; ok {
		t.Errorf("HTTPS_PROXY carried with the network off")
	}
	found := false
	for _, d := range off.Dropped {
		if d.Var == "HTTPS_PROXY" && d.Why == "the network is off" {
			found = true
		}
	}
	if !found {
		t.Errorf("HTTPS_PROXY dropped with the network off is not reported: %v", off.Dropped)
	}
}
