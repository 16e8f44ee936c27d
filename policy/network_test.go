package policy

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/config"
	"go.yaml.in/yaml/v3"
)

// TestNetworkEntries: every entry form netrule takes is accepted from a
// flag and a file; bad entries are one error naming the flag, or the
// file, line and key.
func TestNetworkEntries(t *testing.T) {
	for _, good := range []string{
		"example.com", "example.com:443", "example.com:*", "*", "*:443", "*.example.com",
		"api-*.example.com", "metadata.google.*", "1.2.3.4", "1.2.3.4:22", "10.0.0.0/8",
		"10.0.0.0/8:5432", "::1", "[::1]:8080", "fd00::/8", "[fd00::/8]:443", "Bücher.example",
		"localhost:*",
	} {
		f := newFixture(t)
		if _, err := f.load(Options{Flags: flags(func(l *config.Layer) { l.Network.Allow = []string{good} })}); err != nil {
			t.Errorf("--allow-net %q: %v", good, err)
		}
		// With the network denied: a deny "*" would leave an open network nothing.
		path := f.userConfig("sandbox:\n  network:\n    mode: deny\n    deny:\n      - " + yamlQuote(good) + "\n")
		if _, err := f.load(Options{}); err != nil {
			t.Errorf("%s: network.deny %q: %v", path, good, err)
		}
	}
	for _, tc := range []struct {
		entry string
		msg   string // after `--allow-net "ENTRY": ` or `sandbox.network.allow entry "ENTRY": `
	}{
		{"10.0.0.1/8", "the CIDR 10.0.0.1/8 has host bits set; write 10.0.0.0/8 (or the single address 10.0.0.1)"},
		{"example.com:0", "the port 0 is out of range; a port is 1-65535"},
		{"example.com:65536", "the port 65536 is out of range; a port is 1-65535"},
		{"example.com:http", `the port "http" is not a number; write a port (1-65535) or *`},
		{"https://example.com/", "an entry is a host, not a URL; write the host and port alone, as in example.com:443"},
		{"a b.example", "a space is not allowed in a host"},
		{"example.com:", "the port after ':' is empty; write a port (1-65535) or *"},
		{"", "the entry is empty; entries look like example.com, example.com:443, *.example.com, *:443, 10.0.0.0/8:5432 or [::1]:8080"},
	} {
		f := newFixture(t)
		_, err := f.load(Options{Flags: flags(func(l *config.Layer) { l.Network.Allow = []string{tc.entry} })})
		if want := `--allow-net "` + tc.entry + `": ` + tc.msg; err == nil || err.Error() != want {
			t.Errorf("--allow-net %q:\n got %v\nwant %s", tc.entry, err, want)
		}
		_, err = f.load(Options{Flags: flags(func(l *config.Layer) { l.Network.Deny = []string{tc.entry} })})
		if want := `--deny-net "` + tc.entry + `": ` + tc.msg; err == nil || err.Error() != want {
			t.Errorf("--deny-net %q:\n got %v\nwant %s", tc.entry, err, want)
		}
		if tc.entry == "" {
			continue // a file's empty string is refused when it is parsed
		}
		path := f.userConfig("sandbox:\n  network:\n    allow:\n      - ok.example\n      - " + yamlQuote(tc.entry) + "\n")
		_, err = f.load(Options{})
		if want := path + `:5: sandbox.network.allow entry "` + tc.entry + `": ` + tc.msg; err == nil || err.Error() != want {
			t.Errorf("network.allow %q:\n got %v\nwant %s", tc.entry, err, want)
		}
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Key != config.KeyNetworkAllow || ce.Line != 5 {
			t.Errorf("network.allow %q: not a *config.Error at line 5 of key %s: %#v", tc.entry, config.KeyNetworkAllow, err)
		}
	}
}

// yamlQuote writes s as a YAML double-quoted scalar.
func yamlQuote(s string) string {
	b, _ := yaml.Marshal(s)
	out := strings.TrimSpace(string(b))
	if !strings.HasPrefix(out, `"`) && !strings.HasPrefix(out, "'") {
		out = `"` + out + `"`
	}
	return out
}

// TestNetworkModes: the mode each combination of profile, config and
// flags gives, and the allow list it ends with.
func TestNetworkModes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		user  string // user config
		flags func(l *config.Layer)
		mode  NetMode
		allow []string
		deny  []string
	}{
		{"development is open", "", nil, NetOpen, []string{}, []string{}},
		{"--net loopback", "", func(l *config.Layer) { l.Network.Mode = config.Ptr("loopback") }, NetLoopback, []string{}, []string{}},
		{"network.mode: loopback", "sandbox:\n  network:\n    mode: loopback\n", nil, NetLoopback, []string{}, []string{}},
		{"--allow-net filters", "", func(l *config.Layer) { l.Network.Allow = []string{"a.example:443"} }, NetFiltered, []string{"a.example:443"}, []string{}},
		{"--deny-net on an open network allows *", "", func(l *config.Layer) { l.Network.Deny = []string{"*.evil.example"} }, NetFiltered, []string{"*"}, []string{"*.evil.example"}},
		{"--deny-net with an allow list keeps it", "", func(l *config.Layer) {
			l.Network.Allow = []string{"a.example"}
			l.Network.Deny = []string{"b.example"}
		}, NetFiltered, []string{"a.example"}, []string{"b.example"}},
		{"--deny-net with the network denied stays denied", "", func(l *config.Layer) {
			l.Network.Mode = config.Ptr("deny")
			l.Network.Deny = []string{"b.example"}
		}, NetDeny, []string{}, []string{"b.example"}},
		{"--net loopback after a config allow list drops it", "sandbox:\n  network:\n    allow: [a.example]\n", func(l *config.Layer) { l.Network.Mode = config.Ptr("loopback") }, NetLoopback, []string{}, []string{}},
		{"--net open after a config allow list opens", "sandbox:\n  network:\n    allow: [a.example]\n", func(l *config.Layer) { l.Network.Mode = config.Ptr("open") }, NetOpen, []string{}, []string{}},
		{"enabled: true with an allow list filters", "sandbox:\n  network:\n    enabled: true\n    allow: [\"*:443\"]\n", nil, NetFiltered, []string{"*:443"}, []string{}},
		{"entries are de-duplicated", "sandbox:\n  network:\n    allow: [a.example, a.example]\n", func(l *config.Layer) { l.Network.Allow = []string{"a.example"} }, NetFiltered, []string{"a.example"}, []string{}},
		{"minimal --allow-net filters", "", func(l *config.Layer) {
			l.Profile = config.Ptr("minimal")
			l.Network.Allow = []string{"a.example"}
		}, NetFiltered, []string{"a.example"}, []string{}},
		{"strict keeps the hosts listed", "", func(l *config.Layer) {
			l.Mode = config.Ptr("strict")
			l.Network.Allow = []string{"a.example"}
		}, NetFiltered, []string{"a.example"}, []string{}},
		{"strict turns open off", "", func(l *config.Layer) { l.Mode = config.Ptr("strict") }, NetDeny, []string{}, []string{}},
		{"strict turns open with deny entries off", "", func(l *config.Layer) {
			l.Mode = config.Ptr("strict")
			l.Network.Deny = []string{"b.example"}
		}, NetDeny, []string{}, []string{"b.example"}},
		{"strict keeps loopback", "", func(l *config.Layer) {
			l.Mode = config.Ptr("strict")
			l.Network.Mode = config.Ptr("loopback")
			l.Network.ForwardPorts = []int{5432}
		}, NetLoopback, []string{}, []string{}},
		{"strict drops the ci profile's hosts", "", func(l *config.Layer) {
			l.Mode = config.Ptr("strict")
			l.Profile = config.Ptr("ci")
		}, NetDeny, []string{}, []string{}},
		{"untrusted --allow-net keeps the host", "", func(l *config.Layer) {
			l.Profile = config.Ptr("untrusted")
			l.Network.Allow = []string{"a.example"}
		}, NetFiltered, []string{"a.example"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.user != "" {
				f.userConfig(tc.user)
			}
			opts := Options{}
			if tc.flags != nil {
				opts.Flags = flags(tc.flags)
			}
			p, err := f.load(opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			n := p.Network
			if n.Mode != tc.mode || !reflect.DeepEqual(n.Allow, tc.allow) || !reflect.DeepEqual(n.Deny, tc.deny) {
				t.Errorf("network = %s allow %q deny %q; want %s allow %q deny %q", n.Mode, n.Allow, n.Deny, tc.mode, tc.allow, tc.deny)
			}
		})
	}
}

// TestNetworkErrors: contradictions and rules that can never match are
// refused with one line naming where they were written.
func TestNetworkErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		user  string
		flags func(l *config.Layer)
		want  string // CFG stands for the user config's path
	}{
		{"allow covered by a deny", "", func(l *config.Layer) {
			l.Network.Allow = []string{"api.example.com:443"}
			l.Network.Deny = []string{"*.example.com"}
		}, `--allow-net "api.example.com:443" can never match: the deny entry "*.example.com" (--deny-net) covers it whole, and deny beats allow; remove one of the two`},
		{"allow in a file covered by a deny flag", "sandbox:\n  network:\n    allow:\n      - 10.1.2.0/24\n", func(l *config.Layer) { l.Network.Deny = []string{"10.0.0.0/8"} },
			`CFG:4: sandbox.network.allow entry "10.1.2.0/24" can never match: the deny entry "10.0.0.0/8" (--deny-net) covers it whole, and deny beats allow; remove one of the two`},
		{"deny * with an open network", "", func(l *config.Layer) { l.Network.Deny = []string{"*"} },
			`--deny-net "*" denies every host, so nothing of the open network is left; use --net deny (or network.mode: deny) instead`},
		{"allow * and deny *", "", func(l *config.Layer) {
			l.Network.Allow = []string{"*"}
			l.Network.Deny = []string{"*"}
		}, `--allow-net "*" can never match: the deny entry "*" (--deny-net) covers it whole, and deny beats allow; remove one of the two`},
		{"allow with --net deny", "", func(l *config.Layer) {
			l.Network.Mode = config.Ptr("deny")
			l.Network.Allow = []string{"a.example"}
		}, "--allow-net has entries but the same command line denies the network; remove one of them"},
		{"allow with --net loopback", "", func(l *config.Layer) {
			l.Network.Mode = config.Ptr("loopback")
			l.Network.Allow = []string{"a.example"}
		}, "--allow-net has entries but the same command line sets --net loopback, which reaches no host outside; remove one of them"},
		{"allow with mode loopback in a file", "sandbox:\n  network:\n    mode: loopback\n    allow: [a.example]\n", nil,
			"CFG:4: sandbox.network.allow has entries but the same file sets sandbox.network.mode loopback, which reaches no host outside; remove one of them"},
		{"forward port below 1024 with --net deny", "", func(l *config.Layer) {
			l.Network.Mode = config.Ptr("deny")
			l.Network.ForwardPorts = []int{80}
		}, "--forward-port 80: a port below 1024 cannot be forwarded, because nothing inside the sandbox may listen on it (no CAP_NET_BIND_SERVICE); forward a port from 1024 up"},
		{"forward port below 1024 in loopback mode", "", func(l *config.Layer) {
			l.Network.Mode = config.Ptr("loopback")
			l.Network.ForwardPorts = []int{80}
		}, "--forward-port 80: a port below 1024 cannot be forwarded, because nothing inside the sandbox may listen on it (no CAP_NET_BIND_SERVICE); forward a port from 1024 up"},
		{"forward port below 1024 in filtered mode", "sandbox:\n  network:\n    allow: [a.example]\n    forward_ports: [1023]\n", nil,
			"CFG:4: sandbox.network.forward_ports entry 1023: a port below 1024 cannot be forwarded, because nothing inside the sandbox may listen on it (no CAP_NET_BIND_SERVICE); forward a port from 1024 up"},
		{"forward port out of range", "", func(l *config.Layer) { l.Network.ForwardPorts = []int{65536} }, "--forward-port must be a TCP port from 1 to 65535, not 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			cfg := f.userConfig(tc.user)
			opts := Options{}
			if tc.flags != nil {
				opts.Flags = flags(tc.flags)
			}
			_, err := f.load(opts)
			want := strings.ReplaceAll(tc.want, "CFG", cfg)
			if err == nil || err.Error() != want {
				t.Errorf("got %v\nwant %s", err, want)
			}
		})
	}
	// What is fine: a forward port from 1024 up in loopback and filtered
	// modes, any in open mode, where the host's loopback is shared, and
	// any with mode off.
	for _, fl := range []func(l *config.Layer){
		func(l *config.Layer) {
			l.Network.Mode = config.Ptr("loopback")
			l.Network.ForwardPorts = []int{1024, 65535}
		},
		func(l *config.Layer) { l.Network.Allow = []string{"a.example"}; l.Network.ForwardPorts = []int{5432} },
		func(l *config.Layer) { l.Network.ForwardPorts = []int{80} },
		func(l *config.Layer) {
			l.Mode = config.Ptr("off")
			l.Network.Mode = config.Ptr("deny")
			l.Network.ForwardPorts = []int{80}
		},
		func(l *config.Layer) {
			l.Mode = config.Ptr("off") // unconfined: nothing to forward into
			l.Network.Mode = config.Ptr("loopback")
			l.Network.ForwardPorts = []int{80}
		},
	} {
		f := newFixture(t)
		if _, err := f.load(Options{Flags: flags(fl)}); err != nil {
			t.Errorf("%+v: %v", flags(fl).Network, err)
		}
	}
}

// TestNetworkTightenOnly: a file in the workspace may add deny entries
// and turn the network down, never add hosts or ports or open it.
func TestNetworkTightenOnly(t *testing.T) {
	const hint = "such files may only add restrictions; put it in ~/.config/cordon/config.yaml"
	for _, tc := range []struct {
		name, user, ws string
		want           string // an error (WS stands for .cordon.yaml), or ""
		mode           NetMode
		allow, deny    []string
	}{
		{"allow refused", "", "sandbox:\n  network:\n    allow: [\"*\"]\n", "WS:3: sandbox.network.allow cannot be set by a file inside the workspace: " + hint + " or pass --allow-net", "", nil, nil},
		{"allow refused over a filtered network", "sandbox:\n  network:\n    allow: [a.example]\n", "sandbox:\n  network:\n    allow: [b.example]\n", "WS:3: sandbox.network.allow cannot be set by a file inside the workspace: " + hint + " or pass --allow-net", "", nil, nil},
		{"forward ports refused", "sandbox:\n  network:\n    mode: loopback\n", "sandbox:\n  network:\n    forward_ports: [5432]\n", "WS:3: sandbox.network.forward_ports cannot be set by a file inside the workspace: " + hint + " or pass --forward-port", "", nil, nil},
		{"open refused over a filtered network", "sandbox:\n  network:\n    allow: [a.example]\n", "sandbox:\n  network:\n    mode: open\n", "WS:3: sandbox.network.mode: open cannot be set by a file inside the workspace: " + hint + " or pass --net", "", nil, nil},
		{"loopback refused over deny", "sandbox:\n  network:\n    mode: deny\n", "sandbox:\n  network:\n    mode: loopback\n", "WS:3: sandbox.network.mode: loopback (looser than the current deny) cannot be set by a file inside the workspace: " + hint + " or pass --net", "", nil, nil},
		{"deny tightens an open network", "", "sandbox:\n  network:\n    deny: [\"*.evil.example\", \"10.0.0.0/8\"]\n", "", NetFiltered, []string{"*"}, []string{"*.evil.example", "10.0.0.0/8"}},
		{"deny tightens a filtered network", "sandbox:\n  network:\n    allow: [\"*:443\"]\n", "sandbox:\n  network:\n    deny: [evil.example]\n", "", NetFiltered, []string{"*:443"}, []string{"evil.example"}},
		{"loopback over filtered", "sandbox:\n  network:\n    allow: [a.example]\n", "sandbox:\n  network:\n    mode: loopback\n", "", NetLoopback, []string{}, []string{}},
		{"deny over loopback", "sandbox:\n  network:\n    mode: loopback\n", "sandbox:\n  network:\n    enabled: false\n", "", NetDeny, []string{}, []string{}},
		// A deny entry that makes a user's allow entry dead is refused,
		// naming the allow entry and the file that denies it.
		{"deny covering a user allow", "sandbox:\n  network:\n    allow:\n      - a.example:443\n", "sandbox:\n  network:\n    deny: [a.example]\n", `CFG:4: sandbox.network.allow entry "a.example:443" can never match: the deny entry "a.example" (WS:3) covers it whole, and deny beats allow; remove one of the two`, "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			cfg := f.userConfig(tc.user)
			ws := f.wsConfig(tc.ws)
			p, err := f.load(Options{})
			if tc.want != "" {
				want := strings.NewReplacer("WS", ws, "CFG", cfg).Replace(tc.want)
				if err == nil || err.Error() != want {
					t.Errorf("got %v\nwant %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if n := p.Network; n.Mode != tc.mode || !reflect.DeepEqual(n.Allow, tc.allow) || !reflect.DeepEqual(n.Deny, tc.deny) {
				t.Errorf("network = %s allow %q deny %q; want %s allow %q deny %q", n.Mode, n.Allow, n.Deny, tc.mode, tc.allow, tc.deny)
			}
		})
	}
}

// TestNetworkSources: each entry carries where it was written, and cordon
// policy prints it as a comment.
func TestNetworkSources(t *testing.T) {
	f := newFixture(t)
	cfg := f.userConfig("sandbox:\n  network:\n    allow:\n      - a.example:443\n    deny: [\"10.0.0.0/8\"]\n")
	ws := f.wsConfig("sandbox:\n  network:\n    deny: [evil.example]\n")
	p := f.mustLoad(Options{Flags: flags(func(l *config.Layer) { l.Network.Allow = []string{"b.example"} })})
	want := []NetSource{
		{Entry: "a.example:443", Source: cfg + ":4"},
		{Entry: "b.example", Source: "--allow-net"},
		{Entry: "10.0.0.0/8", Source: cfg + ":5"},
		{Entry: "evil.example", Source: ws + ":3"},
	}
	if !reflect.DeepEqual(p.Network.Sources, want) {
		t.Errorf("Sources = %+v\nwant %+v", p.Network.Sources, want)
	}
	out, err := yaml.Marshal(p.Network)
	if err != nil {
		t.Fatal(err)
	}
	wantYAML := "mode: filtered\nallow:\n    - a.example:443 # " + cfg + ":4\n    - b.example # --allow-net\ndeny:\n    - 10.0.0.0/8 # " + cfg + ":5\n    - evil.example # " + ws + ":3\nforward_ports: []\n"
	if string(out) != wantYAML {
		t.Errorf("YAML:\n%s\nwant\n%s", out, wantYAML)
	}
	f2 := newFixture(t)
	p = f2.mustLoad(Options{Flags: flags(func(l *config.Layer) { l.Network.Deny = []string{"169.254.169.254"} })})
	out, _ = yaml.Marshal(p.Network)
	if want := "allow:\n    - '*' # an open network with deny entries: every host but the denied ones\n"; !strings.Contains(string(out), want) {
		t.Errorf("YAML lacks %q:\n%s", want, out)
	}
}

// TestCIProfileNetwork: the ci profile allows what the host's tools are
// configured to use, read from a fake home and variables set here only,
// each with its source; what the repository names is listed, not
// allowed; the user's flags add to it, deny entries take from it, and
// --net, strict mode and mode off replace it.
func TestCIProfileNetwork(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git missing")
	}
	f := newFixture(t)
	f.env["PATH"] = "" // no tool is asked for its defaults: everything is configured
	f.env["GOPROXY"] = "https://goproxy.corp.example/mod,direct"
	f.env["GOSUMDB"] = "off"
	f.write(filepath.Join(f.home, ".npmrc"), "registry=https://npm.corp.example/\n")
	f.write(filepath.Join(f.home, ".config", "pip", "pip.conf"), "[global]\nindex-url = https://pypi.corp.example/simple\n")
	f.write(filepath.Join(f.home, ".cargo", "config.toml"), "[source.crates-io]\nreplace-with = \"corp\"\n[source.corp]\nregistry = \"sparse+https://crates.corp.example/index/\"\n")
	f.write(filepath.Join(f.home, ".gitconfig"), "[credential \"https://git.corp.example\"]\n\thelper = store\n")
	f.write(filepath.Join(f.ws, ".npmrc"), "registry=https://npm.evil.example/\n")
	for _, args := range [][]string{{"init", "-q"}, {"remote", "add", "origin", "https://git.corp.example/org/repo.git"}, {"remote", "add", "fork", "https://git.evil.example/org/repo.git"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = f.ws, []string{"HOME=" + f.home, "PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	ci := func(fn func(l *config.Layer)) Options {
		return Options{Flags: flags(func(l *config.Layer) {
			l.Profile = config.Ptr("ci")
			if fn != nil {
				fn(l)
			}
		})}
	}
	p := f.mustLoad(ci(nil))
	wantAllow := []string{"goproxy.corp.example:443", "npm.corp.example:443", "pypi.corp.example:443", "crates.corp.example:443", "git.corp.example:443"}
	if p.Network.Mode != NetFiltered || !reflect.DeepEqual(p.Network.Allow, wantAllow) {
		t.Fatalf("ci network = %s %q, want filtered %q", p.Network.Mode, p.Network.Allow, wantAllow)
	}
	wantSources := []NetSource{
		{Entry: "goproxy.corp.example:443", Source: "GOPROXY: GOPROXY in the environment"},
		{Entry: "npm.corp.example:443", Source: "npm: ~/.npmrc: registry"},
		{Entry: "pypi.corp.example:443", Source: "pip: ~/.config/pip/pip.conf: index-url"},
		{Entry: "crates.corp.example:443", Source: "cargo: ~/.cargo/config.toml: source.corp.registry"},
		{Entry: "git.corp.example:443", Source: "git: remote origin (url) of the workspace's repository; your git config names git.corp.example"},
	}
	if !reflect.DeepEqual(p.Network.Sources, wantSources) {
		t.Errorf("Sources = %+v\nwant %+v", p.Network.Sources, wantSources)
	}
	var left []string
	for _, n := range p.Network.NotAllowed {
		left = append(left, n.Entry)
	}
	if want := []string{"npm.evil.example:443", "git.evil.example:443"}; !reflect.DeepEqual(left, want) {
		t.Errorf("NotAllowed = %q, want %q", left, want)
	}
	out, _ := yaml.Marshal(p.Network)
	for _, want := range []string{
		"- goproxy.corp.example:443 # GOPROXY: GOPROXY in the environment\n",
		"not_allowed:\n    - entry: npm.evil.example:443\n      source: 'npm: registry in the project''s .npmrc'",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("cordon policy lacks %q:\n%s", want, out)
		}
	}

	// The user's allow entries add to the list; a deny entry takes a
	// profile's entry out (it is listed, not refused).
	p = f.mustLoad(ci(func(l *config.Layer) {
		l.Network.Allow = []string{"extra.example:443"}
		l.Network.Deny = []string{"*.corp.example:443"}
	}))
	if want := []string{"extra.example:443"}; !reflect.DeepEqual(p.Network.Allow, want) {
		t.Errorf("ci with --allow-net and --deny-net: allow %q, want %q", p.Network.Allow, want)
	}
	if n := p.Network.NotAllowed; len(n) < 3 || n[len(n)-1].Why != "a deny entry covers it" {
		t.Errorf("the denied profile entries are not listed: %+v", n)
	}
	for _, tc := range []struct {
		name string
		fn   func(l *config.Layer)
		mode NetMode
	}{
		{"--net deny", func(l *config.Layer) { l.Network.Mode = config.Ptr("deny") }, NetDeny},
		{"--net open", func(l *config.Layer) { l.Network.Mode = config.Ptr("open") }, NetOpen},
		{"strict", func(l *config.Layer) { l.Mode = config.Ptr("strict") }, NetDeny},
	} {
		p := f.mustLoad(ci(tc.fn))
		if p.Network.Mode != tc.mode || len(p.Network.Allow) != 0 || len(p.Network.Sources) != 0 {
			t.Errorf("ci %s: %+v", tc.name, p.Network)
		}
	}
	// A workspace file may choose ci over development: it only tightens.
	f.wsConfig("sandbox:\n  profile: ci\n")
	p = f.mustLoad(Options{})
	if p.Network.Mode != NetFiltered || !slices.Equal(p.Network.Allow, wantAllow) {
		t.Errorf(".cordon.yaml profile: ci: %s %q", p.Network.Mode, p.Network.Allow)
	}
}
