package plan

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/monitor/seatbeltlog"
	"github.com/cordon-sandbox/cordon/internal/plan/sbpl"
	"github.com/cordon-sandbox/cordon/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/seatbelt")

// macHome and macWorkspace are the fake macOS home and workspace of the
// Seatbelt goldens.
const (
	macHome      = "/Users/dev"
	macWorkspace = "/Users/dev/proj"
)

// seatbeltPolicy loads the built-in profile in mode over a temporary
// home and workspace, then moves every path of the policy to the fake
// macOS home (macHome), as Load would have made them there.
func seatbeltPolicy(t *testing.T, profile, mode string) (*policy.Policy, Options) {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	ws := filepath.Join(home, "proj")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	fl := config.NewFlags()
	fl.Profile, fl.Mode = config.Ptr(profile), config.Ptr(mode)
	fl.Backend = config.Ptr(string(backend.Seatbelt))
	p, err := policy.Load(policy.Options{Host: policy.Host{Home: home, Cwd: ws}, Flags: fl, SkipUserConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	mv := func(s string) string {
		if policy.Within(s, home) {
			return macHome + strings.TrimPrefix(s, home)
		}
		return s
	}
	mvAll := func(ss []string) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = mv(s)
		}
		return out
	}
	p.Workspace, p.SandboxCache, p.Audit.LogFile = mv(p.Workspace), mv(p.SandboxCache), mv(p.Audit.LogFile)
	p.Read, p.Write, p.Deny, p.DenyWrite, p.Guarded, p.UnixSockets = mvAll(p.Read), mvAll(p.Write), mvAll(p.Deny), mvAll(p.DenyWrite), mvAll(p.Guarded), mvAll(p.UnixSockets)
	for _, s := range slices.Concat(p.Read, p.Write, p.Deny, p.DenyWrite) {
		if strings.HasPrefix(s, dir) {
			t.Fatalf("a path of the temporary directory is left: %s", s)
		}
	}
	// Whether the sandbox cache stays depends on whether this host could
	// create it under /Users/dev (root can, a user cannot: see
	// usableSandboxCache): the goldens leave it out, as on a host that
	// cannot, so that they are the same for both.
	p.Write = slices.DeleteFunc(p.Write, func(w string) bool { return w == p.SandboxCache })
	p.SandboxCache = ""
	opts := Options{Home: macHome, Cwd: macWorkspace, StateDir: macHome + "/Library/Application Support/cordon",
		RunID: "golden", Getenv: func(string) (string, bool) { return "", false }}
	return p, opts
}

// TestSeatbeltGoldens: the Seatbelt profile of every built-in profile in
// the modes standard and strict is the golden file's (go test -update
// rewrites them), and passes sbpl.Check. Permissive mode is not built for
// any backend: Build refuses it.
func TestSeatbeltGoldens(t *testing.T) {
	for _, prof := range policy.Profiles() {
		for _, mode := range []string{"standard", "strict", "permissive"} {
			t.Run(prof+"-"+mode, func(t *testing.T) {
				p, opts := seatbeltPolicy(t, prof, mode)
				pl, err := Build(p, []string{"make", "test"}, opts)
				if mode == "permissive" {
					if !errors.Is(err, ErrNotBuilt) {
						t.Fatalf("permissive: got %v, want ErrNotBuilt", err)
					}
					return
				}
				if prof == policy.ProfileCI && mode == "standard" {
					// Filtered network: not degraded (the proxy's
					// ports are added at launch: SeatbeltProxyProfile).
					if err != nil || len(pl.Degraded) != 0 || !pl.Net.Filtered() || !pl.Net.Seatbelt {
						t.Fatalf("ci: %v, degraded %q, net %+v", err, pl.Degraded, pl.Net)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				checkSeatbeltPlan(t, pl)
				golden := filepath.Join("testdata", "seatbelt", prof+"-"+mode+".sbpl")
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, []byte(pl.Seatbelt.Profile), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (go test -run TestSeatbeltGoldens ./internal/plan -update writes it)", err)
				}
				if err := sbpl.Check(string(want)); err != nil {
					t.Errorf("the golden %s fails sbpl.Check: %v", golden, err)
				}
				if pl.Seatbelt.Profile != string(want) {
					t.Errorf("profile differs from %s (-update rewrites it):\n%s", golden, pl.Seatbelt.Profile)
				}
			})
		}
	}
}

// checkSeatbeltPlan checks what every Seatbelt plan holds: sandbox-exec,
// the profile, the parameters in order, the command; no parameter's value
// in the profile; the run's tag on the denies.
func checkSeatbeltPlan(t *testing.T, pl *Plan) {
	t.Helper()
	sb := pl.Seatbelt
	if pl.Backend != backend.Seatbelt || sb == nil {
		t.Fatalf("backend %s, seatbelt %v", pl.Backend, sb)
	}
	if err := sbpl.Check(sb.Profile); err != nil {
		t.Fatalf("Check: %v\n%s", err, sb.Profile)
	}
	want := []string{SandboxExec, "-p", sb.Profile}
	for _, prm := range sb.Params {
		want = append(want, "-D", prm.Name+"="+prm.Value)
		if len(prm.Value) > 1 && strings.Contains(sb.Profile, prm.Value) {
			t.Errorf("the value of %s, %q, is in the profile", prm.Name, prm.Value)
		}
	}
	want = append(want, pl.Command...)
	if !slices.Equal(pl.Argv, want) {
		t.Errorf("argv %q\nwant %q", pl.Argv, want)
	}
	if !strings.Contains(sb.Profile, `(deny default (with message "`+sb.Tag+`"))`) {
		t.Errorf("no tagged (deny default) in\n%s", sb.Profile)
	}
}

// TestSeatbeltOrder: SBPL is last-match-wins, so every deny of a secret
// or protected path comes after every allow of files.
func TestSeatbeltOrder(t *testing.T) {
	p, opts := seatbeltPolicy(t, policy.ProfileDevelopment, "standard")
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	lastAllow, firstDeny := -1, -1
	for i, l := range strings.Split(pl.Seatbelt.Profile, "\n") {
		isFile := strings.Contains(l, "file-")
		switch {
		case strings.HasPrefix(l, "(allow ") && isFile && !strings.Contains(l, `(param "T0")`):
			lastAllow = i
		case strings.HasPrefix(l, "(deny ") && isFile && firstDeny < 0 && !strings.Contains(l, `(param "S0")`):
			firstDeny = i
		}
	}
	if firstDeny < 0 || lastAllow > firstDeny {
		t.Errorf("a file allow (line %d) comes after the first secret deny (line %d):\n%s", lastAllow+1, firstDeny+1, pl.Seatbelt.Profile)
	}
	param := func(prefix, value string) bool {
		for _, prm := range pl.Seatbelt.Params {
			if strings.HasPrefix(prm.Name, prefix) && prm.Value == value {
				return true
			}
		}
		return false
	}
	for _, want := range [][2]string{{"W", macWorkspace}, {"D", macHome + "/.ssh"}, {"D", "/private/etc/sudoers"}, {"R", "/usr"}, {"R", "/private/etc"}, {"A", "/Users"}, {"T", pl.PrivateTmp}} {
		if !param(want[0], want[1]) {
			t.Errorf("no parameter %s* = %s in %v", want[0], want[1], pl.Seatbelt.Params)
		}
	}
	if !slices.Contains(pl.Env, "TMPDIR="+pl.PrivateTmp) {
		t.Errorf("TMPDIR is not the private temporary directory: %q", pl.Env)
	}
}

// TestSeatbeltHostilePaths: paths holding the characters of SBPL's syntax
// (quotes, parentheses, a backslash, a newline, a regex literal's opening,
// a comment) give a profile byte-identical to plain paths': they live
// only in the parameters.
func TestSeatbeltHostilePaths(t *testing.T) {
	build := func(name string) *Plan {
		p, opts := seatbeltPolicy(t, policy.ProfileDevelopment, "standard")
		ws := "/Users/dev/" + name
		re := func(ss []string) []string {
			out := slices.Clone(ss)
			for i, s := range out {
				if policy.Within(s, macWorkspace) {
					out[i] = ws + strings.TrimPrefix(s, macWorkspace)
				}
			}
			return out
		}
		p.Workspace = ws
		p.Read = append(re(p.Read), "/opt/"+name+"/lib")
		p.Write = append(re(p.Write), "/Users/dev/out-"+name)
		p.UnixSockets = []string{"/Users/dev/" + name + ".sock"}
		opts.Cwd = ws
		pl, err := Build(p, []string{"true"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		checkSeatbeltPlan(t, pl)
		return pl
	}
	plain := build("proj")
	hostile := build("p\"r(o)j\\x\ny#\"z;w")
	if plain.Seatbelt.Profile != hostile.Seatbelt.Profile {
		t.Errorf("the profiles differ:\n%s\n---\n%s", plain.Seatbelt.Profile, hostile.Seatbelt.Profile)
	}
	found := false
	for _, prm := range hostile.Seatbelt.Params {
		if strings.Contains(prm.Value, "#\"z;w") {
			found = true
		}
	}
	if !found {
		t.Errorf("the hostile path is in no parameter: %v", hostile.Seatbelt.Params)
	}
}

// TestSeatbeltNetwork: the network rules of each mode.
func TestSeatbeltNetwork(t *testing.T) {
	for _, tc := range []struct {
		mode     policy.NetMode
		ports    []int
		want     []string
		degraded bool
	}{
		{policy.NetDeny, nil, nil, false},
		{policy.NetOpen, nil, []string{"(allow network* system-socket)", `(global-name "com.apple.dnssd.service")`}, false},
		{policy.NetLoopback, []int{8080}, []string{`(allow network-bind network-inbound (local ip "localhost:*"))`, `(allow network-outbound (remote ip "localhost:8080"))`}, true},
		{policy.NetFiltered, []int{8080}, []string{`(allow network-outbound (remote ip "localhost:8080"))`}, false},
	} {
		p, opts := seatbeltPolicy(t, policy.ProfileMinimal, "standard")
		p.Network = policy.Network{Mode: tc.mode, ForwardPorts: tc.ports}
		if tc.mode == policy.NetFiltered {
			p.Network.Allow = []string{"example.com"}
		}
		pl, err := Build(p, []string{"true"}, opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.mode, err)
		}
		prof := pl.Seatbelt.Profile
		for _, w := range tc.want {
			if !strings.Contains(prof, w) {
				t.Errorf("%s: no %s in\n%s", tc.mode, w, prof)
			}
		}
		if tc.mode == policy.NetFiltered && (strings.Contains(prof, `"localhost:*"`) || strings.Contains(prof, "network-bind") || strings.Contains(prof, "dnssd")) {
			t.Errorf("filtered: the whole loopback, listening or name resolution allowed in\n%s", prof)
		}
		if tc.mode == policy.NetDeny && (strings.Contains(prof, "(allow network") || strings.Contains(prof, "dnssd")) {
			t.Errorf("deny: a network rule in\n%s", prof)
		}
		if got := len(pl.Degraded) > 0; got != tc.degraded {
			t.Errorf("%s: degraded %q", tc.mode, pl.Degraded)
		}
	}
}

// TestSeatbeltProxyProfile: the profile of a filtered network with the
// proxy's ports (the ci profile, a forwarded port) is the golden file's
// (testdata/seatbelt/ci-standard-proxy.sbpl, -update rewrites it) and
// passes sbpl.Check; its network rules are exactly: connecting to the
// forwarded port, then, last of all, to the two proxy ports on the
// loopback. No other port of the loopback, no other address, no listening;
// and no rule but (deny default) denies a network operation, so that the
// allow appended last cuts into nothing else. SeatbeltWithProxy runs that
// profile and leaves the plan it copies alone.
func TestSeatbeltProxyProfile(t *testing.T) {
	p, opts := seatbeltPolicy(t, policy.ProfileCI, "standard")
	p.Network.ForwardPorts = []int{5432}
	pl, err := Build(p, []string{"make", "test"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	const httpPort, socksPort = 49152, 65535
	text, err := SeatbeltProxyProfile(pl, httpPort, socksPort)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "seatbelt", "ci-standard-proxy.sbpl")
	if *update {
		if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestSeatbeltProxyProfile ./internal/plan -update writes it)", err)
	}
	if text != string(want) {
		t.Errorf("profile differs from %s (-update rewrites it):\n%s", golden, text)
	}
	if err := sbpl.Check(text); err != nil {
		t.Fatalf("Check: %v\n%s", err, text)
	}
	if !strings.HasPrefix(text, pl.Seatbelt.Profile) {
		t.Errorf("the plan's profile is not kept whole, in front")
	}
	var rules, network []string
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(l, "(allow ") || strings.HasPrefix(l, "(deny ") {
			rules = append(rules, l)
			if strings.Contains(l, "network") || strings.Contains(l, "system-socket") || strings.Contains(l, "(remote ") || strings.Contains(l, "(local ") {
				network = append(network, l)
			}
		}
	}
	proxy := `(allow network-outbound (remote ip "localhost:49152") (remote ip "localhost:65535"))`
	wantNet := []string{`(allow network-outbound (remote ip "localhost:5432"))`}
	if len(p.UnixSockets) > 0 {
		t.Fatalf("the ci profile now allows unix sockets (%q): extend this test", p.UnixSockets)
	}
	wantNet = append(wantNet, proxy)
	if !slices.Equal(network, wantNet) {
		t.Errorf("network rules:\n%s\nwant:\n%s", strings.Join(network, "\n"), strings.Join(wantNet, "\n"))
	}
	if rules[len(rules)-1] != proxy {
		t.Errorf("the last rule is %s, want the proxy's", rules[len(rules)-1])
	}
	for _, r := range rules {
		if strings.HasPrefix(r, "(deny ") && !strings.HasPrefix(r, "(deny default ") && strings.Contains(r, "network") {
			t.Errorf("a network deny the appended allow would override: %s", r)
		}
	}
	for _, ip := range regexp.MustCompile(`ip "([^"]*)"`).FindAllStringSubmatch(text, -1) {
		if !slices.Contains([]string{"localhost:5432", "localhost:49152", "localhost:65535"}, ip[1]) {
			t.Errorf("address %s allowed", ip[1])
		}
	}

	if d := strings.Join(pl.Net.Describe(), "\n"); !strings.Contains(d, "Seatbelt profile") || strings.Contains(d, "Landlock") {
		t.Errorf("the network described:\n%s", d)
	}

	before := slices.Clone(pl.Argv)
	pl.Net.HTTPPort, pl.Net.SOCKSPort = httpPort, socksPort
	run, err := SeatbeltWithProxy(pl)
	if err != nil {
		t.Fatal(err)
	}
	if run.Seatbelt.Profile != text || run.Argv[2] != text {
		t.Errorf("SeatbeltWithProxy runs another profile: argv[2]\n%s", run.Argv[2])
	}
	checkSeatbeltPlan(t, run)
	if !slices.Equal(pl.Argv, before) || pl.Seatbelt.Profile == text {
		t.Errorf("SeatbeltWithProxy changed the plan it copies")
	}

	for name, f := range map[string]func() error{
		"one port":  func() error { _, err := SeatbeltProxyProfile(pl, httpPort, httpPort); return err },
		"port 0":    func() error { _, err := SeatbeltProxyProfile(pl, 0, socksPort); return err },
		"port 2^16": func() error { _, err := SeatbeltProxyProfile(pl, httpPort, 65536); return err },
		"no ports": func() error {
			q := *pl
			n := *pl.Net
			n.HTTPPort, n.SOCKSPort = 0, 0
			q.Net = &n
			_, err := SeatbeltWithProxy(&q)
			return err
		},
		"not filtered": func() error {
			q := *pl
			q.Net = nil
			_, err := SeatbeltProxyProfile(&q, httpPort, socksPort)
			return err
		},
		"not seatbelt": func() error {
			_, err := SeatbeltProxyProfile(&Plan{Backend: backend.Landlock, Net: pl.Net}, httpPort, socksPort)
			return err
		},
	} {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestSeatbeltDenyGlobAgrees: for each deny glob of the built-in
// policies and random relative paths below a root, the glob's regex in
// the profile matches the absolute path iff the policy's own matcher
// (policy.DenyRule.Hides) hides it.
func TestSeatbeltDenyGlobAgrees(t *testing.T) {
	root := macWorkspace
	names := []string{".env", ".env.local", "env", "secrets.yaml", "secrets", "a", "src", ".envrc", "x.env", "secrets.d", ".git", "é"}
	var globs []string
	for _, d := range policy.DefaultDeny {
		if !filepath.IsAbs(d) && !strings.HasPrefix(d, "$") {
			globs = append(globs, d)
		}
	}
	if len(globs) == 0 {
		t.Fatal("no deny globs among the built-in policies'")
	}
	n := 0
	var walk func(rel string, depth int)
	for _, g := range globs {
		rule, err := policy.CompileDeny(g)
		if err != nil {
			t.Fatal(err)
		}
		rx := seatbeltRegex(t, g)
		walk = func(rel string, depth int) {
			if rel != "" {
				n++
				want := rule.Hides(root, root+"/"+rel)
				if got := rx.MatchString(root + "/" + rel); got != want {
					t.Errorf("glob %s, path %s: regex %s matches %v, the policy hides %v", g, rel, rx, got, want)
				}
			}
			if depth == 3 {
				return
			}
			for _, nm := range names {
				walk(strings.TrimPrefix(rel+"/"+nm, "/"), depth+1)
			}
		}
		walk("", 0)
	}
	t.Logf("%d paths checked", n)
}

// seatbeltRegex compiles, with Go's regexp (the same syntax subset), the
// regex the Seatbelt profile carries for the deny glob g.
func seatbeltRegex(t *testing.T, g string) *regexp.Regexp {
	t.Helper()
	re, err := sbpl.GlobRegex(g, true)
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(re)
}

// TestSeatbeltWatched: what needs the violation monitor builds on
// Seatbelt (macOS's log is its monitor), with a tag the monitor can read
// (seatbeltlog.CheckTag); audit.log_allowed and mode permissive do not.
func TestSeatbeltWatched(t *testing.T) {
	tests := []struct {
		name   string
		change func(*policy.Policy)
		refuse string // "": it builds
	}{
		{"on_violation warn", func(p *policy.Policy) { p.OnViolation = policy.OnViolationWarn }, ""},
		{"on_violation log", func(p *policy.Policy) { p.OnViolation = policy.OnViolationLog }, ""},
		{"audit log, denials", func(p *policy.Policy) { p.Audit.Enabled, p.Audit.LogDenied = true, true }, ""},
		{"audit.log_allowed", func(p *policy.Policy) { p.Audit.Enabled, p.Audit.LogAllowed = true, true }, "audit.log_allowed is not built yet for the seatbelt backend"},
		{"mode permissive", func(p *policy.Policy) { p.Mode = policy.ModePermissive }, "--mode permissive is not built yet for the seatbelt backend"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, opts := seatbeltPolicy(t, "development", "standard")
			opts.RunID = ""
			tc.change(p)
			pl, err := Build(p, []string{"true"}, opts)
			if tc.refuse != "" {
				if err == nil || !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), tc.refuse) {
					t.Fatalf("Build: %v, want %q", err, tc.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := seatbeltlog.CheckTag(pl.Seatbelt.Tag); err != nil {
				t.Errorf("the plan's tag: %v", err)
			}
		})
	}
}
