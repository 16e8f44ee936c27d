package plan

import (
	"errors"
	"github.com/cordon-sandbox/cordon/internal/monitor"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/policy"
)

// Facts about the host the tests give Build: no bubblewrap is needed, and
// none is looked for.
const (
	fakeBwrap  = "/opt/fake/bin/bwrap"
	fakeCordon = "/opt/fake/bin/cordon-helper"
)

// fakeHost is a host where bwrap works, with Landlock ABI 6.
func fakeHost() Host {
	return Host{Bwrap: fakeBwrap, Auto: backend.Bwrap, LandlockABI: 6, Helper: fakeCordon, HelperSibling: true}
}

// testPolicy is a small policy over a fake home and workspace.
func testPolicy(t *testing.T) (*policy.Policy, Options) {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	ws := filepath.Join(home, "proj")
	for _, d := range []string{filepath.Join(home, ".ssh"), filepath.Join(ws, ".git", "hooks"), filepath.Join(ws, ".git", "objects"), filepath.Join(ws, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(ws, ".env"), filepath.Join(ws, "sub", "secrets.yaml"), filepath.Join(ws, ".git", "config"), filepath.Join(ws, ".git", "HEAD"), filepath.Join(home, ".ssh", "id_rsa")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := &policy.Policy{
		Mode:      policy.ModeStandard,
		Workspace: ws,
		Read:      []string{"/usr", "/etc", ws},
		Write:     []string{ws, "/tmp"},
		Deny:      []string{filepath.Join(home, ".ssh"), "**/.env", "**/secrets.*"},
		Protected: []string{"**/.git/hooks/", "**/.git/config", "**/.git", "**/.vscode/", "**/.envrc", "**/.bashrc"},
		Network:   policy.Network{Mode: policy.NetDeny},
		Env:       policy.Env{Pass: []string{"PATH", "LC_*"}, Set: map[string]string{"TMPDIR": "/tmp"}},
		Resources: policy.Resources{MaxMemoryMB: 512, MaxFileSizeMB: 8},
		Timeout:   3 * time.Second,
	}
	env := map[string]string{"PATH": "/usr/bin:/bin", "LC_ALL": "C", "SECRET": "s"}
	opts := Options{Home: home, Cwd: ws, StateDir: filepath.Join(dir, "state"), Host: fakeHost(),
		Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	return p, opts
}

// hasSeq reports whether argv contains seq as consecutive elements.
// gitCopy is the bind of a git directory's config from its private copy
// (Plan.GitConfigs), as argv says it.
func gitCopy(pl *Plan, config string) []string {
	return []string{"--bind-fd", strconv.Itoa(helperspec.FdGitConfigs + slices.Index(pl.GitConfigs, config)), config}
}

func hasSeq(argv []string, seq ...string) bool {
	for i := 0; i+len(seq) <= len(argv); i++ {
		if slices.Equal(argv[i:i+len(seq)], seq) {
			return true
		}
	}
	return false
}

func TestBuildBwrap(t *testing.T) {
	p, opts := testPolicy(t)
	ws, home, st := p.Workspace, opts.Home, opts.StateDir
	pl, err := Build(p, []string{"make", "test"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"--unshare-user"}, {"--unshare-pid"}, {"--unshare-net"}, {"--die-with-parent"}, {"--new-session"},
		{"--cap-drop", "ALL"}, {"--proc", "/proc"}, {"--dev", "/dev"}, {"--tmpfs", "/tmp"},
		{"--tmpfs", home}, {"--remount-ro", home},
		{"--ro-bind", "/usr", "/usr"}, {"--bind", ws, ws},
		{"--perms", "0000", "--dir", filepath.Join(home, ".ssh")}, // in the empty home: no mount

		{"--ro-bind", filepath.Join(st, maskFile), filepath.Join(ws, ".env")},
		{"--ro-bind", filepath.Join(st, maskFile), filepath.Join(ws, "sub", "secrets.yaml")},
		{"--bind", filepath.Join(ws, ".git"), filepath.Join(ws, ".git")},
		{"--ro-bind", filepath.Join(ws, ".git", "hooks"), filepath.Join(ws, ".git", "hooks")},
		gitCopy(pl, filepath.Join(ws, ".git", "config")),
		{"--ro-bind", filepath.Join(st, emptyDir), filepath.Join(ws, ".vscode")},
		{"--ro-bind-fd", "3", helperspec.HelperPath},
		{"--chdir", ws},
		{"--", helperspec.HelperPath, helperspec.HelperCommand, "--", "make", "test"},
	}
	for _, w := range want {
		if !hasSeq(pl.Argv, w...) {
			t.Errorf("argv lacks %q:\n%s", w, strings.Join(pl.Argv, " "))
		}
	}
	for _, bad := range [][]string{{"--share-net"}, {"--bind", "/tmp", "/tmp"}, {"--ro-bind", filepath.Join(st, emptyFile), filepath.Join(ws, ".bashrc")},
		// direnv asks before it loads a new .envrc, and no shell reads a
		// project's .bashrc: no placeholder (policy.AskFirst).
		{"--ro-bind", filepath.Join(st, emptyDir), filepath.Join(ws, ".envrc")}, {"--ro-bind", filepath.Join(st, emptyDir), filepath.Join(ws, ".bashrc")}} {
		if hasSeq(pl.Argv, bad...) {
			t.Errorf("argv must not contain %q", bad)
		}
	}
	if !slices.Equal(pl.PlaceholderPaths(), []string{filepath.Join(ws, ".vscode"), filepath.Join(ws, ".git", "config.worktree"), filepath.Join(ws, ".git", "commondir")}) {
		t.Errorf("placeholders = %q", pl.PlaceholderPaths())
	}
	// Each placeholder says what the launcher creates for it: the
	// launcher no longer reads it back from the bwrap argv.
	wantKinds := []PlaceholderKind{PlaceholderDir, PlaceholderFile, PlaceholderCommondir}
	for i, ph := range pl.Placeholders {
		if i < len(wantKinds) && ph.Kind != wantKinds[i] {
			t.Errorf("placeholder %s is a %q, want %q", ph.Path, ph.Kind, wantKinds[i])
		}
	}
	if !slices.Equal(pl.Env, []string{"LC_ALL=C", "PATH=/usr/bin:/bin", "TMPDIR=/tmp"}) && !slices.Contains(pl.Env, "PATH=/usr/bin:/bin") {
		t.Errorf("env = %q", pl.Env)
	}
	for _, e := range pl.Env {
		if strings.HasPrefix(e, "SECRET=") {
			t.Errorf("env leaks %s", e)
		}
	}
	if pl.Timeout != 3*time.Second {
		t.Errorf("timeout = %v", pl.Timeout)
	}
	var names []string
	for _, r := range pl.Spec.Rlimits {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, []string{"RLIMIT_DATA", "RLIMIT_FSIZE"}) {
		t.Errorf("rlimits = %q", names)
	}
	// Mounts must come parent first: the workspace before anything in it.
	idx := func(seq ...string) int {
		for i := 0; i+len(seq) <= len(pl.Argv); i++ {
			if slices.Equal(pl.Argv[i:i+len(seq)], seq) {
				return i
			}
		}
		return -1
	}
	if a, b := idx("--bind", ws, ws), idx("--ro-bind", filepath.Join(st, maskFile), filepath.Join(ws, ".env")); a < 0 || b < a {
		t.Errorf("workspace bind (%d) must precede the .env mask (%d)", a, b)
	}
	if a, b := idx("--tmpfs", home), idx("--remount-ro", home); b < a {
		t.Errorf("home remount (%d) must follow its tmpfs (%d)", b, a)
	}
}

func TestBuildNetworkAndTerminal(t *testing.T) {
	p, opts := testPolicy(t)
	p.Network.Mode = policy.NetOpen
	opts.Interactive = true
	pl, err := Build(p, []string{"sh"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if hasSeq(pl.Argv, "--unshare-net") || hasSeq(pl.Argv, "--new-session") {
		t.Errorf("open network, interactive: argv = %s", strings.Join(pl.Argv, " "))
	}
	if len(pl.Notes) == 0 {
		t.Error("the omitted --new-session must be explained in a note")
	}
}

func TestBuildRefusesUnbuilt(t *testing.T) {
	tests := []struct {
		name   string
		change func(*policy.Policy)
		want   string
		host   *Host // the host's facts, when not fakeHost's
	}{
		{"permissive on Seatbelt", func(p *policy.Policy) { p.Mode = policy.ModePermissive; p.Backend = backend.Seatbelt }, "--mode permissive is not built yet for the seatbelt backend: macOS logs only what a profile denies", nil},
		{"permissive on the Windows Job", func(p *policy.Policy) { p.Mode = policy.ModePermissive; p.Backend = backend.Job }, "--mode permissive is not built yet for the job backend", nil},
		{"forward port below 1024 without a network", func(p *policy.Policy) { p.Network.ForwardPorts = []int{80} }, "--forward-port 80: forwarded ports must be from 1024", nil},
		// The violation monitor is built for the Linux backends and
		// Seatbelt (macOS's log, which holds no allowed access).
		{"warn on the Windows Job", func(p *policy.Policy) { p.OnViolation = "warn"; p.Backend = backend.Job }, "on_violation warn needs the violation monitor, which is not built yet for the job backend", nil},
		{"log allowed on Seatbelt", func(p *policy.Policy) { p.Audit.Enabled, p.Audit.LogAllowed = true, true; p.Backend = backend.Seatbelt },
			"audit.log_allowed is not built yet for the seatbelt backend: its violation monitor reads macOS's log, which holds only what the profile denied", nil},
		{"log allowed on the Windows Job", func(p *policy.Policy) { p.Audit.Enabled, p.Audit.LogAllowed = true, true; p.Backend = backend.Job },
			"audit.log_allowed needs the violation monitor, which is not built yet for the job backend", nil},
		// The error launch.HostFacts found (its TestHostFactsBadBwrap).
		{"bad bwrap", func(p *policy.Policy) { p.Backend = "bwrap"; p.BwrapPath = "/nonexistent/bwrap" }, "apt-get install bubblewrap",
			&Host{BwrapErr: errors.New("bubblewrap (bwrap) not found at configured sandbox.bwrap_path: ...; install it with `sudo apt-get install bubblewrap`")}},
		{"no backend works", func(p *policy.Policy) { p.Backend = "auto" }, "no sandbox backend works here",
			&Host{Auto: backend.None, AutoErr: errors.New("no sandbox backend works here (...)")}},
		{"no host facts", func(p *policy.Policy) { p.Backend = "bwrap" }, "launch.HostFacts", &Host{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, opts := testPolicy(t)
			tc.change(p)
			if tc.host != nil {
				opts.Host = *tc.host
			}
			_, err := Build(p, []string{"true"}, opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	p, opts := testPolicy(t)
	if _, err := Build(p, nil, opts); err == nil {
		t.Error("an empty command must be refused")
	}
}

func TestBuildDeniedSymlink(t *testing.T) {
	p, opts := testPolicy(t)
	// A deny rule naming a link inside the workspace masks its target.
	target := filepath.Join(p.Workspace, "sub")
	link := filepath.Join(p.Workspace, "keys")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	p.Deny = append(p.Deny, link)
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !hasSeq(pl.Argv, "--ro-bind", filepath.Join(opts.StateDir, maskDir), target) {
		t.Errorf("the target of a denied link must be masked:\n%s", strings.Join(pl.Argv, " "))
	}
}

func TestModeOff(t *testing.T) {
	p, opts := testPolicy(t)
	p.Mode = policy.ModeOff
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Backend != backend.None || len(pl.Degraded) == 0 {
		t.Errorf("mode off: backend %q degraded %q", pl.Backend, pl.Degraded)
	}
}

func TestBuildLandlock(t *testing.T) {
	p, opts := testPolicy(t)
	p.Backend = backend.Landlock
	pl, err := Build(p, []string{"make"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Backend != backend.Landlock || !slices.Equal(pl.Argv, []string{helperspec.HelperExec, helperspec.HelperCommand, "--", "make"}) {
		t.Fatalf("plan %s %q", pl.Backend, pl.Argv)
	}
	r := pl.Spec.Landlock
	if r == nil || !r.DenyNetwork || !pl.Spec.Seccomp.DenyNetwork || !slices.Contains(r.ReadWrite, p.Workspace) || !slices.Contains(r.ReadWrite, pl.PrivateTmp) {
		t.Fatalf("rules %+v", r)
	}
	for _, ro := range r.ReadOnly {
		if strings.HasPrefix(ro, opts.Home+"/.ssh") {
			t.Errorf("denied ~/.ssh is readable: %s", ro)
		}
	}
	joined := strings.Join(pl.Degraded, "\n")
	if !strings.Contains(joined, "no pid namespace") {
		t.Errorf("degraded lacks the pid namespace:\n%s", joined)
	}
	// What Landlock cannot refuse inside the workspace, the supervisor
	// does.
	if pl.Supervise == nil || pl.Supervise.Allow(filepath.Join(p.Workspace, ".env"), monitor.AccessRead) || pl.Supervise.Allow(filepath.Join(p.Workspace, ".git", "config"), monitor.AccessWrite) {
		t.Errorf("the supervisor does not refuse .env or .git/config: %+v", pl.Supervise)
	}
	if !slices.Contains(pl.Env, "TMPDIR="+pl.PrivateTmp) {
		t.Errorf("TMPDIR not private: %q", pl.Env)
	}
	p.Mode = policy.ModeStrict
	if _, err := Build(p, []string{"make"}, opts); err == nil || !strings.Contains(err.Error(), "strict mode refuses") {
		t.Errorf("strict on landlock: %v", err)
	}
}

// TestHelperErr: a confined plan needs the helper's binary: without it
// (Host.HelperErr) Build fails with that error on bwrap and the
// Landlock-only backend alike; mode off needs none. A checked sibling
// helper is named in the plan for the launcher (Plan.Helper); the running
// program as its own helper is not.
func TestHelperErr(t *testing.T) {
	ws := t.TempDir()
	missing := errors.New("/opt/fake/bin/cordon-helper is missing: install all of cordon's binaries together")
	for _, tc := range []struct {
		name   string
		mode   policy.Mode
		b      backend.Name
		host   func(*Host)
		err    error
		helper string
	}{
		{"bwrap", policy.ModeStandard, backend.Bwrap, func(h *Host) { h.Helper, h.HelperErr = "", missing }, missing, ""},
		{"landlock", policy.ModeStandard, backend.Landlock, func(h *Host) { h.Helper, h.HelperErr = "", missing }, missing, ""},
		{"auto", policy.ModeStandard, backend.Auto, func(h *Host) { h.Helper, h.HelperErr = "", missing }, missing, ""},
		{"off", policy.ModeOff, backend.Auto, func(h *Host) { h.Helper, h.HelperErr = "", missing }, nil, ""},
		{"sibling", policy.ModeStandard, backend.Bwrap, func(*Host) {}, nil, fakeCordon},
		{"sibling landlock", policy.ModeStandard, backend.Landlock, func(*Host) {}, nil, fakeCordon},
		{"own binary", policy.ModeStandard, backend.Bwrap, func(h *Host) { h.HelperSibling = false }, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &policy.Policy{Mode: tc.mode, Backend: tc.b, Workspace: ws, Read: []string{ws}, Write: []string{ws},
				Network: policy.Network{Mode: policy.NetDeny}}
			h := fakeHost()
			tc.host(&h)
			pl, err := Build(p, []string{"true"}, Options{Home: t.TempDir(), Cwd: ws, StateDir: t.TempDir(), Host: h,
				Getenv: func(string) (string, bool) { return "", false }})
			if err != tc.err {
				t.Fatalf("Build: err %v, want %v", err, tc.err)
			}
			if err == nil && pl.Helper != tc.helper {
				t.Errorf("Plan.Helper %q, want %q", pl.Helper, tc.helper)
			}
		})
	}
}
