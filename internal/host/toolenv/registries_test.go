package toolenv

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

func TestURLEntry(t *testing.T) {
	for _, tc := range []struct {
		raw         string
		entry       string
		ok, network bool
	}{
		{"https://proxy.golang.org", "proxy.golang.org:443", true, true},
		{"https://Goproxy.Corp.Example./mod/", "goproxy.corp.example:443", true, true},
		{"http://athens.corp:3000", "athens.corp:3000", true, true},
		{"https://user:TOK@npm.corp/", "npm.corp:443", true, true},
		{"sparse+https://crates.corp/index/", "crates.corp:443", true, true},
		{"registry+https://r.example", "r.example:443", true, true},
		{"git+https://git.example/index.git", "git.example:443", true, true},
		{"ssh://git@git.example:2222/x", "git.example:2222", true, true},
		{"git://git.example/x", "git.example:9418", true, true},
		{"http://[::1]:8080/simple", "[::1]:8080", true, true},
		{"https://10.1.2.3/simple", "10.1.2.3:443", true, true},
		{"direct", "", false, false},
		{"off", "", false, false},
		{"/srv/wheels", "", false, false},
		{"file:///srv/goproxy", "", false, false},
		{"ftp://x.example/", "", false, true},
		{"https://x.example:99999/", "", false, true},
		{"https://", "", false, true},
	} {
		entry, ok, network := urlEntry(tc.raw)
		if entry != tc.entry || ok != tc.ok || network != tc.network {
			t.Errorf("urlEntry(%q) = %q, %v, %v; want %q, %v, %v", tc.raw, entry, ok, network, tc.entry, tc.ok, tc.network)
		}
	}
}

func TestParseCargoConfig(t *testing.T) {
	data := `# cargo config
[source.crates-io]
replace-with = "corp"   # a comment

[source.corp]
registry = "sparse+https://crates.corp.example/index/"

[source."quoted name"]
registry = 'https://lit.example/index'

[registries]
acme = { index = "https://git.acme.example/index.git", token = "x" }
"other" = {index="sparse+https://other.example/"}

[registries.direct]
index = "https://direct.example/ # not a comment"

[[bin]]
index = "ignored"

[net]
retry = 3
git-fetch-with-cli = true
`
	want := map[string]string{
		"source.crates-io.replace-with": "corp",
		"source.corp.registry":          "sparse+https://crates.corp.example/index/",
		"source.quoted name.registry":   "https://lit.example/index",
		"registries.acme.index":         "https://git.acme.example/index.git",
		"registries.acme.token":         "x",
		"registries.other.index":        "sparse+https://other.example/",
		"registries.direct.index":       "https://direct.example/ # not a comment",
	}
	if got := parseCargoConfig([]byte(data)); !reflect.DeepEqual(got, want) {
		t.Errorf("parseCargoConfig =\n%q\nwant\n%q", got, want)
	}
}

func TestGitURLs(t *testing.T) {
	cfg := parseGitConfig([]byte(`[core]
	bare = false
[remote "origin"]
	url = git@github.example:org/repo.git
	fetch = +refs/heads/*:refs/remotes/origin/*
[remote "q"]
	url = "https://q.example/x" ; comment
[url "https://mirror.corp.example/"]
	insteadOf = https://old.example/
	insteadOf = https://old.example/deep/
[url "git@push.example:"]
	pushInsteadOf = https://old.example/
[credential "https://gitlab.corp.example"]
	helper = store
[http "https://*.corp.example"]
	sslVerify
[Section.Sub]
	Key = V
`))
	want := []gitSetting{
		{"core", "", "bare", "false"},
		{"remote", "origin", "url", "git@github.example:org/repo.git"},
		{"remote", "origin", "fetch", "+refs/heads/*:refs/remotes/origin/*"},
		{"remote", "q", "url", "https://q.example/x"},
		{"url", "https://mirror.corp.example/", "insteadof", "https://old.example/"},
		{"url", "https://mirror.corp.example/", "insteadof", "https://old.example/deep/"},
		{"url", "git@push.example:", "pushinsteadof", "https://old.example/"},
		{"credential", "https://gitlab.corp.example", "helper", "store"},
		{"http", "https://*.corp.example", "sslverify", "true"},
		{"section", "sub", "key", "V"},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("parseGitConfig =\n%q\nwant\n%q", cfg, want)
	}
	for _, tc := range []struct {
		raw  string
		push bool
		want string
	}{
		{"https://old.example/deep/x", false, "https://mirror.corp.example/x"}, // the longest prefix wins
		{"https://old.example/x", false, "https://mirror.corp.example/x"},
		{"https://old.example/x", true, "git@push.example:x"},
		{"https://other.example/x", false, "https://other.example/x"},
	} {
		if got := rewriteGitURL(tc.raw, cfg, tc.push); got != tc.want {
			t.Errorf("rewriteGitURL(%q, push %v) = %q, want %q", tc.raw, tc.push, got, tc.want)
		}
	}
	if got, want := hostSideGitHosts(cfg), []string{"mirror.corp.example", "old.example", "mirror.corp.example", "old.example", "push.example", "old.example", "gitlab.corp.example", "*.corp.example"}; !reflect.DeepEqual(got, want) {
		t.Errorf("hostSideGitHosts = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		raw, host, port string
		ok, ssh         bool
	}{
		{"git@github.example:org/repo.git", "github.example", "22", true, true},
		{"github.example:org/repo.git", "github.example", "22", true, true},
		{"ssh://git@GitHub.example:2222/org/repo", "github.example", "2222", true, true},
		{"git+ssh://git@h.example/x", "h.example", "22", true, true},
		{"https://h.example/x", "h.example", "443", true, false},
		{"http://h.example:8080/x", "h.example", "8080", true, false},
		{"git://h.example/x", "h.example", "9418", true, false},
		{"/srv/git/x.git", "", "", false, false},
		{"./x.git", "", "", false, false},
		{"file:///srv/git/x.git", "", "", false, false},
		{"../a:b/x", "", "", false, false}, // a slash before the colon: a path
	} {
		host, port, ok := gitURLHost(tc.raw)
		if host != tc.host || port != tc.port || ok != tc.ok || isSSHURL(tc.raw) != tc.ssh {
			t.Errorf("gitURLHost(%q) = %q, %q, %v (ssh %v); want %q, %q, %v (ssh %v)", tc.raw, host, port, ok, isSSHURL(tc.raw), tc.host, tc.port, tc.ok, tc.ssh)
		}
	}
}

// TestKnownHosts checks known_hosts lines, hashed by ssh-keygen itself.
func TestKnownHosts(t *testing.T) {
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	home := t.TempDir()
	kh := filepath.Join(home, ".ssh", "known_hosts")
	if err := os.MkdirAll(filepath.Dir(kh), 0o700); err != nil {
		t.Fatal(err)
	}
	plain := strings.Join([]string{
		"hashed.example " + key,
		"[hashedport.example]:2222 " + key,
		"plain.example,10.9.8.7 " + key,
		"*.wild.example,!bad.wild.example " + key,
		"@revoked revoked.example " + key,
		"@cert-authority *.ca.example " + key,
		"# comment.example " + key,
		"",
	}, "\n")
	if err := os.WriteFile(kh, []byte(plain), 0o600); err != nil {
		t.Fatal(err)
	}
	if kg, err := exec.LookPath("ssh-keygen"); err == nil {
		// Hash the first two lines as ssh-keygen -H does (it hashes
		// every line without a marker or wildcard).
		first := filepath.Join(home, "first")
		if err := os.WriteFile(first, []byte(strings.Join(strings.Split(plain, "\n")[:2], "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(kg, "-H", "-f", first).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen -H: %v\n%s", err, out)
		}
		hashed, err := os.ReadFile(first)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(hashed), "|1|") {
			t.Fatalf("ssh-keygen -H wrote no hashed entry:\n%s", hashed)
		}
		rest := strings.Join(strings.Split(plain, "\n")[2:], "\n")
		if err := os.WriteFile(kh, append(hashed, rest...), 0o600); err != nil {
			t.Fatal(err)
		}
	} else if testenv.CI() {
		t.Fatal("ssh-keygen is missing: apt-get install openssh-client")
	} else {
		t.Log("ssh-keygen missing: hashed entries are not checked")
	}
	c := newCollector(Host{Home: home, Getenv: func(string) (string, bool) { return "", false }})
	for _, tc := range []struct {
		host, port string
		want       bool
	}{
		{"hashed.example", "22", true},
		{"hashed.example", "2222", false},
		{"hashedport.example", "2222", true},
		{"hashedport.example", "22", false},
		{"plain.example", "22", true},
		{"10.9.8.7", "22", true},
		{"a.wild.example", "22", true},
		{"bad.wild.example", "22", false},
		{"revoked.example", "22", false},
		{"x.ca.example", "22", true},
		{"comment.example", "22", false},
		{"other.example", "22", false},
	} {
		if got := c.knownHost(tc.host, tc.port) != ""; got != tc.want {
			t.Errorf("knownHost(%s, %s) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
}

// regHome is a fake home and workspace for FindRegistries.
type regHome struct {
	t        *testing.T
	home, ws string
	env      map[string]string
}

func newRegHome(t *testing.T) *regHome {
	root := t.TempDir()
	r := &regHome{t: t, home: filepath.Join(root, "home"), env: map[string]string{}}
	r.ws = filepath.Join(r.home, "proj")
	if err := os.MkdirAll(r.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	r.env["HOME"] = r.home
	return r
}

func (r *regHome) write(path, body string) {
	r.t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(r.home, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *regHome) host() Host {
	return Host{
		Home:      r.home,
		Workspace: r.ws,
		Getenv:    func(k string) (string, bool) { v, ok := r.env[k]; return v, ok },
		Environ: func() []string {
			var out []string
			for k, v := range r.env {
				out = append(out, k+"="+v)
			}
			return out
		},
		StateDir: filepath.Join(r.home, ".local", "state", "cordon"),
	}
}

// git runs the real git in the workspace, with the fake home.
func (r *regHome) git(args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.ws
	cmd.Env = []string{"HOME=" + r.home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("git %q: %v\n%s", args, err, out)
	}
}

// TestFindRegistriesConfigured: every tool configured on the host side;
// no tool is on PATH, so nothing is asked for its defaults. What the
// repository's own files name is listed, never allowed.
func TestFindRegistriesConfigured(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git missing")
	}
	r := newRegHome(t)
	r.env["PATH"] = ""
	r.env["GOPROXY"] = "https://goproxy.corp.example/mod|https://u:TOK1@athens.corp.example:3000,direct"
	r.env["GOSUMDB"] = "sum.corp.example+abcdef https://sumdb.corp.example:8443/db"
	r.env["NPM_TOKEN"] = "TOK2"
	r.env["CARGO_REGISTRIES_ENVREG_INDEX"] = "sparse+https://envreg.example/index/"
	r.write(".config/go/env", "GOPRIVATE=git.corp.example/*,*.internal.example/x,exa?ple.com\nGOPROXY=https://ignored.example\n")
	r.write(".npmrc", "registry=https://npm.corp.example/\n@acme:registry=https://npm.acme.example:4873/\n//npm.corp.example/:_authToken=${NPM_TOKEN}\n@missing:registry=${UNSET}/x\n")
	r.write("proj/.npmrc", "registry=https://evil-npm.example/\n@acme:registry=https://npm.acme.example:4873/\n")
	r.write(".config/pip/pip.conf", "[global]\nindex-url = https://pypi.corp.example/simple\nextra-index-url =\n    https://extra1.example/simple\n    https://extra2.example:8080/simple\nfind-links = /srv/wheels https://wheels.example/\n")
	r.write(".cargo/config.toml", "[source.crates-io]\nreplace-with = \"corp\"\n[source.corp]\nregistry = \"sparse+https://crates.corp.example/index/\"\n[registries]\nacme = { index = \"https://git.acme.example/index.git\" }\n")
	r.write(".cargo/registry/index/index.crates.example-0123456789abcdef/config.json", `{"dl":"https://static.crates.example/crates/{crate}/{version}","api":"https://crates.example"}`)
	r.write("proj/.cargo/config.toml", "[registries.evil]\nindex = \"https://evil-crates.example/index\"\n")
	r.write(".gitconfig", "[credential \"https://gitlab.corp.example\"]\n\thelper = store\n[url \"https://mirror.corp.example/\"]\n\tinsteadOf = https://old.example/\n")
	r.write(".ssh/known_hosts", "github.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
	r.git("init", "-q")
	r.git("remote", "add", "origin", "git@github.example:org/repo.git")
	r.git("remote", "add", "upstream", "https://gitlab.corp.example/org/repo.git")
	r.git("remote", "add", "old", "https://old.example/org/repo.git")
	r.git("remote", "add", "fork", "https://git.evil.example/org/repo.git")
	r.git("remote", "add", "corp", "git@git.corp.example:org/repo.git") // GONOPROXY names the host
	r.git("remote", "add", "local", "/srv/git/repo.git")
	h := r.host()
	h.GitCommonDir = filepath.Join(r.ws, ".git")
	got := FindRegistries(h)

	want := []Registry{
		{"goproxy.corp.example:443", "GOPROXY: GOPROXY in the environment", false},
		{"athens.corp.example:3000", "GOPROXY: GOPROXY in the environment", false},
		{"sumdb.corp.example:8443", "GOSUMDB: GOSUMDB in the environment", false},
		{"git.corp.example:443", "GONOPROXY: go env -w GOPRIVATE (so GONOPROXY), in ~/.config/go/env (fetched directly from the code host)", false},
		{"*.internal.example:443", "GONOPROXY: go env -w GOPRIVATE (so GONOPROXY), in ~/.config/go/env (fetched directly from the code host)", false},
		{"npm.corp.example:443", "npm: ~/.npmrc: registry", false},
		{"npm.acme.example:4873", "npm: ~/.npmrc: @acme:registry", false},
		{"pypi.corp.example:443", "pip: ~/.config/pip/pip.conf: index-url", false},
		{"extra1.example:443", "pip: ~/.config/pip/pip.conf: extra-index-url", false},
		{"extra2.example:8080", "pip: ~/.config/pip/pip.conf: extra-index-url", false},
		{"wheels.example:443", "pip: ~/.config/pip/pip.conf: find-links", false},
		{"git.acme.example:443", "cargo: ~/.cargo/config.toml: registries.acme.index", false},
		{"crates.corp.example:443", "cargo: ~/.cargo/config.toml: source.corp.registry", false},
		{"envreg.example:443", "cargo: CARGO_REGISTRIES_ENVREG_INDEX in the environment", false},
		{"index.crates.example:443", "cargo: a registry cargo has used (~/.cargo/registry/index/index.crates.example-0123456789abcdef)", false},
		{"static.crates.example:443", "cargo: a registry cargo has used (~/.cargo/registry/index/index.crates.example-0123456789abcdef): its download host", false},
		{"github.example:22", "git: remote origin (url) of the workspace's repository; github.example is in ~/.ssh/known_hosts", true},
		{"gitlab.corp.example:443", "git: remote upstream (url) of the workspace's repository; your git config names gitlab.corp.example", true},
		{"mirror.corp.example:443", "git: remote old (url) of the workspace's repository; your git config names mirror.corp.example", true},
		{"git.corp.example:22", "git: remote corp (url) of the workspace's repository; git.corp.example is allowed for another tool", true},
	}
	if !reflect.DeepEqual(got.Allow, want) {
		t.Errorf("Allow:\n%s\nwant\n%s", dump(got.Allow), dump(want))
	}
	wantLeft := []Unlisted{
		{"", "GONOPROXY: go env -w GOPRIVATE (so GONOPROXY), in ~/.config/go/env", `the pattern "exa?ple.com" cannot be written as a network rule; allow its hosts with --allow-net HOST:443`},
		{"", "npm: ~/.npmrc: @missing:registry", "it names ${UNSET}, which is not set"},
		{"evil-npm.example:443", "npm: registry in the project's .npmrc", "a repository's own files may only tighten the policy; allow it with --allow-net evil-npm.example:443"},
		{"evil-crates.example:443", "cargo: registries.evil.index in the project's .cargo/config.toml", "a repository's own files may only tighten the policy; allow it with --allow-net evil-crates.example:443"},
		{"git.evil.example:443", "git: remote fork (url) of the workspace's repository", "the remote is written in the repository's .git/config, which may only tighten the policy, and no file outside the workspace names git.evil.example (~/.ssh/known_hosts for ssh, a url, credential or http section of your git config); allow it with --allow-net git.evil.example:443"},
	}
	if !reflect.DeepEqual(got.Unlisted, wantLeft) {
		t.Errorf("Unlisted:\n%s\nwant\n%s", dump(got.Unlisted), dump(wantLeft))
	}
	if s := dump(got); strings.Contains(s, "TOK") {
		t.Errorf("a credential leaked into the registries: %s", s)
	}
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// TestFindRegistriesPipOrder: pip's config files and variables, in pip's
// order; PIP_CONFIG_FILE replaces the user's files when it exists and
// every file when it is /dev/null; no-index drops the indexes.
func TestFindRegistriesPipOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(r *regHome)
		want  []string // entries
	}{
		{"user over legacy", func(r *regHome) {
			r.write(".pip/pip.conf", "[global]\nindex-url = https://legacy.example/simple\n")
			r.write(".config/pip/pip.conf", "[global]\nindex-url = https://user.example/simple\n")
		}, []string{"user.example:443"}},
		{"install section over global", func(r *regHome) {
			r.write(".config/pip/pip.conf", "[install]\nindex_url = https://install.example/simple\n[global]\nindex-url = https://global.example/simple\n")
		}, []string{"install.example:443"}},
		{"virtualenv over user", func(r *regHome) {
			r.write(".config/pip/pip.conf", "[global]\nindex-url = https://user.example/simple\n")
			r.write("venv/pip.conf", "[global]\nindex-url = https://venv.example/simple\n")
			r.env["VIRTUAL_ENV"] = filepath.Join(r.home, "venv")
		}, []string{"venv.example:443"}},
		{"PIP_CONFIG_FILE replaces the user's files", func(r *regHome) {
			r.write(".config/pip/pip.conf", "[global]\nextra-index-url = https://user-extra.example/simple\nindex-url = https://user.example/simple\n")
			r.write("pipconf", "[global]\nindex-url = https://file.example/simple\n")
			r.env["PIP_CONFIG_FILE"] = filepath.Join(r.home, "pipconf")
		}, []string{"file.example:443"}},
		{"PIP_CONFIG_FILE=/dev/null reads no file", func(r *regHome) {
			r.write(".config/pip/pip.conf", "[global]\nindex-url = https://user.example/simple\n")
			r.env["PIP_CONFIG_FILE"] = os.DevNull
			r.env["PIP_EXTRA_INDEX_URL"] = "https://env-extra.example/simple"
		}, []string{"env-extra.example:443"}},
		{"variables win", func(r *regHome) {
			r.write(".config/pip/pip.conf", "[global]\nindex-url = https://user.example/simple\n")
			r.env["PIP_INDEX_URL"] = "http://env.example:3141/root/pypi/+simple/"
		}, []string{"env.example:3141"}},
		{"no-index", func(r *regHome) {
			r.write(".config/pip/pip.conf", "[global]\nno-index = true\nindex-url = https://user.example/simple\nfind-links = https://wheels.example/\n")
		}, []string{"wheels.example:443"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegHome(t)
			r.env["PATH"] = ""
			r.env["XDG_CONFIG_DIRS"] = filepath.Join(r.home, "no-xdg-dirs") // not the host's /etc/xdg
			tc.setup(r)
			c := newCollector(r.host())
			c.regs = &registries{seen: map[string]bool{}}
			c.pipRegistries()
			var got []string
			for _, e := range c.regs.out.Allow {
				got = append(got, e.Entry)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("entries = %q, want %q", got, tc.want)
			}
		})
	}
}

// toolPath is the test's PATH entry for a tool, or "" when the tool is
// missing (its part of the test is then skipped: a tool, not the kernel).
func toolPath(t *testing.T, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		t.Logf("%s missing: its defaults are not checked", name)
		return ""
	}
	return filepath.Dir(p)
}

// ask runs a tool the way a user would, for what the test expects.
func ask(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %q: %v", name, args, err)
	}
	return strings.TrimSpace(string(out))
}

// TestFindRegistriesToolDefaults: with nothing configured, each tool's
// own default, asked of the real go, npm and python3; npm's and pip's
// answers are cached until what they depend on changes.
func TestFindRegistriesToolDefaults(t *testing.T) {
	r := newRegHome(t)
	var dirs []string
	for _, tool := range []string{"go", "npm", "python3"} {
		if d := toolPath(t, tool); d != "" {
			dirs = append(dirs, d)
		}
	}
	r.env["PATH"] = strings.Join(dirs, string(os.PathListSeparator))
	global := filepath.Join(r.home, "npm-global", "npmrc")
	r.write(global, "; npm's global config\n")
	r.env["npm_config_globalconfig"] = global
	env := []string{"PATH=" + r.env["PATH"], "HOME=" + r.home, "GOTOOLCHAIN=local", "npm_config_globalconfig=" + global}
	entries := func() map[string]string {
		got := map[string]string{}
		for _, e := range FindRegistries(r.host()).Allow {
			got[e.Entry] = e.Source
		}
		return got
	}
	got := entries()
	expect := func(rawURL, source string) {
		t.Helper()
		entry, ok, _ := urlEntry(rawURL)
		if !ok {
			t.Fatalf("the tool reported %q, which is no URL", rawURL)
		}
		if got[entry] != source {
			t.Errorf("%s: source %q, want %q (all: %q)", entry, got[entry], source, got)
		}
	}
	if _, err := exec.LookPath("go"); err == nil {
		proxy := ask(t, env, "go", "env", "GOPROXY")
		first, _, _ := strings.Cut(strings.FieldsFunc(proxy, func(r rune) bool { return r == ',' || r == '|' })[0], ",")
		if first != "direct" && first != "off" {
			expect(first, "GOPROXY: go's default, from go env GOPROXY")
		}
		if db := ask(t, env, "go", "env", "GOSUMDB"); db != "off" {
			name, _, _ := strings.Cut(strings.Fields(db)[0], "+")
			expect("https://"+name, "GOSUMDB: go's default, from go env GOSUMDB")
		}
	}
	var npmDefault string
	if _, err := exec.LookPath("npm"); err == nil {
		npmDefault = ask(t, env, "npm", "config", "get", "registry", "--userconfig=/dev/null", "--update-notifier=false", "--logs-max=0")
		expect(npmDefault, "npm: npm's default registry, from npm config get registry")
		if _, err := os.Stat(filepath.Join(r.home, ".npm", "_logs")); err == nil {
			t.Errorf("asking npm left a log in the home directory")
		}
	}
	if _, err := exec.LookPath("python3"); err == nil {
		if out, err := exec.Command("python3", "-c", pipScript).Output(); err == nil {
			var v []string
			if err := json.Unmarshal(out, &v); err != nil || len(v) != 3 {
				t.Fatalf("python3: %q", out)
			}
			expect(v[0], "pip: pip's default index, from python3 (pip's PyPI.simple_url)")
			expect("https://"+v[1], "pip: pip's default file host, from python3 (pip's PyPI.file_storage_domain)")
		}
	}
	if npmDefault == "" {
		return
	}

	// The answer is cached: a planted answer with the same stamp is used.
	cacheFile := filepath.Join(r.home, ".local", "state", "cordon", toolCacheName)
	data, err := os.ReadFile(cacheFile)
	if err != nil {
		t.Fatalf("no cache after asking npm: %v", err)
	}
	var cache map[string]cacheEntry
	if err := json.Unmarshal(data, &cache); err != nil {
		t.Fatal(err)
	}
	e := cache["npm"]
	if len(e.Values) != 2 || e.Values[1] != global {
		t.Fatalf("cached npm answer %q, want the registry and %s", e.Values, global)
	}
	e.Values[0] = "https://cached.example/"
	cache["npm"] = e
	data, _ = json.Marshal(cache)
	if err := os.WriteFile(cacheFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := entries(); got["cached.example:443"] == "" {
		t.Errorf("the cached answer was not used: %q", got)
	}
	// A changed global config is a new question: npm is asked again, and
	// the global config's registry wins over the default.
	r.write(global, "registry=https://global.example/npm/\n")
	got = entries()
	if got["cached.example:443"] != "" || got["global.example:443"] != "npm: ~/npm-global/npmrc (npm's global config): registry" {
		t.Errorf("after changing npm's global config: %q", got)
	}
}

// TestFindRegistriesSetForSandbox: a variable the policy sets for the
// sandbox (--env NAME=VALUE) is what the tools inside use: it wins over
// the host's, and says so.
func TestFindRegistriesSetForSandbox(t *testing.T) {
	r := newRegHome(t)
	r.env["PATH"] = ""
	r.env["GOPROXY"] = "https://host-proxy.example"
	r.env["GOSUMDB"] = "" // empty is unset: with no go to ask, nothing
	r.env["npm_config_registry"] = "https://host-npm.example/"
	h := r.host()
	h.Set = map[string]string{"GOPROXY": "https://set-proxy.example,direct", "PIP_INDEX_URL": "https://set-pypi.example/simple", "CARGO_REGISTRIES_X_INDEX": "sparse+https://set-crates.example/"}
	got := FindRegistries(h).Allow
	want := []Registry{
		{"set-proxy.example:443", "GOPROXY: GOPROXY set for the sandbox (--env or env:)", false},
		{"host-npm.example:443", "npm: npm_config_registry in the environment", false},
		{"set-pypi.example:443", "pip: PIP_INDEX_URL set for the sandbox (--env or env:)", false},
		{"set-crates.example:443", "cargo: CARGO_REGISTRIES_X_INDEX set for the sandbox (--env or env:)", false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Allow:\n%s\nwant\n%s", dump(got), dump(want))
	}
}

// TestFindRegistriesNeverTrustsTheWorkspace: the workspace is writable
// from inside the sandbox, so nothing in it may run on the host or
// widen the ci profile's network: a tool on a PATH directory inside the
// workspace (an activated .venv/bin, directly or through a symbolic link)
// is never run, and the tool settings of files inside the workspace (a
// venv's pip.conf, a CARGO_HOME, PIP_CONFIG_FILE, npm's user config or
// the go env file there) are listed, never allowed.
func TestFindRegistriesNeverTrustsTheWorkspace(t *testing.T) {
	r := newRegHome(t)
	marker := filepath.Join(r.home, "ran")
	venv := filepath.Join(r.ws, ".venv")
	tools := map[string]string{
		"python3": `echo '["https://evil-pypi.example/simple", "evil-files.example", "/nowhere/pip/__init__.py"]'`,
		"go":      `echo '{"GOPROXY":"https://evil-goproxy.example","GOSUMDB":"sum.evil.example","GONOPROXY":""}'`,
		"npm":     `printf 'registry=https://evil-npm.example/\nglobalconfig=/nonexistent/npmrc\n'`,
		"cargo":   `true`,
	}
	for name, answer := range tools {
		r.write(filepath.Join(venv, "bin", name), "#!/bin/sh\necho "+name+" >> "+marker+"\n"+answer+"\n")
		if err := os.Chmod(filepath.Join(venv, "bin", name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A directory outside the workspace that is a link to one inside,
	// and one holding a link to a tool inside.
	linkDir := filepath.Join(r.home, "linkdir")
	if err := os.Symlink(filepath.Join(venv, "bin"), linkDir); err != nil {
		t.Fatal(err)
	}
	toolLinks := filepath.Join(r.home, "toollinks")
	if err := os.MkdirAll(toolLinks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(venv, "bin", "python3"), filepath.Join(toolLinks, "python3")); err != nil {
		t.Fatal(err)
	}
	r.write(filepath.Join(venv, "pip.conf"), "[global]\nindex-url = https://venv-pypi.example/simple\n")
	r.write(filepath.Join(r.ws, "pipconf"), "[global]\nextra-index-url = https://pipconf.example/simple\n")
	r.write(filepath.Join(r.ws, "npmrc"), "registry=https://user-npm.example/\n")
	r.write(filepath.Join(r.ws, "goenv"), "GOPROXY=https://goenv.example\n")
	r.write(filepath.Join(r.ws, ".cargo-home", "config.toml"), "[registries.x]\nindex = \"sparse+https://cargo-home.example/index/\"\n")
	r.write(filepath.Join(r.ws, ".cargo-home", "registry", "index", "cache-host.example-0123456789abcdef", "config.json"), `{"dl":"https://cache-dl.example/api"}`)
	for _, path := range []string{
		filepath.Join(venv, "bin"),
		linkDir + string(os.PathListSeparator) + filepath.Join(venv, "bin"),
		toolLinks,
	} {
		r.env["PATH"] = path
		r.env["VIRTUAL_ENV"] = venv
		r.env["PIP_CONFIG_FILE"] = filepath.Join(r.ws, "pipconf")
		r.env["npm_config_userconfig"] = filepath.Join(r.ws, "npmrc")
		r.env["GOENV"] = filepath.Join(r.ws, "goenv")
		r.env["CARGO_HOME"] = filepath.Join(r.ws, ".cargo-home")
		regs := FindRegistries(r.host())
		if b, err := os.ReadFile(marker); err == nil {
			t.Errorf("PATH=%s: FindRegistries ran tools of the workspace on the host: %q", path, b)
			_ = os.Remove(marker)
		}
		if len(regs.Allow) != 0 {
			t.Errorf("PATH=%s: allowed from the workspace:\n%s", path, dump(regs.Allow))
		}
		unlisted := dump(regs.Unlisted)
		for _, host := range []string{"venv-pypi.example", "pipconf.example", "user-npm.example", "goenv.example", "cargo-home.example"} {
			if !strings.Contains(unlisted, host) {
				t.Errorf("PATH=%s: %s (in a file of the workspace) is not listed as left out:\n%s", path, host, unlisted)
			}
		}
	}
}

// TestFindRegistriesHomeIsTheWorkspace: when the workspace is the home
// directory, the git config and known_hosts there confirm no remote of
// the workspace's repository.
func TestFindRegistriesHomeIsTheWorkspace(t *testing.T) {
	r := newRegHome(t)
	r.ws = r.home
	r.env["PATH"] = ""
	r.write(".gitconfig", "[credential \"https://evil-git.example\"]\n\thelper = store\n")
	r.write(".ssh/known_hosts", "evil-ssh.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
	r.write(".git/config", "[remote \"a\"]\n\turl = https://evil-git.example/x.git\n[remote \"b\"]\n\turl = ssh://git@evil-ssh.example/x.git\n")
	h := r.host()
	h.GitCommonDir = filepath.Join(r.ws, ".git")
	regs := FindRegistries(h)
	if len(regs.Allow) != 0 {
		t.Errorf("allowed:\n%s", dump(regs.Allow))
	}
	u := dump(regs.Unlisted)
	for _, host := range []string{"evil-git.example:443", "evil-ssh.example:22"} {
		if !strings.Contains(u, host) {
			t.Errorf("%s not listed as left out:\n%s", host, u)
		}
	}
}
