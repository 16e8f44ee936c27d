package policy

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/config"
)

// decideDir returns a new directory for a fake host, removed when the test
// ends. It is not under /tmp, which Decide takes for the sandbox's private
// /tmp: beside the module's directory if that is writable, else in the
// temporary directory.
func decideDir(t testing.TB) string {
	t.Helper()
	var dir string
	if wd, err := os.Getwd(); err == nil {
		// wd is the package's directory, inside the module.
		base := filepath.Dir(filepath.Dir(wd))
		if !Within(base, SandboxTmpDir) {
			if d, err := os.MkdirTemp(base, "decide-test-"); err == nil {
				dir = d
				t.Cleanup(func() { os.RemoveAll(d) })
			}
		}
	}
	if dir == "" {
		dir = t.TempDir()
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A checkout below a directory that never gets a write suggestion
	// (/var/tmp is below /var) would make every home path of the fake
	// host such a directory: the rows are about a home, wherever the
	// checkout lives, so that directory is ordinary for this test.
	for i, d := range noWriteFix {
		if d != "/" && Within(real, d) {
			saved := noWriteFix
			noWriteFix = slices.Delete(slices.Clone(noWriteFix), i, i+1)
			t.Cleanup(func() { noWriteFix = saved })
			break
		}
	}
	return real
}

// decideHost is a fake host: a home directory holding secrets, shell and
// git configuration, a tool cache and a workspace with a repository.
type decideHost struct {
	root, home, ws string
}

func newDecideHost(t testing.TB) *decideHost {
	t.Helper()
	root := decideDir(t)
	h := &decideHost{root: root, home: filepath.Join(root, "home", "u")}
	h.ws = filepath.Join(h.home, "proj")
	for _, f := range []string{
		".ssh/id_rsa", ".bashrc", ".gitconfig", "notes.txt", ".config/cordon/config.yaml",
		".config/foo/x", ".config/git/credentials", "go/pkg/mod/m@v1/secrets.go",
		"other/f", "other/.env", "run/agent.sock", "d/.env",
		"proj/.env", "proj/sub/.env.local", "proj/src/a.go", "proj/.git/HEAD", "proj/.git/config",
		"proj/.git/hooks/pre-commit", "proj/bare.git/HEAD", "proj/bare.git/config",
		"proj/.vscode/settings.json", "proj/.cordon.yaml",
	} {
		p := filepath.Join(h.home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"proj/.git/objects", "proj/bare.git/objects", "proj/bare.git/hooks"} {
		if err := os.MkdirAll(filepath.Join(h.home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// load builds the policy as cordon run does, from the development profile
// and flags.
func (h *decideHost) load(t testing.TB, fl *config.Layer) *Policy {
	t.Helper()
	p, err := Load(Options{
		Host:           Host{Home: h.home, Cwd: h.ws, Getenv: func(string) (string, bool) { return "", false }},
		SkipUserConfig: true,
		Flags:          fl,
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

type decideRow struct {
	name   string
	op     Op
	path   string
	denied bool
	rule   string
	fix    string
	secret bool
}

func checkRows(t *testing.T, d *Decider, rows []decideRow) {
	t.Helper()
	for _, r := range rows {
		got := d.Decide(r.op, r.path)
		want := Decision{Denied: r.denied, Rule: r.rule, Fix: r.fix, Secret: r.secret}
		if got != want {
			t.Errorf("%s: Decide(%s, %s) =\n\t%+v, want\n\t%+v", r.name, r.op, r.path, got, want)
		}
	}
}

// TestDecideDevelopment decides for the development profile, loaded as
// cordon run loads it.
func TestDecideDevelopment(t *testing.T) {
	h := newDecideHost(t)
	sock := filepath.Join(h.home, "run", "listed.sock")
	p := h.load(t, flags(func(l *config.Layer) { l.UnixSockets = []string{sock} }))
	H, W := h.home, h.ws
	ro := func(dir string) string { return "filesystem.read: " + dir }
	rw := "filesystem.write: " + W
	rows := []decideRow{
		// Secrets: denied whatever the operation, never a Fix.
		{"ssh key", OpRead, H + "/.ssh/id_rsa", true, "filesystem.deny: " + H + "/.ssh", "", true},
		{"ssh dir", OpRead, H + "/.ssh", true, "filesystem.deny: " + H + "/.ssh", "", true},
		{"ssh write", OpWrite, H + "/.ssh/authorized_keys", true, "filesystem.deny: " + H + "/.ssh", "", true},
		{"git credentials", OpRead, H + "/.config/git/credentials", true, "filesystem.deny: " + H + "/.config/git/credentials", "", true},
		{"shadow", OpRead, "/etc/shadow", true, "filesystem.deny: /etc/shadow", "", true},
		{"workspace .env", OpRead, W + "/.env", true, "filesystem.deny: **/.env", "", true},
		{"workspace .env exec", OpExec, W + "/.env", true, "filesystem.deny: **/.env", "", true},
		{"workspace .env write", OpWrite, W + "/.env", true, "filesystem.deny: **/.env", "", true},
		{"new .env below", OpWrite, W + "/a/b/.env", true, "filesystem.deny: **/.env", "", true},
		{"below a denied directory", OpRead, W + "/.env/x", true, "filesystem.deny: **/.env", "", true},
		{".env.local", OpRead, W + "/sub/.env.local", true, "filesystem.deny: **/.env.*", "", true},
		{"secrets.yaml", OpRead, W + "/config/secrets.yaml", true, "filesystem.deny: **/secrets.*", "", true},
		{"deny socket", OpConnect, H + "/.ssh/agent.sock", true, "filesystem.deny: " + H + "/.ssh", "", true},
		// A tool cache is not searched for deny globs (DenyGlobSkipped).
		{"library secrets.go", OpRead, H + "/go/pkg/mod/m@v1/secrets.go", false, ro(H + "/go/pkg/mod"), "", false},
		// Allowing the directory would not help: the glob hides it there.
		{".env outside", OpRead, H + "/other/.env", true, "filesystem.deny: **/.env", "", true},
		{"not secret", OpRead, W + "/environment", false, ro(W), "", false},

		// Reads.
		{"source", OpRead, W + "/src/a.go", false, ro(W), "", false},
		{"etc", OpRead, "/etc/passwd", false, ro("/etc"), "", false},
		{"exec", OpExec, "/usr/bin/env", false, ro("/usr"), "", false},
		{"gitconfig", OpRead, H + "/.gitconfig", false, ro(H + "/.gitconfig"), "", false},
		{"proc", OpRead, "/proc/self/status", false, "sandbox: /proc", "", false},
		{"dev", OpRead, "/dev/null", false, "sandbox: /dev", "", false},
		{"helper", OpExec, "/run/cordon/cordon-helper", false, "sandbox: /run/cordon", "", false},
		{"private tmp read", OpRead, "/tmp/decide-test/x", false, "private /tmp", "", false},
		{"root", OpRead, "/", false, "sandbox: a directory above an allowed path", "", false},
		{"home itself", OpRead, H, false, "sandbox: a directory above an allowed path", "", false},
		{"above a read path", OpRead, H + "/.config", false, "sandbox: a directory above an allowed path", "", false},
		{"unlisted config", OpRead, H + "/.config/foo/x", true, "filesystem.read: not listed", "--allow-read " + H + "/.config/foo", false},
		{"unlisted directory", OpRead, H + "/.config/foo", true, "filesystem.read: not listed", "--allow-read " + H + "/.config/foo", false},
		{"file in home", OpRead, H + "/notes.txt", true, "filesystem.read: not listed", "--allow-read " + H + "/notes.txt", false},
		{"missing file in home", OpRead, H + "/missing.txt", true, "filesystem.read: not listed", "", false},
		{"missing below", OpRead, H + "/other/a/b/c", true, "filesystem.read: not listed", "--allow-read " + H + "/other", false},
		{"nothing exists", OpRead, "/nonexistent-decide-test/x", true, "filesystem.read: not listed", "", false},

		// Writes.
		{"source write", OpWrite, W + "/src/a.go", false, rw, "", false},
		{"new file", OpWrite, W + "/new/dir/file", false, rw, "", false},
		{"git index", OpWrite, W + "/.git/index", false, rw, "", false},
		{"git hook", OpWrite, W + "/.git/hooks/pre-commit", true, "protected: **/.git/hooks/", "", false},
		{"git hooks dir", OpWrite, W + "/.git/hooks", true, "protected: **/.git/hooks/", "", false},
		{"git config", OpWrite, W + "/.git/config", true, "protected: **/.git/config", "", false},
		{"rename .git", OpWrite, W + "/.git", true, "protected: **/.git", "", false},
		{"nested .git", OpWrite, W + "/vendor/x/.git", true, "protected: **/.git", "", false},
		{"bare hooks", OpWrite, W + "/bare.git/hooks/post-update", true, "git directory: hooks/ in " + W + "/bare.git", "", false},
		{"bare config", OpWrite, W + "/bare.git/config", true, "git directory: config in " + W + "/bare.git", "", false},
		{"bare objects", OpWrite, W + "/bare.git/objects/ab", false, rw, "", false},
		{"config not in a git dir", OpWrite, W + "/src/config", false, rw, "", false},
		{"hooks not in a git dir", OpWrite, W + "/src/hooks/x", false, rw, "", false},
		{"vscode", OpWrite, W + "/.vscode/settings.json", true, "protected: **/.vscode/", "", false},
		{"envrc below", OpWrite, W + "/sub/.envrc", true, "protected: **/.envrc", "", false},
		{"workspace config", OpWrite, W + "/.cordon.yaml", true, "protected: .cordon.yaml", "", false},
		{"sub config", OpWrite, W + "/sub/.cordon.yaml", false, rw, "", false},
		{"etc passwd", OpWrite, "/etc/passwd", true, "filesystem.write: not listed (read-only)", "", false},
		{"usr", OpWrite, "/usr/local/bin/x", true, "filesystem.write: not listed (read-only)", "", false},
		{"proc", OpWrite, "/proc/self/oom_score_adj", true, "filesystem.write: not listed (read-only)", "", false},
		{"dev null", OpWrite, "/dev/null", false, "sandbox: /dev", "", false},
		{"bashrc", OpWrite, H + "/.bashrc", true, "protected: **/.bashrc", "", false},
		{"gitconfig", OpWrite, H + "/.gitconfig", true, "filesystem.deny_write: " + H + "/.gitconfig", "", false},
		{"cordon config", OpWrite, H + "/.config/cordon/config.yaml", true, "filesystem.deny_write: " + H + "/.config/cordon", "", false},
		{"local bin", OpWrite, H + "/.local/bin/ls", true, "filesystem.deny_write: " + H + "/.local/bin", "", false},
		{"module cache", OpWrite, H + "/go/pkg/mod/m@v1/x.go", true, "filesystem.write: not listed (read-only)", "", false},
		{"above the module cache", OpWrite, H + "/go/new.txt", true, "filesystem.write: not listed", "", false},
		{"claude", OpWrite, H + "/.claude/settings.json", true, "protected: **/.claude/", "", false},
		{"private tmp", OpWrite, "/tmp/decide-test/x", false, "private /tmp", "", false},
		{"other dir", OpWrite, H + "/other/f", true, "filesystem.write: not listed", "--allow-write " + H + "/other", false},
		{"other new", OpWrite, H + "/other/new/deeper/f", true, "filesystem.write: not listed", "--allow-write " + H + "/other", false},
		{"config dir holds cordon's", OpWrite, H + "/.config/new.conf", true, "filesystem.write: not listed", "", false},
		{"config subdir", OpWrite, H + "/.config/foo/x", true, "filesystem.write: not listed", "--allow-write " + H + "/.config/foo", false},
		{"home file", OpWrite, H + "/notes.txt", true, "filesystem.write: not listed", "--allow-write " + H + "/notes.txt", false},
		{"home new file", OpWrite, H + "/new.txt", true, "filesystem.write: not listed", "", false},
		{"cordon.yaml outside", OpWrite, H + "/other/.cordon.yaml", true, "protected: .cordon.yaml", "", false},
		// Settings through which a later run on the host runs code.
		{"go env file", OpWrite, H + "/.config/go/env", true, "filesystem.deny_write: " + H + "/.config/go/env", "", false},
		{"python user site", OpWrite, H + "/.local/lib/python3/site-packages/evil.pth", true, "filesystem.deny_write: " + H + "/.local/lib", "", false},
		{"ipython start-up", OpWrite, H + "/.ipython/profile_default/startup/00.py", true, "filesystem.deny_write: " + H + "/.ipython", "", false},
		// A directory above the workspace holds the user's other projects.
		{"new beside the workspace", OpWrite, filepath.Dir(W) + "/newproj/a/b", true, "filesystem.write: not listed", "", false},

		// Unix sockets.
		{"listed socket", OpConnect, sock, false, "unix_sockets: " + sock, "", false},
		{"unlisted socket", OpConnect, H + "/run/agent.sock", true, "unix_sockets: not listed", "--allow-unix-socket " + H + "/run/agent.sock", false},
		{"missing socket", OpConnect, H + "/run/gone.sock", true, "unix_sockets: not listed", "", false},
		{"socket in tmp", OpConnect, "/tmp/server.sock", false, "private /tmp", "", false},
		{"socket in workspace", OpConnect, W + "/s.sock", false, rw, "", false},
		{"socket in a read path", OpConnect, "/etc/x.sock", true, "unix_sockets: not listed", "", false},

		{"relative", OpRead, "proj/.env", false, "not an absolute path (not decided)", "", false},
		{"unclean", OpRead, W + "/src/../.env", true, "filesystem.deny: **/.env", "", true},
	}
	d := p.Decider(h.home)
	checkRows(t, d, rows)
	// The Policy method decides the same.
	for _, r := range rows[:5] {
		if got, want := p.Decide(r.op, r.path, h.home), d.Decide(r.op, r.path); got != want {
			t.Errorf("Policy.Decide(%s, %s) = %+v, Decider says %+v", r.op, r.path, got, want)
		}
	}
}

// TestDecideLiteral decides for policies built by hand, with made-up
// paths (no file system access needed).
func TestDecideLiteral(t *testing.T) {
	base := func() *Policy {
		return &Policy{
			Mode:      ModeStandard,
			Workspace: "/h/w",
			Read:      []string{"/usr", "/h/w", "/r/data"},
			Write:     []string{"/h/w"},
			Deny:      []string{"/h/.ssh", "**/.env", "config/*.json", "/h/*/.token"},
			DenyWrite: []string{"/h/.gitconfig", "**/*.lock"},
			Guarded:   []string{"/h/.gitconfig"},
			Protected: Protected,
			Network:   Network{Mode: NetDeny},
		}
	}
	t.Run("minimal", func(t *testing.T) {
		p := base()
		checkRows(t, p.Decider("/h"), []decideRow{
			{"tmp read-only", OpWrite, "/tmp/x", true, "filesystem.write: not listed (the private /tmp is read-only)", "--allow-write /tmp", false},
			{"tmp read", OpRead, "/tmp/x", false, "private /tmp", "", false},
			{"glob relative to a read root", OpRead, "/r/data/config/app.json", true, "filesystem.deny: config/*.json", "", true},
			{"glob deeper", OpRead, "/r/data/sub/config/app.json", false, "filesystem.read: /r/data", "", false},
			{"glob relative to the workspace", OpWrite, "/h/w/config/a.json", true, "filesystem.deny: config/*.json", "", true},
			{"absolute glob", OpRead, "/h/w/.token/x", true, "filesystem.deny: /h/*/.token", "", true},
			{"relative deny_write", OpWrite, "/h/w/go.lock", true, "filesystem.deny_write: **/*.lock", "", false},
			{"lock readable", OpRead, "/h/w/go.lock", false, "filesystem.read: /h/w", "", false},
			{"guarded", OpWrite, "/h/.gitconfig", true, "filesystem.deny_write: /h/.gitconfig", "", false},
			{"no glob outside roots", OpRead, "/usr/share/.env", false, "filesystem.read: /usr", "", false},
		})
	})
	t.Run("tmp writable", func(t *testing.T) {
		p := base()
		p.Write = append(p.Write, "/tmp")
		checkRows(t, p.Decider("/h"), []decideRow{
			{"tmp", OpWrite, "/tmp/x/.git/hooks/y", false, "private /tmp", "", false},
			{"tmp .env", OpWrite, "/tmp/.env", false, "private /tmp", "", false},
		})
		p.Read = append(p.Read, "/tmp/cordon-decide-ro")
		checkRows(t, p.Decider("/h"), []decideRow{
			{"host read path in tmp", OpWrite, "/tmp/cordon-decide-ro/x", true, "filesystem.write: not listed (read-only)", "", false},
			{"host read path in tmp read", OpRead, "/tmp/cordon-decide-ro/x", false, "filesystem.read: /tmp/cordon-decide-ro", "", false},
			{"host socket in tmp", OpConnect, "/tmp/cordon-decide-ro/s.sock", true, "unix_sockets: not listed", "", false},
		})
	})
	t.Run("home workspace", func(t *testing.T) {
		p := base()
		p.Workspace, p.HomeWorkspace = "/h", true
		p.Read, p.Write = []string{"/usr", "/h"}, []string{"/h"}
		checkRows(t, p.Decider("/h"), []decideRow{
			{"bashrc", OpWrite, "/h/.bashrc", true, "protected: **/.bashrc", "", false},
			{"gitconfig", OpWrite, "/h/.gitconfig", true, "filesystem.deny_write: /h/.gitconfig", "", false},
			{"file", OpWrite, "/h/notes", false, "filesystem.write: /h", "", false},
			{"ssh", OpRead, "/h/.ssh/id_ed25519", true, "filesystem.deny: /h/.ssh", "", true},
		})
	})
	t.Run("workspace inside deny_write", func(t *testing.T) {
		// The bwrap backend binds the workspace writable over a
		// deny_write path above it, and any other write path there
		// read-only.
		p := base()
		p.Workspace = "/h/.vim/plug"
		p.Read = []string{"/usr", "/h/.vim/plug"}
		p.Write = []string{"/h/.vim/plug", "/h/.vim/other"}
		p.DenyWrite = []string{"/h/.vim", "/h/.vim/plug/keep"}
		checkRows(t, p.Decider("/h"), []decideRow{
			{"workspace", OpWrite, "/h/.vim/plug/a", false, "filesystem.write: /h/.vim/plug", "", false},
			{"inside it", OpWrite, "/h/.vim/plug/keep/a", true, "filesystem.deny_write: /h/.vim/plug/keep", "", false},
			{"other write path", OpWrite, "/h/.vim/other/a", true, "filesystem.deny_write: /h/.vim", "", false},
			{"vimrc", OpWrite, "/h/.vim/vimrc", true, "filesystem.deny_write: /h/.vim", "", false},
		})
	})
	t.Run("home in tmp", func(t *testing.T) {
		// The home is an empty read-only directory inside the private
		// /tmp, not part of it.
		p := base()
		p.Write = append(p.Write, "/tmp")
		checkRows(t, p.Decider("/tmp/home"), []decideRow{
			{"home file", OpWrite, "/tmp/home/x", true, "filesystem.write: not listed", "", false},
			{"home read", OpRead, "/tmp/home/x", true, "filesystem.read: not listed", "", false},
			{"home itself", OpRead, "/tmp/home", false, "sandbox: a directory above an allowed path", "", false},
			{"tmp", OpWrite, "/tmp/x", false, "private /tmp", "", false},
		})
	})
	t.Run("with writable", func(t *testing.T) {
		p := base()
		p.Read = append(p.Read, "/h/go/pkg/mod")
		d := p.Decider("/h")
		row := decideRow{"module cache", OpWrite, "/h/go/pkg/mod/m@v1/x.go", true, "filesystem.write: not listed (read-only)", "", false}
		checkRows(t, d, []decideRow{row})
		row.denied, row.rule = false, "sandbox: /h/go/pkg/mod"
		checkRows(t, d.WithWritable("/h/go/pkg/mod"), []decideRow{row,
			{"read", OpRead, "/h/go/pkg/mod/m@v1/x.go", false, "filesystem.read: /h/go/pkg/mod", "", false},
		})
		// d itself is unchanged.
		checkRows(t, d, []decideRow{{"module cache", OpWrite, "/h/go/pkg/mod/m@v1/x.go", true, "filesystem.write: not listed (read-only)", "", false}})
	})
	t.Run("off", func(t *testing.T) {
		p := base()
		p.Mode = ModeOff
		checkRows(t, p.Decider("/h"), []decideRow{
			{"ssh", OpRead, "/h/.ssh/id_rsa", false, "sandbox.mode: off", "", false},
			{"etc", OpWrite, "/etc/passwd", false, "sandbox.mode: off", "", false},
		})
	})
}

// TestDecideConnect decides direct connects in every network mode.
func TestDecideConnect(t *testing.T) {
	lo4 := netip.MustParseAddrPort("127.0.0.1:8080")
	lo6 := netip.MustParseAddrPort("[::1]:8080")
	mapped := netip.MustParseAddrPort("[::ffff:127.0.0.1]:80")
	any4 := netip.MustParseAddrPort("0.0.0.0:80")
	ext := netip.MustParseAddrPort("192.0.2.1:443")
	ext6 := netip.MustParseAddrPort("[2001:db8::1]:443")
	const loop = "network: loopback address"
	for _, tc := range []struct {
		name string
		mode Mode
		net  Network
		want map[netip.AddrPort]Decision
	}{
		// No network inside at all: the loopback's TCP is refused too
		// (Landlock under bwrap, seccomp on the Landlock-only backend).
		{"deny", ModeStandard, Network{Mode: NetDeny}, map[netip.AddrPort]Decision{
			lo4: {Denied: true, Rule: ruleNetDeny}, lo6: {Denied: true, Rule: ruleNetDeny}, mapped: {Denied: true, Rule: ruleNetDeny}, any4: {Denied: true, Rule: ruleNetDeny},
			ext: {Denied: true, Rule: ruleNetDeny}, ext6: {Denied: true, Rule: ruleNetDeny},
		}},
		{"loopback", ModeStandard, Network{Mode: NetLoopback, ForwardPorts: []int{8080}}, map[netip.AddrPort]Decision{
			lo4: {Rule: loop}, lo6: {Rule: loop}, ext: {Denied: true, Rule: ruleNetLoop},
		}},
		{"filtered", ModeStandard, Network{Mode: NetFiltered, Allow: []string{"192.0.2.1"}}, map[netip.AddrPort]Decision{
			lo4: {Rule: loop}, lo6: {Rule: loop},
			ext: {Denied: true, Rule: "network: filtered (only through cordon's proxy, HTTP_PROXY)"},
		}},
		{"open", ModeStandard, Network{Mode: NetOpen}, map[netip.AddrPort]Decision{
			lo4: {Rule: "network: open"}, lo6: {Rule: "network: open"}, ext: {Rule: "network: open"}, ext6: {Rule: "network: open"},
		}},
		{"open with deny entries is filtered", ModeStandard, Network{Mode: NetOpen, Deny: []string{"example.com"}}, map[netip.AddrPort]Decision{
			lo4: {Rule: loop}, ext: {Denied: true, Rule: ruleNetFiltered},
		}},
		{"mode off", ModeOff, Network{Mode: NetDeny}, map[netip.AddrPort]Decision{
			lo4: {Rule: "sandbox.mode: off"}, ext: {Rule: "sandbox.mode: off"},
		}},
	} {
		p := &Policy{Mode: tc.mode, Workspace: "/w", Network: tc.net}
		d := p.Decider("/h")
		for addr, want := range tc.want {
			if got := p.DecideConnect(addr); got != want {
				t.Errorf("%s: Policy.DecideConnect(%s) = %+v, want %+v", tc.name, addr, got, want)
			}
			if got := d.DecideConnect(addr); got != want {
				t.Errorf("%s: Decider.DecideConnect(%s) = %+v, want %+v", tc.name, addr, got, want)
			}
			if got := d.DecideConnect(addr); got.Fix != "" || got.Secret {
				t.Errorf("%s: DecideConnect(%s) suggests %q", tc.name, addr, got.Fix)
			}
		}
	}
}

// TestDecideProperties decides every path made of a few names, for each
// operation, and checks what must always hold: a secret is denied and
// has no Fix; an allowed access has no Fix; a Fix never names /, the home
// directory or above, and never a write where writes are never suggested;
// and adding the Fix's path to the policy allows the access.
func TestDecideProperties(t *testing.T) {
	h := newDecideHost(t)
	p := h.load(t, nil)
	d := p.Decider(h.home)
	names := []string{"proj", ".env", ".ssh", ".git", "hooks", "config", "other", "notes.txt", "x", ".config", "foo", "bare.git", ".cordon.yaml", "go", "secrets.go"}
	var paths []string
	var gen func(prefix string, depth int)
	gen = func(prefix string, depth int) {
		paths = append(paths, prefix)
		if depth == 0 {
			return
		}
		for _, n := range names {
			gen(prefix+"/"+n, depth-1)
		}
	}
	gen(h.home, 3)
	paths = append(paths, "/", "/etc", "/etc/hosts", "/usr/lib/x", "/tmp/x", "/proc/1/x", "/dev/x", "/run/x.sock", "/var/lib/x")
	ops := []Op{OpRead, OpWrite, OpExec, OpConnect}
	checked := 0
	for _, path := range paths {
		for _, op := range ops {
			got := d.Decide(op, path)
			switch {
			case got.Rule == "":
				t.Errorf("Decide(%s, %s) = %+v: no rule", op, path, got)
			case got.Secret && (!got.Denied || got.Fix != ""):
				t.Errorf("Decide(%s, %s) = %+v: a secret must be denied, with no Fix", op, path, got)
			case !got.Denied && got.Fix != "":
				t.Errorf("Decide(%s, %s) = %+v: allowed, yet a Fix", op, path, got)
			}
			if got.Fix == "" {
				continue
			}
			flag, arg, _ := strings.Cut(got.Fix, " ")
			if arg == "/" || Within(h.home, arg) {
				t.Errorf("Decide(%s, %s) = %+v: the Fix is too broad", op, path, got)
			}
			q := *p
			switch flag {
			case "--allow-read":
				q.Read = append(slices.Clone(p.Read), arg)
			case "--allow-write":
				for _, n := range append(slices.Clone(d.noWriteFix), p.Guarded...) {
					if Within(arg, n) || Within(n, arg) {
						t.Errorf("Decide(%s, %s) = %+v: no write is suggested in or above %s", op, path, got, n)
					}
				}
				q.Write = append(slices.Clone(p.Write), arg)
			case "--allow-unix-socket":
				q.UnixSockets = append(slices.Clone(p.UnixSockets), arg)
			default:
				t.Errorf("Decide(%s, %s) = %+v: unknown flag", op, path, got)
				continue
			}
			checked++
			if after := q.Decider(h.home).Decide(op, path); after.Denied {
				t.Errorf("Decide(%s, %s) = %+v, yet with %s: %+v", op, path, got, got.Fix, after)
			}
		}
	}
	if checked == 0 {
		t.Error("no Fix was checked")
	}
	t.Logf("%d paths, %d fixes checked", len(paths), checked)
}

func TestLiteralHint(t *testing.T) {
	for pat, want := range map[string]string{
		"**/.env":              ".env",
		"**/.env.*":            ".env.",
		"**/secrets.*":         "secrets.",
		"config/*.json":        "config",
		"./x/y":                "x",
		"**/{a,bcd}/xy":        "xy",
		"{a/b,c}.env":          ".env",
		"[ab]cd/*":             "cd",
		"[]x]yz":               "yz",
		"**/.git/worktrees/*/": "worktrees",
		`\*x`:                  "",
		"*":                    "",
	} {
		if got := literalHint(pat); got != want {
			t.Errorf("literalHint(%q) = %q, want %q", pat, got, want)
		}
	}
}

// BenchmarkDecide decides a mix of the accesses a build makes, with the
// development profile.
func BenchmarkDecide(b *testing.B) {
	h := newDecideHost(b)
	p := h.load(b, nil)
	home, ws := h.home, h.ws
	d := p.Decider(home)
	accesses := []struct {
		op   Op
		path string
	}{
		{OpRead, "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{OpRead, ws + "/internal/pkg/sub/file.go"},
		{OpWrite, ws + "/internal/pkg/sub/file_test.go"},
		{OpRead, home + "/go/pkg/mod/golang.org/x/sys@v0.1.0/unix/syscall.go"},
		{OpWrite, "/tmp/go-build123/b001/_pkg_.a"},
		{OpExec, "/usr/bin/git"},
		{OpRead, "/etc/ssl/certs/ca-certificates.crt"},
		{OpWrite, ws + "/.git/index.lock"},
	}
	for _, a := range accesses {
		if got := d.Decide(a.op, a.path); got.Denied {
			b.Fatalf("Decide(%s, %s) = %+v", a.op, a.path, got)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := accesses[i%len(accesses)]
		d.Decide(a.op, a.path)
	}
}
