package policy

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/config"
)

// fixture is a fake host: a home directory, a workspace inside it and an
// XDG config directory, all under t.TempDir().
type fixture struct {
	t    *testing.T
	home string
	ws   string
	cwd  string
	env  map[string]string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, home: filepath.Join(root, "home", "u"), env: map[string]string{}}
	f.ws = filepath.Join(f.home, "proj")
	f.cwd = f.ws
	for _, d := range []string{f.ws, filepath.Join(f.home, ".config", "cordon")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fixture) host() Host {
	return Host{
		Home: f.home,
		Cwd:  f.cwd,
		Getenv: func(k string) (string, bool) {
			v, ok := f.env[k]
			return v, ok
		},
	}
}

// write writes a file (creating directories) and returns its path.
func (f *fixture) write(path, content string) string {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return path
}

func (f *fixture) userConfig(content string) string {
	return f.write(filepath.Join(f.home, ".config", "cordon", "config.yaml"), content)
}

func (f *fixture) wsConfig(content string) string {
	return f.write(filepath.Join(f.ws, ".cordon.yaml"), content)
}

func (f *fixture) load(opts Options) (*Policy, error) {
	opts.Host = f.host()
	return Load(opts)
}

func (f *fixture) mustLoad(opts Options) *Policy {
	f.t.Helper()
	p, err := f.load(opts)
	if err != nil {
		f.t.Fatalf("Load: %v", err)
	}
	return p
}

// flags returns a flags layer with fn applied.
func flags(fn func(l *config.Layer)) *config.Layer {
	l := config.NewFlags()
	fn(l)
	return l
}

// expandAll replaces ${HOME}, ${PROJECT_DIR} and ${TMPDIR} the way Load does.
func (f *fixture) expandAll(in []string) []string {
	out := []string{}
	sum := sha256.Sum256([]byte(f.ws))
	cache := filepath.Join(f.home, ".cache", "cordon", "sandbox", fmt.Sprintf("%x", sum[:12]))
	r := strings.NewReplacer("${HOME}", f.home, "${PROJECT_DIR}", f.ws, "${TMPDIR}", "/tmp", "${SANDBOX_CACHE}", cache)
	for _, s := range in {
		out = append(out, r.Replace(s))
	}
	return out
}

func TestProfiles(t *testing.T) {
	if got, want := Profiles(), []string{"minimal", "development", "ci", "untrusted"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Profiles() = %q, want %q", got, want)
	}
	type want struct {
		mode      Mode
		homeReads bool
		write     []string
		net       NetMode
		res       Resources
	}
	for name, w := range map[string]want{
		"minimal":     {ModeStandard, false, []string{}, NetDeny, Resources{64, 1024, 60, 64}},
		"development": {ModeStandard, true, []string{"${PROJECT_DIR}", "/tmp", "${SANDBOX_CACHE}"}, NetOpen, Resources{1024, 8192, 0, 4096}},
		"ci":          {ModeStandard, true, []string{"${PROJECT_DIR}", "/tmp", "${SANDBOX_CACHE}"}, NetFiltered, Resources{512, 4096, 3600, 1024}},
		"untrusted":   {ModeStrict, false, []string{"/tmp"}, NetDeny, Resources{64, 1024, 300, 64}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			p := f.mustLoad(Options{SkipUserConfig: true, Flags: flags(func(l *config.Layer) { l.Profile = config.Ptr(name) })})
			read := append(slices.Clone(SystemReads), f.ws)
			if w.homeReads {
				read = append(read, f.expandAll(DevelopmentHomeReads)...)
			}
			if p.Profile != name || p.Mode != w.mode {
				t.Errorf("profile/mode = %s/%s, want %s/%s", p.Profile, p.Mode, name, w.mode)
			}
			if !reflect.DeepEqual(p.Read, read) {
				t.Errorf("Read = %q\nwant %q", p.Read, read)
			}
			if !reflect.DeepEqual(p.Write, f.expandAll(w.write)) {
				t.Errorf("Write = %q, want %q", p.Write, f.expandAll(w.write))
			}
			if p.Network.Mode != w.net {
				t.Errorf("Network.Mode = %s, want %s", p.Network.Mode, w.net)
			}
			if p.Resources != w.res {
				t.Errorf("Resources = %+v, want %+v", p.Resources, w.res)
			}
			wantDeny := f.expandAll(DefaultDeny)
			if !reflect.DeepEqual(p.Deny, wantDeny) {
				t.Errorf("Deny = %q\nwant %q", p.Deny, wantDeny)
			}
			if !slices.Contains(p.Deny, filepath.Join(f.home, ".ssh")) || !slices.Contains(p.Deny, "**/.env") {
				t.Errorf("Deny misses ~/.ssh or **/.env: %q", p.Deny)
			}
			if !reflect.DeepEqual(p.DenyWrite, append(f.expandAll(HomeProtected), filepath.Join(f.home, ".config", "cordon"))) {
				t.Errorf("DenyWrite = %q", p.DenyWrite)
			}
			if !reflect.DeepEqual(p.Protected, Protected) || !slices.Contains(p.Protected, "**/.git/hooks/") {
				t.Errorf("Protected = %q", p.Protected)
			}
			if !reflect.DeepEqual(p.Env.Pass, DefaultEnvPass) || !reflect.DeepEqual(p.Env.Set, map[string]string{"TMPDIR": "/tmp"}) {
				t.Errorf("Env = %+v", p.Env)
			}
			wantAudit := Audit{Enabled: true, LogFile: filepath.Join(f.home, ".local", "state", "cordon", "audit.jsonl"), LogDenied: true, MaxSizeMB: DefaultAuditMaxSizeMB}
			if p.Audit != wantAudit {
				t.Errorf("Audit = %+v, want %+v", p.Audit, wantAudit)
			}
			if p.OnViolation != "block" || p.Backend != "auto" || p.BwrapPath != "" || p.Timeout != 0 || p.Workspace != f.ws {
				t.Errorf("defaults: on_violation %q backend %q bwrap %q timeout %v workspace %q", p.OnViolation, p.Backend, p.BwrapPath, p.Timeout, p.Workspace)
			}
		})
	}
	if _, err := Profile("nope"); err == nil || !strings.Contains(err.Error(), `unknown profile "nope"`) {
		t.Errorf("Profile(nope) = %v", err)
	}
	a, _ := Profile("development")
	a.Filesystem.Read[0] = "changed"
	b, _ := Profile("development")
	if b.Filesystem.Read[0] != "/usr" || SystemReads[0] != "/usr" {
		t.Errorf("Profile returns shared slices")
	}
}

func TestDefaultProfileIsDevelopment(t *testing.T) {
	f := newFixture(t)
	p := f.mustLoad(Options{})
	if p.Profile != "development" || p.Mode != ModeStandard || p.Network.Mode != NetOpen {
		t.Errorf("default = %s/%s/%s", p.Profile, p.Mode, p.Network.Mode)
	}
}

func TestLayeringOrder(t *testing.T) {
	type layers struct{ user, conf, flag, ws bool }
	mem := func(n int) string { return fmt.Sprintf("sandbox:\n  resources:\n    max_memory_mb: %d\n", n) }
	for _, tc := range []struct {
		l    layers
		want int
	}{
		{layers{}, 8192},
		{layers{user: true}, 4000},
		{layers{user: true, conf: true}, 3000},
		{layers{user: true, conf: true, flag: true}, 2000},
		{layers{user: true, conf: true, flag: true, ws: true}, 1000},
		{layers{conf: true, ws: true}, 1000},
		{layers{user: true, flag: true}, 2000},
	} {
		f := newFixture(t)
		opts := Options{}
		if tc.l.user {
			f.userConfig(mem(4000))
		}
		if tc.l.conf {
			opts.ConfigFiles = []string{f.write(filepath.Join(f.home, "c1.yaml"), mem(3000))}
		}
		if tc.l.flag {
			opts.Flags = flags(func(l *config.Layer) { l.Resources.MaxMemoryMB = config.Ptr(2000) })
		}
		if tc.l.ws {
			f.wsConfig(mem(1000))
		}
		p := f.mustLoad(opts)
		if p.Resources.MaxMemoryMB != tc.want {
			t.Errorf("%+v: max memory = %d, want %d", tc.l, p.Resources.MaxMemoryMB, tc.want)
		}
	}
}

func TestLayeringListsAccumulateAndProfileChoice(t *testing.T) {
	f := newFixture(t)
	f.userConfig("sandbox:\n  profile: ci\n  filesystem:\n    read: [/u]\n  env: [A, B=user]\n")
	c1 := f.write(filepath.Join(f.home, "c1.yaml"), "sandbox:\n  profile: minimal\n  filesystem:\n    read: [/c1, /u]\n  env: [B=c1]\n")
	c2 := f.write(filepath.Join(f.home, "c2.yaml"), "sandbox:\n  filesystem:\n    read: [/c2]\n")
	f.wsConfig("sandbox:\n  filesystem:\n    deny: [/w]\n")
	p := f.mustLoad(Options{ConfigFiles: []string{c1, c2}, Flags: flags(func(l *config.Layer) {
		l.Filesystem.Read = []string{"/flag"}
		l.Filesystem.Deny = []string{"/fd"}
	})})
	if p.Profile != "minimal" {
		t.Errorf("profile = %s, want minimal (the last layer setting it)", p.Profile)
	}
	wantRead := append(append(slices.Clone(SystemReads), f.ws), "/u", "/c1", "/c2", "/flag")
	if !reflect.DeepEqual(p.Read, wantRead) {
		t.Errorf("Read = %q\nwant %q", p.Read, wantRead)
	}
	if n := len(p.Deny); n < 2 || p.Deny[n-2] != "/fd" || p.Deny[n-1] != "/w" {
		t.Errorf("Deny should end with /fd, /w: %q", p.Deny)
	}
	if p.Env.Set["B"] != "c1" || !slices.Contains(p.Env.Pass, "A") {
		t.Errorf("Env = %+v", p.Env)
	}

	// Flags choose the profile over config files.
	p = f.mustLoad(Options{ConfigFiles: []string{c1}, Flags: flags(func(l *config.Layer) { l.Profile = config.Ptr("untrusted") })})
	if p.Profile != "untrusted" {
		t.Errorf("profile = %s, want untrusted", p.Profile)
	}
}

func TestUserConfigLocation(t *testing.T) {
	f := newFixture(t)
	xdg := filepath.Join(f.home, "xdg")
	f.write(filepath.Join(xdg, "cordon", "config.yaml"), "sandbox:\n  timeout: 7s\n")
	f.userConfig("sandbox:\n  timeout: 9s\n")

	if p := f.mustLoad(Options{}); p.Timeout != 9*time.Second {
		t.Errorf("default location: timeout %v, want 9s", p.Timeout)
	}
	f.env["XDG_CONFIG_HOME"] = xdg
	if p := f.mustLoad(Options{}); p.Timeout != 7*time.Second {
		t.Errorf("$XDG_CONFIG_HOME: timeout %v, want 7s", p.Timeout)
	}
	opts := Options{Host: f.host(), SkipUserConfig: true}
	opts.Host.XDGConfigHome = xdg
	p, err := Load(opts)
	if err != nil || p.Timeout != 0 {
		t.Errorf("SkipUserConfig: timeout %v, err %v", p.Timeout, err)
	}
	if got := UserConfigPath(Host{Home: "/h", XDGConfigHome: "/x"}); got != "/x/cordon/config.yaml" {
		t.Errorf("UserConfigPath = %s", got)
	}
}

func TestTightenOnlyRejects(t *testing.T) {
	const hint = "such files may only add restrictions; put it in ~/.config/cordon/config.yaml"
	for _, tc := range []struct {
		yaml string
		line int
		msg  string
	}{
		{"sandbox:\n  filesystem:\n    write: [/x]\n", 3, "sandbox.filesystem.write cannot be set by a file inside the workspace: " + hint + " or pass --allow-write"},
		{"sandbox:\n  filesystem:\n    read: [/x]\n", 3, "sandbox.filesystem.read cannot be set by a file inside the workspace: " + hint + " or pass --allow-read"},
		{"sandbox:\n  network:\n    allow: [x.com]\n", 3, "sandbox.network.allow cannot be set by a file inside the workspace: " + hint + " or pass --allow-net"},
		{"sandbox:\n  network:\n    mode: open\n", 3, "sandbox.network.mode: open cannot be set by a file inside the workspace: " + hint + " or pass --net"},
		{"sandbox:\n  network:\n    enabled: true\n", 3, "sandbox.network.enabled: true cannot be set by a file inside the workspace: " + hint + " or pass --net"},
		{"sandbox:\n  network:\n    forward_ports: [80]\n", 3, "sandbox.network.forward_ports cannot be set by a file inside the workspace: " + hint + " or pass --forward-port"},
		{"sandbox:\n  unix_sockets: [/run/x.sock]\n", 2, "sandbox.unix_sockets cannot be set by a file inside the workspace: " + hint + " or pass --allow-unix-socket"},
		{"sandbox:\n  env: [SECRET]\n", 2, "sandbox.env cannot be set by a file inside the workspace: " + hint + " or pass --env"},
		{"sandbox:\n  mode: off\n", 2, "sandbox.mode: off (weaker than the current standard) cannot be set by a file inside the workspace: " + hint + " or pass --mode"},
		{"sandbox:\n  mode: permissive\n", 2, "sandbox.mode: permissive (weaker than the current standard) cannot be set by a file inside the workspace: " + hint + " or pass --mode"},
		{"sandbox:\n  enabled: false\n", 2, "sandbox.enabled: false cannot be set by a file inside the workspace: " + hint + " or pass --no-sandbox"},
		{"sandbox:\n  audit:\n    enabled: false\n", 3, "sandbox.audit.enabled: false cannot be set by a file inside the workspace: " + hint},
		{"sandbox:\n  audit:\n    log_denied: false\n", 3, "sandbox.audit.log_denied: false cannot be set by a file inside the workspace: " + hint},
		{"sandbox:\n  audit:\n    log_file: /tmp/x\n", 3, "sandbox.audit.log_file cannot be set by a file inside the workspace: " + hint + " or pass --audit-log"},
		{"sandbox:\n  audit:\n    log_allowed: true\n", 3, "sandbox.audit.log_allowed cannot be set by a file inside the workspace: " + hint},
		{"sandbox:\n  audit:\n    max_size_mb: 1\n", 3, "sandbox.audit.max_size_mb: 1 (below the current 10) cannot be set by a file inside the workspace: " + hint},
		{"sandbox:\n  backend: none\n", 2, "sandbox.backend cannot be set by a file inside the workspace: " + hint + " or pass --backend"},
		{"sandbox:\n  bwrap_path: /x/bwrap\n", 2, "sandbox.bwrap_path cannot be set by a file inside the workspace: " + hint},
		{"sandbox:\n  resources:\n    max_memory_mb: 9000\n", 3, "sandbox.resources.max_memory_mb: 9000 (above the current 8192) cannot be set by a file inside the workspace: " + hint + " or pass --max-memory"},
		{"sandbox:\n  resources:\n    max_processes: 2000\n", 3, "sandbox.resources.max_processes: 2000 (above the current 1024) cannot be set by a file inside the workspace: " + hint + " or pass --max-procs"},
		{"sandbox:\n  resources:\n    max_file_size_mb: 5000\n", 3, "sandbox.resources.max_file_size_mb: 5000 (above the current 4096) cannot be set by a file inside the workspace: " + hint + " or pass --max-file-size"},
	} {
		f := newFixture(t)
		path := f.wsConfig(tc.yaml)
		_, err := f.load(Options{})
		want := fmt.Sprintf("%s:%d: %s", path, tc.line, tc.msg)
		if err == nil || err.Error() != want {
			t.Errorf(".cordon.yaml %q:\n got %v\nwant %s", tc.yaml, err, want)
		}
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Line != tc.line {
			t.Errorf("error %v is not a *config.Error at line %d", err, tc.line)
		}

		// The same file passed as --config from inside the workspace is
		// tighten-only too.
		f2 := newFixture(t)
		inWS := f2.write(filepath.Join(f2.ws, "sub", "policy.yaml"), tc.yaml)
		_, err = f2.load(Options{ConfigFiles: []string{inWS}})
		want = fmt.Sprintf("%s:%d: %s", inWS, tc.line, tc.msg)
		if err == nil || err.Error() != want {
			t.Errorf("--config in workspace %q:\n got %v\nwant %s", tc.yaml, err, want)
		}
		// Outside the workspace it is accepted.
		outside := f2.write(filepath.Join(f2.home, "policy.yaml"), tc.yaml)
		if _, err := f2.load(Options{ConfigFiles: []string{outside}}); err != nil {
			t.Errorf("--config outside the workspace %q: %v", tc.yaml, err)
		}
	}
}

func TestTightenOnlyRelativeConfigPathAndSymlink(t *testing.T) {
	f := newFixture(t)
	f.write(filepath.Join(f.ws, "loose.yaml"), "sandbox:\n  filesystem:\n    write: [/x]\n")
	if _, err := f.load(Options{ConfigFiles: []string{"loose.yaml"}}); err == nil || !strings.Contains(err.Error(), "cannot be set by a file inside the workspace") {
		t.Errorf("relative --config inside the workspace: %v", err)
	}
	link := filepath.Join(f.home, "link.yaml")
	if err := os.Symlink(filepath.Join(f.ws, "loose.yaml"), link); err != nil {
		t.Fatal(err)
	}
	if _, err := f.load(Options{ConfigFiles: []string{link}}); err == nil || !strings.Contains(err.Error(), "cannot be set by a file inside the workspace") {
		t.Errorf("symlink to a --config inside the workspace: %v", err)
	}
}

func TestTightenOnlyAccepts(t *testing.T) {
	for _, tc := range []struct {
		base  string // user config
		yaml  string // .cordon.yaml
		check func(f *fixture, p *Policy) bool
	}{
		{"", "sandbox:\n  filesystem:\n    deny: [\"**/*.pem\", \"${PROJECT_DIR}/private\"]\n", func(f *fixture, p *Policy) bool {
			return slices.Contains(p.Deny, "**/*.pem") && slices.Contains(p.Deny, filepath.Join(f.ws, "private"))
		}},
		{"", "sandbox:\n  filesystem:\n    deny_write: [\"${PROJECT_DIR}/vendor\", Makefile]\n", func(f *fixture, p *Policy) bool {
			return slices.Contains(p.DenyWrite, filepath.Join(f.ws, "vendor")) && slices.Contains(p.DenyWrite, "Makefile")
		}},
		{"", "sandbox:\n  network:\n    deny: [\"evil.com:*\"]\n", func(f *fixture, p *Policy) bool {
			// An open network with deny entries is filtered, allowing "*".
			return slices.Equal(p.Network.Deny, []string{"evil.com:*"}) && p.Network.Mode == NetFiltered && slices.Equal(p.Network.Allow, []string{"*"})
		}},
		{"", "sandbox:\n  network:\n    mode: loopback\n", func(f *fixture, p *Policy) bool { return p.Network.Mode == NetLoopback }},
		{"sandbox:\n  network:\n    allow: [x.com]\n", "sandbox:\n  network:\n    mode: loopback\n", func(f *fixture, p *Policy) bool {
			return p.Network.Mode == NetLoopback && len(p.Network.Allow) == 0
		}},
		{"", "sandbox:\n  network:\n    enabled: false\n", func(f *fixture, p *Policy) bool { return p.Network.Mode == NetDeny }},
		{"sandbox:\n  network:\n    allow: [x.com]\n", "sandbox:\n  network:\n    mode: deny\n", func(f *fixture, p *Policy) bool { return p.Network.Mode == NetDeny }},
		{"", "sandbox:\n  resources:\n    max_memory_mb: 512\n    max_processes: 10\n    max_file_size_mb: 1\n", func(f *fixture, p *Policy) bool {
			return p.Resources == Resources{MaxProcesses: 10, MaxMemoryMB: 512, MaxCPUSeconds: 0, MaxFileSizeMB: 1}
		}},
		{"", "sandbox:\n  resources:\n    max_cpu_seconds: 999999\n", func(f *fixture, p *Policy) bool { return p.Resources.MaxCPUSeconds == 999999 }},
		{"", "sandbox:\n  mode: strict\n", func(f *fixture, p *Policy) bool { return p.Mode == ModeStrict }},
		{"", "sandbox:\n  mode: standard\n", func(f *fixture, p *Policy) bool { return p.Mode == ModeStandard }},
		{"sandbox:\n  enabled: false\n", "sandbox:\n  enabled: true\n", func(f *fixture, p *Policy) bool { return p.Mode == ModeStandard }},
		{"sandbox:\n  on_violation: log\n", "sandbox:\n  on_violation: block\n", func(f *fixture, p *Policy) bool { return p.OnViolation == "block" }},
		{"sandbox:\n  on_violation: log\n", "sandbox:\n  on_violation: warn\n", func(f *fixture, p *Policy) bool { return p.OnViolation == "warn" }},
		{"", "sandbox:\n  timeout: 5m\n", func(f *fixture, p *Policy) bool { return p.Timeout == 5*time.Minute }},
		{"sandbox:\n  timeout: 10m\n", "sandbox:\n  timeout: 1m\n", func(f *fixture, p *Policy) bool { return p.Timeout == time.Minute }},
		{"", "sandbox:\n  audit:\n    enabled: true\n    log_denied: true\n", func(f *fixture, p *Policy) bool { return p.Audit.Enabled && p.Audit.LogDenied }},
		{"", "sandbox:\n  audit:\n    max_size_mb: 50\n", func(f *fixture, p *Policy) bool { return p.Audit.MaxSizeMB == 50 }},
		{"", "sandbox:\n  audit:\n    max_size_mb: 0\n", func(f *fixture, p *Policy) bool { return p.Audit.MaxSizeMB == 0 && p.Audit.MaxSize() == 0 }},
		{"sandbox:\n  audit:\n    max_size_mb: 1\n", "", func(f *fixture, p *Policy) bool { return p.Audit.MaxSize() == 1<<20 }},
		{"", "", func(f *fixture, p *Policy) bool { return p.Mode == ModeStandard }},
	} {
		f := newFixture(t)
		if tc.base != "" {
			f.userConfig(tc.base)
		}
		f.wsConfig(tc.yaml)
		p, err := f.load(Options{})
		if err != nil {
			t.Errorf("%q then %q: %v", tc.base, tc.yaml, err)
			continue
		}
		if !tc.check(f, p) {
			t.Errorf("%q then %q: unexpected policy %+v", tc.base, tc.yaml, p)
		}
	}
}

func TestTightenOnlyRejectsWeakeningEarlierLayers(t *testing.T) {
	for _, tc := range []struct{ base, yaml, msg string }{
		{"sandbox:\n  mode: strict\n", "sandbox:\n  mode: standard\n", "sandbox.mode: standard (weaker than the current strict)"},
		{"sandbox:\n  timeout: 1m\n", "sandbox:\n  timeout: 2m\n", "sandbox.timeout: 2m0s (longer than the current 1m0s)"},
		{"sandbox:\n  on_violation: warn\n", "sandbox:\n  on_violation: log\n", "sandbox.on_violation: log (weaker than the current warn)"},
		{"sandbox:\n  resources:\n    max_cpu_seconds: 10\n", "sandbox:\n  resources:\n    max_cpu_seconds: 11\n", "sandbox.resources.max_cpu_seconds: 11 (above the current 10)"},
		{"sandbox:\n  audit:\n    max_size_mb: 0\n", "sandbox:\n  audit:\n    max_size_mb: 100\n", "sandbox.audit.max_size_mb: 100 (the current 0 never rotates)"},
		{"sandbox:\n  network:\n    enabled: false\n", "sandbox:\n  network:\n    mode: loopback\n", "sandbox.network.mode: loopback (looser than the current deny)"},
	} {
		f := newFixture(t)
		f.userConfig(tc.base)
		path := f.wsConfig(tc.yaml)
		_, err := f.load(Options{})
		if err == nil || !strings.HasPrefix(err.Error(), path+":2: "+tc.msg+" cannot be set by a file inside the workspace") &&
			!strings.HasPrefix(err.Error(), path+":3: "+tc.msg+" cannot be set by a file inside the workspace") {
			t.Errorf("%q over %q: got %v, want %s", tc.yaml, tc.base, err, tc.msg)
		}
	}
}

func TestExpansion(t *testing.T) {
	f := newFixture(t)
	f.cwd = filepath.Join(f.home, "elsewhere")
	if err := os.MkdirAll(f.cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := f.write(filepath.Join(f.home, "c.yaml"), `sandbox:
  filesystem:
    read:
      - ${PROJECT_DIR}/docs
      - ${HOME}/notes
      - ${TMPDIR}/cache
      - ${CWD}/data
      - ~/.tool
      - "~"
      - /opt/../srv//x/
    write: ["${PROJECT_DIR}/out"]
    deny: ["${HOME}/.secret/*.key", "/a/./b/**/*.pem", "**/.env.local", secrets.*, ./creds.json]
  unix_sockets: [~/docker.sock]
  audit:
    log_file: ${HOME}/audit.jsonl
  bwrap_path: ~/bin/bwrap
`)
	p := f.mustLoad(Options{Workspace: f.ws, ConfigFiles: []string{cfg}, SkipUserConfig: true})
	wantRead := []string{
		filepath.Join(f.ws, "docs"), filepath.Join(f.home, "notes"), "/tmp/cache", filepath.Join(f.cwd, "data"),
		filepath.Join(f.home, ".tool"), f.home, "/srv/x",
	}
	if got := p.Read[len(p.Read)-len(wantRead):]; !reflect.DeepEqual(got, wantRead) {
		t.Errorf("Read tail = %q\nwant %q", got, wantRead)
	}
	if got := p.Write[len(p.Write)-1]; got != filepath.Join(f.ws, "out") {
		t.Errorf("Write tail = %q", got)
	}
	wantDeny := []string{filepath.Join(f.home, ".secret", "*.key"), "/a/b/**/*.pem", "**/.env.local", "secrets.*", "creds.json"}
	if got := p.Deny[len(p.Deny)-len(wantDeny):]; !reflect.DeepEqual(got, wantDeny) {
		t.Errorf("Deny tail = %q\nwant %q", got, wantDeny)
	}
	if !reflect.DeepEqual(p.UnixSockets, []string{filepath.Join(f.home, "docker.sock")}) {
		t.Errorf("UnixSockets = %q", p.UnixSockets)
	}
	if p.Audit.LogFile != filepath.Join(f.home, "audit.jsonl") || p.BwrapPath != filepath.Join(f.home, "bin", "bwrap") {
		t.Errorf("log file %q, bwrap %q", p.Audit.LogFile, p.BwrapPath)
	}
}

func TestPathErrors(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		line int
		msg  string
	}{
		{"sandbox:\n  filesystem:\n    read:\n      - /ok\n      - ${PROJET_DIR}/x\n", 5, `sandbox.filesystem.read entry "${PROJET_DIR}/x": unknown variable ${PROJET_DIR}; the known ones are ${PROJECT_DIR}, ${HOME}, ${TMPDIR}, ${CWD} and ${SANDBOX_CACHE}`},
		{"sandbox:\n  filesystem:\n    write: [\"${HOME\"]\n", 3, `sandbox.filesystem.write entry "${HOME": unterminated ${ (write ${NAME})`},
		{"sandbox:\n  filesystem:\n    read: [~root/x]\n", 3, `sandbox.filesystem.read entry "~root/x": only a leading ~ or ~/ is expanded (~user is not supported)`},
		{"sandbox:\n  filesystem:\n    read:\n      - src\n", 4, `sandbox.filesystem.read entry "src" is a relative path; use an absolute path or ${PROJECT_DIR}/...`},
		{"sandbox:\n  filesystem:\n    write: [./build]\n", 3, `sandbox.filesystem.write entry "./build" is a relative path; use an absolute path or ${PROJECT_DIR}/...`},
		{"sandbox:\n  unix_sockets: [run/x.sock]\n", 2, `sandbox.unix_sockets entry "run/x.sock" is a relative path; use an absolute path or ${PROJECT_DIR}/...`},
		{"sandbox:\n  audit:\n    log_file: audit.jsonl\n", 3, `sandbox.audit.log_file entry "audit.jsonl" is a relative path; use an absolute path or ${PROJECT_DIR}/...`},
		{"sandbox:\n  bwrap_path: bwrap\n", 2, `sandbox.bwrap_path "bwrap" must be an absolute path, like "/usr/bin/bwrap"`},
		{"sandbox:\n  filesystem:\n    read: [\"/data/*\"]\n", 3, `sandbox.filesystem.read entry "/data/*": wildcards (* ? [ {) are only allowed in sandbox.filesystem.deny and sandbox.filesystem.deny_write`},
		{"sandbox:\n  filesystem:\n    deny: [\"**/[abc.key\"]\n", 3, `sandbox.filesystem.deny entry "**/[abc.key": unbalanced [ in pattern (a [ must be closed by ])`},
		{"sandbox:\n  filesystem:\n    deny_write: [\"/x/{a,b\"]\n", 3, `sandbox.filesystem.deny_write entry "/x/{a,b": unbalanced { in pattern (a { must be closed by })`},
		{"sandbox:\n  filesystem:\n    deny: [\"a}\"]\n", 3, `sandbox.filesystem.deny entry "a}": unbalanced } in pattern`},
		{"sandbox:\n  filesystem:\n    deny: [../up]\n", 3, `sandbox.filesystem.deny entry "../up" is not a usable pattern; use an absolute path, ${PROJECT_DIR}/..., or a pattern such as **/.env`},
		{"sandbox:\n  filesystem:\n    deny: [\"${NOPE}/x\"]\n", 3, `sandbox.filesystem.deny entry "${NOPE}/x": unknown variable ${NOPE}; the known ones are ${PROJECT_DIR}, ${HOME}, ${TMPDIR}, ${CWD} and ${SANDBOX_CACHE}`},
		{"sandbox:\n  network:\n    allow: [\"https://x.com/\"]\n", 3, `sandbox.network.allow entry "https://x.com/": an entry is a host, not a URL; write the host and port alone, as in example.com:443`},
		{"sandbox:\n  network:\n    deny: [\"a b\"]\n", 3, `sandbox.network.deny entry "a b": a space is not allowed in a host`},
	} {
		f := newFixture(t)
		path := f.userConfig(tc.yaml)
		_, err := f.load(Options{})
		want := fmt.Sprintf("%s:%d: %s", path, tc.line, tc.msg)
		if err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", tc.yaml, err, want)
		}
	}
}

func TestGlobsAccepted(t *testing.T) {
	for _, g := range []string{"**/*.{pem,key}", "/x/[a-c]*.txt", `\{literal`, "[]]x"} {
		if err := checkGlob(g); err != nil {
			t.Errorf("checkGlob(%q) = %v", g, err)
		}
	}
}

func TestFlagPathsRelativeToCwd(t *testing.T) {
	f := newFixture(t)
	f.cwd = filepath.Join(f.home, "here")
	if err := os.MkdirAll(f.cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	p := f.mustLoad(Options{Workspace: "../proj", SkipUserConfig: true, Flags: flags(func(l *config.Layer) {
		l.Filesystem.Read = []string{"data", "~/x"}
		l.Filesystem.Write = []string{"./out/"}
		l.Filesystem.Deny = []string{"secret.txt", "**/.env", "*.pem"}
		l.Filesystem.DenyWrite = []string{"../proj/ro"}
		l.UnixSockets = []string{"s.sock"}
		l.Audit.LogFile = config.Ptr("log.jsonl")
	})})
	if p.Workspace != f.ws {
		t.Errorf("Workspace = %s, want %s", p.Workspace, f.ws)
	}
	if got := p.Read[len(p.Read)-2:]; !reflect.DeepEqual(got, []string{filepath.Join(f.cwd, "data"), filepath.Join(f.home, "x")}) {
		t.Errorf("Read tail = %q", got)
	}
	if got := p.Write[len(p.Write)-1]; got != filepath.Join(f.cwd, "out") {
		t.Errorf("Write tail = %q", got)
	}
	// "**/.env" is already in the profile's list, so it is not repeated.
	if got := p.Deny[len(p.Deny)-2:]; !reflect.DeepEqual(got, []string{filepath.Join(f.cwd, "secret.txt"), "*.pem"}) || !slices.Contains(p.Deny, "**/.env") {
		t.Errorf("Deny tail = %q", got)
	}
	if !slices.Contains(p.DenyWrite, filepath.Join(f.ws, "ro")) {
		t.Errorf("DenyWrite = %q", p.DenyWrite)
	}
	if !reflect.DeepEqual(p.UnixSockets, []string{filepath.Join(f.cwd, "s.sock")}) || p.Audit.LogFile != filepath.Join(f.cwd, "log.jsonl") {
		t.Errorf("sockets %q, log %q", p.UnixSockets, p.Audit.LogFile)
	}
	// Flag errors name the flag and carry no file.
	_, err := f.load(Options{SkipUserConfig: true, Flags: flags(func(l *config.Layer) { l.Filesystem.Read = []string{"${X}/a"} })})
	if err == nil || err.Error() != `--allow-read "${X}/a": unknown variable ${X}; the known ones are ${PROJECT_DIR}, ${HOME}, ${TMPDIR}, ${CWD} and ${SANDBOX_CACHE}` {
		t.Errorf("flag error = %v", err)
	}
}

func TestStrictMode(t *testing.T) {
	f := newFixture(t)
	f.userConfig("sandbox:\n  mode: strict\n  filesystem:\n    read: [\"~/.cache/go-build\", ~/mine]\n")
	p := f.mustLoad(Options{})
	want := append(append(slices.Clone(SystemReads), f.ws), filepath.Join(f.home, ".cache", "go-build"), filepath.Join(f.home, "mine"))
	if !reflect.DeepEqual(p.Read, want) {
		t.Errorf("strict Read = %q\nwant %q", p.Read, want)
	}
	if p.Network.Mode != NetDeny {
		t.Errorf("strict network = %s, want deny", p.Network.Mode)
	}
	if !reflect.DeepEqual(p.Write, []string{f.ws, "/tmp"}) {
		t.Errorf("strict Write = %q", p.Write)
	}

	// Explicitly opening the network does not survive strict mode...
	p = f.mustLoad(Options{Flags: flags(func(l *config.Layer) { l.Network.Mode = config.Ptr("open") })})
	if p.Network.Mode != NetDeny {
		t.Errorf("strict + --net open = %s, want deny", p.Network.Mode)
	}
	// ...but an explicit allowlist does.
	p = f.mustLoad(Options{Flags: flags(func(l *config.Layer) { l.Network.Allow = []string{"proxy.golang.org:443"} })})
	if p.Network.Mode != NetFiltered || !reflect.DeepEqual(p.Network.Allow, []string{"proxy.golang.org:443"}) {
		t.Errorf("strict + --allow-net = %s %q, want filtered", p.Network.Mode, p.Network.Allow)
	}

	// Standard mode keeps the profile's home reads.
	f2 := newFixture(t)
	p = f2.mustLoad(Options{})
	if !slices.Contains(p.Read, filepath.Join(f2.home, ".cache", "go-build")) || !slices.Contains(p.Read, filepath.Join(f2.home, ".config", "cordon")) {
		t.Errorf("standard Read lacks home reads: %q", p.Read)
	}
}

func TestUntrustedDefaultsToStrict(t *testing.T) {
	f := newFixture(t)
	prof := func(l *config.Layer) { l.Profile = config.Ptr("untrusted") }
	if p := f.mustLoad(Options{Flags: flags(prof)}); p.Mode != ModeStrict {
		t.Errorf("untrusted mode = %s, want strict", p.Mode)
	}
	p := f.mustLoad(Options{Flags: flags(func(l *config.Layer) { prof(l); l.Mode = config.Ptr("standard") })})
	if p.Mode != ModeStandard {
		t.Errorf("untrusted --mode standard = %s", p.Mode)
	}
	f.userConfig("sandbox:\n  enabled: false\n")
	p = f.mustLoad(Options{Flags: flags(prof)})
	if p.Mode != ModeOff {
		t.Errorf("untrusted + enabled:false = %s, want off", p.Mode)
	}
	// Re-enabling returns to the profile's mode.
	p = f.mustLoad(Options{Flags: flags(func(l *config.Layer) { prof(l); l.Enabled = config.Ptr(true) })})
	if p.Mode != ModeStrict {
		t.Errorf("untrusted re-enabled = %s, want strict", p.Mode)
	}
}

func TestModes(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want Mode
		err  string
	}{
		{"sandbox:\n  enabled: false\n", ModeOff, ""},
		{"sandbox:\n  enabled: true\n", ModeStandard, ""},
		{"sandbox:\n  mode: permissive\n", ModePermissive, ""},
		{"sandbox:\n  mode: off\n", ModeOff, ""},
		{"sandbox:\n  enabled: false\n  mode: off\n", ModeOff, ""},
		{"sandbox:\n  enabled: false\n  mode: strict\n", "", ":2: sandbox.enabled: false contradicts sandbox.mode: strict; remove one of them"},
		{"sandbox:\n  enabled: true\n  mode: off\n", "", ":2: sandbox.enabled: true contradicts sandbox.mode: off; remove one of them"},
	} {
		f := newFixture(t)
		path := f.userConfig(tc.yaml)
		p, err := f.load(Options{})
		if tc.err != "" {
			if err == nil || err.Error() != path+tc.err {
				t.Errorf("%q: got %v, want %s", tc.yaml, err, path+tc.err)
			}
			continue
		}
		if err != nil || p.Mode != tc.want {
			t.Errorf("%q: mode %v err %v, want %s", tc.yaml, p, err, tc.want)
		}
	}
}

func TestNetwork(t *testing.T) {
	for _, tc := range []struct {
		profile string
		yaml    string
		want    NetMode
		err     string
	}{
		{"minimal", "sandbox:\n  network:\n    enabled: true\n", NetOpen, ""},
		{"development", "sandbox:\n  network:\n    enabled: false\n", NetDeny, ""},
		{"development", "sandbox:\n  network:\n    mode: loopback\n", NetLoopback, ""},
		{"development", "sandbox:\n  network:\n    allow: [\"*:443\"]\n", NetFiltered, ""},
		{"ci", "sandbox:\n  network:\n    allow: [\"*:443\"]\n", NetFiltered, ""},
		{"development", "sandbox:\n  network:\n    enabled: true\n    allow: [\"localhost:*\"]\n    deny: [\"169.254.169.254:*\"]\n    forward_ports: [50051]\n", NetFiltered, ""},
		{"development", "sandbox:\n  network:\n    mode: deny\n    allow: [x.com]\n", "", ":4: sandbox.network.allow has entries but the same file denies the network; remove one of them"},
		{"development", "sandbox:\n  network:\n    enabled: false\n    mode: open\n", "", ":3: sandbox.network.enabled: false contradicts sandbox.network.mode: open; remove one of them"},
		{"development", "sandbox:\n  network:\n    enabled: true\n    mode: deny\n", "", ":3: sandbox.network.enabled: true contradicts sandbox.network.mode: deny; remove one of them"},
	} {
		f := newFixture(t)
		path := f.userConfig(tc.yaml)
		p, err := f.load(Options{Flags: flags(func(l *config.Layer) { l.Profile = config.Ptr(tc.profile) })})
		if tc.err != "" {
			if err == nil || err.Error() != path+tc.err {
				t.Errorf("%q: got %v, want %s", tc.yaml, err, path+tc.err)
			}
			continue
		}
		if err != nil || p.Network.Mode != tc.want {
			t.Errorf("%s %q: %v %v, want %s", tc.profile, tc.yaml, p, err, tc.want)
		}
	}
	// Data is kept.
	f := newFixture(t)
	f.userConfig("sandbox:\n  network:\n    allow: [a.com, a.com]\n    deny: [\"169.254.169.254:*\"]\n    forward_ports: [50051, 50051]\n")
	p := f.mustLoad(Options{Flags: flags(func(l *config.Layer) { l.Network.ForwardPorts = []int{8080} })})
	cfg := filepath.Join(f.home, ".config", "cordon", "config.yaml")
	if !reflect.DeepEqual(p.Network, Network{Mode: NetFiltered, Allow: []string{"a.com"}, Deny: []string{"169.254.169.254:*"}, ForwardPorts: []int{50051, 8080},
		Sources: []NetSource{{Entry: "a.com", Source: cfg + ":3"}, {Entry: "169.254.169.254:*", Source: cfg + ":4"}}}) {
		t.Errorf("Network = %+v", p.Network)
	}
	// A later explicit mode wins over an earlier allowlist.
	f.userConfig("sandbox:\n  network:\n    allow: [a.com, a.com]\n    deny: [\"169.254.169.254:*\"]\n")
	p = f.mustLoad(Options{Flags: flags(func(l *config.Layer) { l.Network.Mode = config.Ptr("deny") })})
	if p.Network.Mode != NetDeny {
		t.Errorf("--net deny after allow = %s", p.Network.Mode)
	}
	_, err := f.load(Options{Flags: flags(func(l *config.Layer) { l.Network.ForwardPorts = []int{0} })})
	if err == nil || err.Error() != "--forward-port must be a TCP port from 1 to 65535, not 0" {
		t.Errorf("bad forward port: %v", err)
	}
	_, err = f.load(Options{Flags: flags(func(l *config.Layer) {
		l.Network.Mode = config.Ptr("deny")
		l.Network.Allow = []string{"x.com"}
	})})
	if err == nil || err.Error() != "--allow-net has entries but the same command line denies the network; remove one of them" {
		t.Errorf("--net deny --allow-net: %v", err)
	}
}

func TestResourceRanges(t *testing.T) {
	type rc struct {
		key, flag, unit string
		lo, hi          int
		set             func(l *config.Layer, v int)
		get             func(p *Policy) int
	}
	for _, r := range []rc{
		{"max_processes", "--max-procs", "processes", 1, 1000000, func(l *config.Layer, v int) { l.Resources.MaxProcesses = &v }, func(p *Policy) int { return p.Resources.MaxProcesses }},
		{"max_memory_mb", "--max-memory", "MB", 16, 1048576, func(l *config.Layer, v int) { l.Resources.MaxMemoryMB = &v }, func(p *Policy) int { return p.Resources.MaxMemoryMB }},
		{"max_cpu_seconds", "--max-cpu", "seconds", 1, 31536000, func(l *config.Layer, v int) { l.Resources.MaxCPUSeconds = &v }, func(p *Policy) int { return p.Resources.MaxCPUSeconds }},
		{"max_file_size_mb", "--max-file-size", "MB", 1, 4194304, func(l *config.Layer, v int) { l.Resources.MaxFileSizeMB = &v }, func(p *Policy) int { return p.Resources.MaxFileSizeMB }},
	} {
		f := newFixture(t)
		for _, v := range []int{r.lo, r.hi} {
			p, err := f.load(Options{SkipUserConfig: true, Flags: flags(func(l *config.Layer) { r.set(l, v) })})
			if err != nil || r.get(p) != v {
				t.Errorf("%s %d: %v", r.flag, v, err)
			}
		}
		for _, v := range []int{r.lo - 1, r.hi + 1, -5} {
			_, err := f.load(Options{SkipUserConfig: true, Flags: flags(func(l *config.Layer) { r.set(l, v) })})
			want := fmt.Sprintf("%s must be from %d to %d %s, not %d", r.flag, r.lo, r.hi, r.unit, v)
			if err == nil || err.Error() != want {
				t.Errorf("flag %d: got %v, want %s", v, err, want)
			}
			path := f.userConfig(fmt.Sprintf("sandbox:\n  resources:\n    %s: %d\n", r.key, v))
			_, err = f.load(Options{})
			want = fmt.Sprintf("%s:3: sandbox.resources.%s must be from %d to %d %s, not %d", path, r.key, r.lo, r.hi, r.unit, v)
			if err == nil || err.Error() != want {
				t.Errorf("file %d: got %v, want %s", v, err, want)
			}
		}
	}
}

func TestTimeout(t *testing.T) {
	f := newFixture(t)
	f.userConfig("sandbox:\n  timeout: 90s\n")
	if p := f.mustLoad(Options{}); p.Timeout != 90*time.Second {
		t.Errorf("timeout = %v", p.Timeout)
	}
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := f.load(Options{Flags: flags(func(l *config.Layer) { l.Timeout = &d })})
		if want := fmt.Sprintf("--timeout must be longer than zero, not %s", d); err == nil || err.Error() != want {
			t.Errorf("timeout %v: got %v, want %s", d, err, want)
		}
	}
	path := f.userConfig("sandbox:\n  timeout: -1m\n")
	if _, err := f.load(Options{}); err == nil || err.Error() != path+":2: sandbox.timeout must be longer than zero, not -1m0s" {
		t.Errorf("negative timeout in file: %v", err)
	}
}

func TestEnv(t *testing.T) {
	f := newFixture(t)
	p := f.mustLoad(Options{Flags: flags(func(l *config.Layer) {
		l.Env = []string{"GOFLAGS", "_x1", "AWS_*", "PATH", "CI=1", "EMPTY=", "A=b=c", "TMPDIR=/tmp"}
	})})
	wantPass := append(slices.Clone(DefaultEnvPass), "GOFLAGS", "_x1", "AWS_*")
	if !reflect.DeepEqual(p.Env.Pass, wantPass) {
		t.Errorf("Pass = %q\nwant %q", p.Env.Pass, wantPass)
	}
	wantSet := map[string]string{"TMPDIR": "/tmp", "CI": "1", "EMPTY": "", "A": "b=c"}
	if !reflect.DeepEqual(p.Env.Set, wantSet) {
		t.Errorf("Set = %q, want %q", p.Env.Set, wantSet)
	}
	for _, tc := range []struct{ entry, msg string }{
		{"1ABC", `--env "1ABC" is not a valid variable name (letters, digits and _, not starting with a digit; a trailing * passes every name with that prefix); write NAME or NAME=VALUE`},
		{"A-B", `--env "A-B" is not a valid variable name (letters, digits and _, not starting with a digit; a trailing * passes every name with that prefix); write NAME or NAME=VALUE`},
		{"*", `--env "*" is not a valid variable name (letters, digits and _, not starting with a digit; a trailing * passes every name with that prefix); write NAME or NAME=VALUE`},
		{"A*B", `--env "A*B" is not a valid variable name (letters, digits and _, not starting with a digit; a trailing * passes every name with that prefix); write NAME or NAME=VALUE`},
		{"=x", `--env "=x": "" is not a valid variable name (letters, digits and _, not starting with a digit)`},
		{"MY VAR=1", `--env "MY VAR=1": "MY VAR" is not a valid variable name (letters, digits and _, not starting with a digit)`},
		{"TMPDIR=/var/tmp", `--env "TMPDIR=/var/tmp": TMPDIR is always /tmp inside the sandbox (its /tmp is private); remove this entry`},
	} {
		_, err := f.load(Options{Flags: flags(func(l *config.Layer) { l.Env = []string{tc.entry} })})
		if err == nil || err.Error() != tc.msg {
			t.Errorf("--env %q: got %v, want %s", tc.entry, err, tc.msg)
		}
	}
	path := f.userConfig("sandbox:\n  env:\n    - OK\n    - 9BAD\n")
	_, err := f.load(Options{})
	if err == nil || !strings.HasPrefix(err.Error(), path+`:4: sandbox.env entry "9BAD" is not a valid variable name`) {
		t.Errorf("file env error: %v", err)
	}
}

func TestWorkspace(t *testing.T) {
	f := newFixture(t)
	missing := filepath.Join(f.home, "nope")
	if _, err := f.load(Options{Workspace: missing}); err == nil || err.Error() != "--workspace "+missing+": no such directory" {
		t.Errorf("missing workspace: %v", err)
	}
	file := f.write(filepath.Join(f.home, "file"), "")
	if _, err := f.load(Options{Workspace: file}); err == nil || err.Error() != "--workspace "+file+": not a directory" {
		t.Errorf("file workspace: %v", err)
	}
	if _, err := f.load(Options{Workspace: "/"}); err == nil || !strings.HasPrefix(err.Error(), "the workspace / is the root directory: ") {
		t.Errorf("root workspace: %v", err)
	}
	link := filepath.Join(f.home, "link")
	if err := os.Symlink(f.ws, link); err != nil {
		t.Fatal(err)
	}
	p := f.mustLoad(Options{Workspace: link})
	if p.Workspace != f.ws || !slices.Contains(p.Write, f.ws) {
		t.Errorf("symlinked workspace = %s, write %q", p.Workspace, p.Write)
	}
	// The .cordon.yaml of a symlinked workspace is read.
	f.wsConfig("sandbox:\n  timeout: 3s\n")
	if p := f.mustLoad(Options{Workspace: link}); p.Timeout != 3*time.Second {
		t.Errorf("workspace config via symlink not read: %v", p.Timeout)
	}
	f.cwd = missing
	if _, err := f.load(Options{}); err == nil || err.Error() != "current directory "+missing+": no such directory" {
		t.Errorf("missing cwd: %v", err)
	}
	if _, err := Load(Options{Host: Host{Home: "rel", Cwd: "/"}}); err == nil {
		t.Errorf("relative home accepted")
	}
}

func TestConfigFileErrors(t *testing.T) {
	f := newFixture(t)
	if _, err := f.load(Options{ConfigFiles: []string{"missing.yaml"}}); err == nil || err.Error() != "--config missing.yaml: no such file" {
		t.Errorf("missing --config: %v", err)
	}
	path := f.userConfig("sandbox:\n  filesystem:\n    wirte: [/x]\n")
	_, err := f.load(Options{})
	if err == nil || err.Error() != path+`:3: unknown key "sandbox.filesystem.wirte"; did you mean "write"?` {
		t.Errorf("user config error: %v", err)
	}
	f.userConfig("")
	wsPath := f.wsConfig("sandbox:\n  mode: [strict]\n")
	if _, err := f.load(Options{}); err == nil || err.Error() != wsPath+":2: sandbox.mode must be one of off, permissive, standard, strict, not a list" {
		t.Errorf("workspace config error: %v", err)
	}
}

func TestFlagEnums(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		set  func(l *config.Layer)
		want string
	}{
		{func(l *config.Layer) { l.Profile = config.Ptr("dev") }, `--profile must be one of minimal, development, ci, untrusted, not "dev"`},
		{func(l *config.Layer) { l.Mode = config.Ptr("loose") }, `--mode must be one of off, permissive, standard, strict, not "loose"`},
		{func(l *config.Layer) { l.Mode = config.Ptr("loose"); l.SetWhere(config.KeyMode, "--sandbox") }, `--sandbox must be one of off, permissive, standard, strict, not "loose"`},
		{func(l *config.Layer) { l.Network.Mode = config.Ptr("filtered") }, `--net must be one of deny, open, loopback, not "filtered"`},
		{func(l *config.Layer) { l.Backend = config.Ptr("docker") }, `--backend must be one of auto, bwrap, landlock, seatbelt, job, none, not "docker"`},
		{func(l *config.Layer) { l.OnViolation = config.Ptr("die") }, `sandbox.on_violation must be one of block, warn, log, ask, not "die"`},
	} {
		_, err := f.load(Options{Flags: flags(tc.set)})
		if err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
	p := f.mustLoad(Options{Flags: flags(func(l *config.Layer) {
		l.Backend = config.Ptr("landlock")
		l.OnViolation = config.Ptr("warn")
		l.Mode = config.Ptr("permissive")
	})})
	if p.Backend != "landlock" || p.OnViolation != "warn" || p.Mode != ModePermissive {
		t.Errorf("flags not applied: %+v", p)
	}
}

func TestAuditDefaults(t *testing.T) {
	f := newFixture(t)
	f.env["XDG_STATE_HOME"] = "/state"
	if p := f.mustLoad(Options{}); p.Audit.LogFile != "/state/cordon/audit.jsonl" {
		t.Errorf("$XDG_STATE_HOME log = %s", p.Audit.LogFile)
	}
	f.env["XDG_STATE_HOME"] = "relative/ignored"
	if p := f.mustLoad(Options{}); p.Audit.LogFile != filepath.Join(f.home, ".local/state/cordon/audit.jsonl") {
		t.Errorf("relative $XDG_STATE_HOME log = %s", p.Audit.LogFile)
	}
	opts := Options{Host: f.host()}
	opts.Host.XDGStateHome = "/st"
	p, err := Load(opts)
	if err != nil || p.Audit.LogFile != "/st/cordon/audit.jsonl" {
		t.Errorf("Host.XDGStateHome log = %v %v", p, err)
	}
	f.userConfig("sandbox:\n  audit:\n    enabled: false\n    log_allowed: true\n    log_denied: false\n")
	p = f.mustLoad(Options{})
	if p.Audit.Enabled || !p.Audit.LogAllowed || p.Audit.LogDenied {
		t.Errorf("audit = %+v", p.Audit)
	}
}

func TestDedup(t *testing.T) {
	f := newFixture(t)
	f.userConfig("sandbox:\n  filesystem:\n    read: [/usr, /x, /x/]\n    write: [\"${PROJECT_DIR}\", /tmp]\n    deny: [\"**/.env\", \"${HOME}/.ssh/\"]\n  unix_sockets: [/s, /s]\n  env: [PATH, PATH]\n")
	p := f.mustLoad(Options{})
	count := func(list []string, s string) int {
		n := 0
		for _, x := range list {
			if x == s {
				n++
			}
		}
		return n
	}
	if count(p.Read, "/usr") != 1 || count(p.Read, "/x") != 1 || count(p.Write, f.ws) != 1 || count(p.Write, "/tmp") != 1 ||
		count(p.Deny, "**/.env") != 1 || count(p.Deny, filepath.Join(f.home, ".ssh")) != 1 || len(p.UnixSockets) != 1 || count(p.Env.Pass, "PATH") != 1 {
		t.Errorf("duplicates kept: %+v", p)
	}
	if p.Read[0] != "/usr" || p.Write[0] != f.ws {
		t.Errorf("order not kept: read %q write %q", p.Read, p.Write)
	}
}

func TestTildePath(t *testing.T) {
	for in, want := range map[string]string{"/h/u/.config/x": "~/.config/x", "/other": "/other", "/h/u": "/h/u", "/h/uu/x": "/h/uu/x"} {
		if got := tildePath(in, "/h/u"); got != want {
			t.Errorf("tildePath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSandboxCache: ${SANDBOX_CACHE} is a directory per workspace under
// $XDG_CACHE_HOME/cordon/sandbox (or ~/.cache), writable in development
// and ci, and never in strict mode.
func TestSandboxCache(t *testing.T) {
	f := newFixture(t)
	other := filepath.Join(f.home, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	p := f.mustLoad(Options{SkipUserConfig: true})
	q := f.mustLoad(Options{SkipUserConfig: true, Workspace: other})
	base := filepath.Join(f.home, ".cache", "cordon", "sandbox")
	if filepath.Dir(p.SandboxCache) != base || filepath.Dir(q.SandboxCache) != base || p.SandboxCache == q.SandboxCache {
		t.Errorf("caches %q and %q: want two different directories in %s", p.SandboxCache, q.SandboxCache, base)
	}
	if !slices.Contains(p.Write, p.SandboxCache) {
		t.Errorf("development Write %q lacks the sandbox cache", p.Write)
	}
	f.env["XDG_CACHE_HOME"] = filepath.Join(f.home, "xdg-cache")
	if p := f.mustLoad(Options{SkipUserConfig: true}); filepath.Dir(p.SandboxCache) != filepath.Join(f.home, "xdg-cache", "cordon", "sandbox") {
		t.Errorf("with XDG_CACHE_HOME: %q", p.SandboxCache)
	}
	for _, fl := range []func(*config.Layer){
		func(l *config.Layer) { l.Mode = config.Ptr("strict") },
		func(l *config.Layer) { l.Profile = config.Ptr("untrusted") },
		func(l *config.Layer) { l.Profile = config.Ptr("minimal") },
	} {
		if p := f.mustLoad(Options{SkipUserConfig: true, Flags: flags(fl)}); slices.Contains(p.Write, p.SandboxCache) {
			t.Errorf("%s/%s: Write %q has the sandbox cache", p.Profile, p.Mode, p.Write)
		}
	}
}

func TestHomeWorkspace(t *testing.T) {
	const why = ": a command there could plant files that run later (~/.bashrc, ~/.config/...); cd into a project, or pass --workspace DIR (or --allow-home-workspace to insist)"
	for _, tc := range []struct {
		name  string
		ws    func(f *fixture) string // the workspace; the fixture's home may be changed
		mode  string
		allow bool
		want  string // "" means accepted; else the error after "the workspace WS is "
	}{
		{"home", func(f *fixture) string { return f.home }, "", false, "your home directory"},
		{"home strict", func(f *fixture) string { return f.home }, "strict", false, "your home directory"},
		{"home permissive", func(f *fixture) string { return f.home }, "permissive", false, "your home directory"},
		{"ancestor of home", func(f *fixture) string { return filepath.Dir(f.home) }, "", false, "an ancestor of your home directory"},
		{"root", func(f *fixture) string { return "/" }, "", false, "the root directory"},
		{"home through a symlinked HOME", func(f *fixture) string {
			link := filepath.Join(filepath.Dir(f.home), "homelink")
			if err := os.Symlink(f.home, link); err != nil {
				f.t.Fatal(err)
			}
			ws := f.home
			f.home = link
			return ws
		}, "", false, "your home directory"},
		{"home through a symlinked workspace", func(f *fixture) string {
			link := filepath.Join(f.ws, "homelink")
			if err := os.Symlink(f.home, link); err != nil {
				f.t.Fatal(err)
			}
			return link
		}, "", false, "your home directory"},
		{"home allowed", func(f *fixture) string { return f.home }, "", true, ""},
		{"root allowed", func(f *fixture) string { return "/" }, "", true, ""},
		{"home in mode off", func(f *fixture) string { return f.home }, "off", false, ""},
		{"a project", func(f *fixture) string { return f.ws }, "", false, ""},
		{"a project allowed", func(f *fixture) string { return f.ws }, "", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ws := tc.ws(f)
			fl := flags(func(l *config.Layer) {
				if tc.mode != "" {
					l.Mode = config.Ptr(tc.mode)
				}
			})
			p, err := f.load(Options{Workspace: ws, Flags: fl, AllowHomeWorkspace: tc.allow, SkipUserConfig: true})
			if tc.want != "" {
				resolved, _ := filepath.EvalSymlinks(ws)
				want := "the workspace " + resolved + " is " + tc.want + why
				if err == nil || err.Error() != want {
					t.Fatalf("Load = %v\nwant %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			home := tc.allow && ws != f.ws && tc.mode != "off"
			if p.HomeWorkspace != home {
				t.Errorf("HomeWorkspace = %v, want %v", p.HomeWorkspace, home)
			}
		})
	}
}

func TestConfigInsideWritableRoot(t *testing.T) {
	const loosen = "sandbox.mode: off (weaker than the current standard) cannot be set by "
	for _, tc := range []struct {
		name    string
		setup   func(f *fixture) (Options, string) // returns the options and the config file's path
		content string
		want    string // "" means accepted; else a substring of the error
		check   func(f *fixture, p *Policy) bool
	}{
		{"XDG_CONFIG_HOME in the workspace loosening", func(f *fixture) (Options, string) {
			f.env["XDG_CONFIG_HOME"] = filepath.Join(f.ws, "xdg")
			return Options{}, filepath.Join(f.ws, "xdg", "cordon", "config.yaml")
		}, "sandbox: {mode: off}\n", loosen + "a file inside the workspace: such files may only add restrictions; keep your config file out of the directories the sandbox may write or pass --mode", nil},
		{"XDG_CONFIG_HOME in the workspace tightening", func(f *fixture) (Options, string) {
			f.env["XDG_CONFIG_HOME"] = filepath.Join(f.ws, "xdg")
			return Options{}, filepath.Join(f.ws, "xdg", "cordon", "config.yaml")
		}, "sandbox:\n  filesystem:\n    deny: [\"**/*.key\"]\n", "", func(f *fixture, p *Policy) bool { return slices.Contains(p.Deny, "**/*.key") }},
		{"XDG_CONFIG_HOME in a read-only workspace", func(f *fixture) (Options, string) {
			f.env["XDG_CONFIG_HOME"] = filepath.Join(f.ws, "xdg")
			return Options{Flags: flags(func(l *config.Layer) { l.Profile = config.Ptr("minimal") })}, filepath.Join(f.ws, "xdg", "cordon", "config.yaml")
		}, "sandbox:\n  filesystem:\n    write: [/x]\n", "sandbox.filesystem.write cannot be set by a file inside the workspace", nil},
		{"user config with --allow-write ~/.config", func(f *fixture) (Options, string) {
			return Options{Flags: flags(func(l *config.Layer) { l.Filesystem.Write = []string{filepath.Join(f.home, ".config")} })},
				filepath.Join(f.home, ".config", "cordon", "config.yaml")
		}, "sandbox: {mode: off}\n", "cannot be set by a file inside " + "HOME/.config, which the sandbox may write", nil},
		{"user config with --allow-write ~/.config tightening", func(f *fixture) (Options, string) {
			return Options{Flags: flags(func(l *config.Layer) { l.Filesystem.Write = []string{filepath.Join(f.home, ".config")} })},
				filepath.Join(f.home, ".config", "cordon", "config.yaml")
		}, "sandbox: {timeout: 5s}\n", "", func(f *fixture, p *Policy) bool { return p.Timeout == 5*time.Second }},
		{"user config that opens a write to itself", func(f *fixture) (Options, string) {
			return Options{}, filepath.Join(f.home, ".config", "cordon", "config.yaml")
		}, "sandbox:\n  filesystem:\n    write: [\"~/.config\"]\n", "sandbox.filesystem.write cannot be set by a file inside HOME/.config, which the sandbox may write", nil},
		{"--config in a writable root", func(f *fixture) (Options, string) {
			c := filepath.Join(f.home, "shared", "c.yaml")
			return Options{ConfigFiles: []string{c}, Flags: flags(func(l *config.Layer) { l.Filesystem.Write = []string{filepath.Join(f.home, "shared")} })}, c
		}, "sandbox:\n  network:\n    mode: open\n", "sandbox.network.mode: open cannot be set by a file inside HOME/shared, which the sandbox may write: such files may only add restrictions; put it in ~/.config/cordon/config.yaml or pass --net", nil},
		{"--config symlinked into a writable root", func(f *fixture) (Options, string) {
			c := filepath.Join(f.home, "c.yaml")
			target := f.write(filepath.Join(f.home, "shared", "c.yaml"), "sandbox:\n  env: [X]\n")
			if err := os.Symlink(target, c); err != nil {
				f.t.Fatal(err)
			}
			return Options{ConfigFiles: []string{c}, Flags: flags(func(l *config.Layer) { l.Filesystem.Write = []string{filepath.Join(f.home, "shared")} })}, c
		}, "sandbox:\n  env: [X]\n", "sandbox.env cannot be set by a file inside HOME/shared, which the sandbox may write", nil},
		{"user config's workspaces entry of this workspace", func(f *fixture) (Options, string) {
			return Options{}, filepath.Join(f.home, ".config", "cordon", "config.yaml")
		}, "workspaces:\n  WS:\n    network: {allow: [\"name.test:8080\"]}\n    filesystem: {read: [\"~/notes.txt\"]}\n  /elsewhere:\n    network: {allow: [\"other.test:1\"]}\n", "", func(f *fixture, p *Policy) bool {
			return slices.Contains(p.Network.Allow, "name.test:8080") && !slices.Contains(p.Network.Allow, "other.test:1") && slices.Contains(p.Read, filepath.Join(f.home, "notes.txt"))
		}},
		{"on_violation: ask in the workspace", func(f *fixture) (Options, string) {
			f.env["XDG_CONFIG_HOME"] = filepath.Join(f.ws, "xdg")
			return Options{}, filepath.Join(f.ws, "xdg", "cordon", "config.yaml")
		}, "sandbox: {on_violation: ask}\n", "sandbox.on_violation: ask (weaker than the current block) cannot be set by a file inside the workspace", nil},
		{"user config's workspaces entry inside a writable root", func(f *fixture) (Options, string) {
			f.env["XDG_CONFIG_HOME"] = filepath.Join(f.ws, "xdg")
			return Options{}, filepath.Join(f.ws, "xdg", "cordon", "config.yaml")
		}, "workspaces:\n  WS:\n    network: {allow: [\"name.test:8080\"]}\n", "sandbox.network.allow cannot be set by a file inside the workspace", nil},
		{"user config outside every writable root (the test home is under the host /tmp, which is private)", func(f *fixture) (Options, string) {
			return Options{}, filepath.Join(f.home, ".config", "cordon", "config.yaml")
		}, "sandbox: {mode: off}\n", "", func(f *fixture, p *Policy) bool { return p.Mode == ModeOff }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			opts, path := tc.setup(f)
			if _, err := os.Lstat(path); err != nil {
				f.write(path, strings.ReplaceAll(tc.content, "WS", f.ws))
			}
			p, err := f.load(opts)
			want := strings.ReplaceAll(tc.want, "HOME", f.home)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("Load = %v\nwant an error containing %s", err, want)
				}
				if !strings.HasPrefix(err.Error(), path+":") {
					t.Errorf("the error does not name %s: %v", path, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !tc.check(f, p) {
				t.Errorf("unexpected policy %+v", p)
			}
		})
	}
}

// TestConfigSymlinkInsideWritableRoot: a user config reached through a
// symlink inside a writable root is refused, naming the file only.
func TestConfigSymlinkInsideWritableRoot(t *testing.T) {
	f := newFixture(t)
	key := f.write(filepath.Join(f.home, ".ssh", "id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETKEYMATERIAL\n")
	xdg := filepath.Join(f.ws, "xdg")
	if err := os.MkdirAll(filepath.Join(xdg, "cordon"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(key, filepath.Join(xdg, "cordon", "config.yaml")); err != nil {
		t.Fatal(err)
	}
	f.env["XDG_CONFIG_HOME"] = xdg
	_, err := f.load(Options{})
	if err == nil || !strings.Contains(err.Error(), "is a symbolic link inside a writable directory") || strings.Contains(err.Error(), "SECRETKEY") {
		t.Errorf("Load = %v", err)
	}
	// The workspace's own .cordon.yaml likewise.
	f.env = map[string]string{}
	if err := os.Symlink(key, filepath.Join(f.ws, WorkspaceConfigName)); err != nil {
		t.Fatal(err)
	}
	_, err = f.load(Options{})
	if err == nil || !strings.Contains(err.Error(), ".cordon.yaml: is a symbolic link inside a writable directory") || strings.Contains(err.Error(), "SECRETKEY") {
		t.Errorf("Load = %v", err)
	}
}

func TestRelativeXDGIgnored(t *testing.T) {
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"} {
		f := newFixture(t)
		f.env[v] = "relative/dir"
		h := f.host()
		for _, got := range []string{UserConfigPath(h), SandboxCache(h, f.ws), DefaultAuditLog(h)} {
			if !strings.HasPrefix(got, f.home+"/") || strings.Contains(got, "relative") {
				t.Errorf("%s=relative/dir: %s", v, got)
			}
		}
		h.Getenv = nil
		h.XDGConfigHome, h.XDGCacheHome, h.XDGStateHome = "rel", "rel", "rel"
		for _, got := range []string{UserConfigPath(h), SandboxCache(h, f.ws), DefaultAuditLog(h)} {
			if !strings.HasPrefix(got, f.home+"/") {
				t.Errorf("Host field rel: %s", got)
			}
		}
	}
}

// TestDenyGlobsValidatedAsScanned: a relative deny glob is checked at load
// time with the parser the backends' walk uses (globscan), so a pattern the
// walk would refuse is a config error with its file, line and key, not a
// bwrap run that refuses to start or a Landlock run that denies the whole
// workspace.
func TestDenyGlobsValidatedAsScanned(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		line int
		msg  string
	}{
		{"sandbox:\n  filesystem:\n    deny: [\"**/{.env,}\"]\n", 3, `sandbox.filesystem.deny entry "**/{.env,}": has an empty or "." path segment (in "**/"), which never matches`},
		{"sandbox:\n  filesystem:\n    deny:\n      - ok.txt\n      - \"conf/{a,../b}\"\n", 5, `sandbox.filesystem.deny entry "conf/{a,../b}": contains ".."; patterns cannot leave the scanned root`},
		{"sandbox:\n  filesystem:\n    deny_write: [\"{x,/etc}/y\"]\n", 3, `sandbox.filesystem.deny_write entry "{x,/etc}/y": brace alternative "/etc/y" is absolute`},
		{"sandbox:\n  filesystem:\n    deny: [\"/data/{a,}\"]\n", 3, `sandbox.filesystem.deny entry "/data/{a,}": has an empty brace alternative that matches nothing`},
	} {
		f := newFixture(t)
		path := f.userConfig(tc.yaml)
		_, err := f.load(Options{})
		want := fmt.Sprintf("%s:%d: %s", path, tc.line, tc.msg)
		if err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", tc.yaml, err, want)
		}
	}
}

func TestAuditMaxSizeRange(t *testing.T) {
	for _, v := range []string{"-1", "1048577"} {
		f := newFixture(t)
		path := f.userConfig("sandbox:\n  audit:\n    max_size_mb: " + v + "\n")
		_, err := f.load(Options{})
		want := path + ":3: sandbox.audit.max_size_mb must be from 0 to 1048576 MB (0: never rotate), not " + v
		if err == nil || err.Error() != want {
			t.Errorf("max_size_mb: %s: got %v, want %s", v, err, want)
		}
	}
}
