//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNetPolicyRefusals: a bad network rule, a rule that can never match
// and a forward port the mode cannot serve are one cordon: line naming
// the flag, or the file, line and key, exit 125, before anything runs,
// for cordon policy and cordon run alike.
func TestNetPolicyRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	marker := filepath.Join(e.ws, "ran")
	cfg := filepath.Join(e.home, ".config", "cordon", "config.yaml")
	for _, tc := range []struct {
		name string
		args []string
		user string // the user config, if any
		ws   string // the workspace's .cordon.yaml, if any
		want string // WS stands for the .cordon.yaml, CFG for the user config
	}{
		{"CIDR with host bits", []string{"--allow-net", "10.0.0.1/8"}, "", "",
			`cordon: --allow-net "10.0.0.1/8": the CIDR 10.0.0.1/8 has host bits set; write 10.0.0.0/8 (or the single address 10.0.0.1)`},
		{"port out of range", []string{"--deny-net", "example.com:70000"}, "", "",
			`cordon: --deny-net "example.com:70000": the port 70000 is out of range; a port is 1-65535`},
		{"a URL", []string{"--allow-net", "https://example.com/"}, "", "",
			`cordon: --allow-net "https://example.com/": an entry is a host, not a URL; write the host and port alone, as in example.com:443`},
		{"never matches", []string{"--allow-net", "api.example.com:443", "--deny-net", "*.example.com"}, "", "",
			`cordon: --allow-net "api.example.com:443" can never match: the deny entry "*.example.com" (--deny-net) covers it whole, and deny beats allow; remove one of the two`},
		{"deny everything of an open network", []string{"--deny-net", "*"}, "", "",
			`cordon: --deny-net "*" denies every host, so nothing of the open network is left; use --net deny (or network.mode: deny) instead`},
		{"allow with --net loopback", []string{"--net", "loopback", "--allow-net", "example.com"}, "", "",
			"cordon: --allow-net has entries but the same command line sets --net loopback, which reaches no host outside; remove one of them"},
		{"forward port below 1024 with the network denied", []string{"--profile", "untrusted", "--forward-port", "443"}, "", "",
			"cordon: --forward-port 443: a port below 1024 cannot be forwarded, because nothing inside the sandbox may listen on it (no CAP_NET_BIND_SERVICE); forward a port from 1024 up"},
		{"forward port below 1024", []string{"--net", "loopback", "--forward-port", "80"}, "", "",
			"cordon: --forward-port 80: a port below 1024 cannot be forwarded, because nothing inside the sandbox may listen on it (no CAP_NET_BIND_SERVICE); forward a port from 1024 up"},
		{"forward port out of range", []string{"--forward-port", "0"}, "", "",
			`cordon: --forward-port "0": give a TCP port number from 1 to 65535`},
		{"bad entry in the user config", nil, "sandbox:\n  network:\n    deny:\n      - metadata.google.*\n      - \"fd00::/8:443\"\n", "",
			"cordon: CFG:5: sandbox.network.deny entry \"fd00::/8:443\": an IPv6 CIDR with a port needs brackets: write [fd00::/8]:443"},
		{"allow in the workspace's file", nil, "", "sandbox:\n  network:\n    allow: [\"*\"]\n",
			"cordon: WS:3: sandbox.network.allow cannot be set by a file inside the workspace: such files may only add restrictions; put it in ~/.config/cordon/config.yaml or pass --allow-net"},
		{"the workspace's deny kills a user allow", []string{"--allow-net", "pkgs.example:443"}, "", "sandbox:\n  network:\n    deny: [pkgs.example]\n",
			`cordon: --allow-net "pkgs.example:443" can never match: the deny entry "pkgs.example" (WS:3) covers it whole, and deny beats allow; remove one of the two`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(cfg)
			os.Remove(filepath.Join(e.ws, ".cordon.yaml"))
			if tc.user != "" {
				writeFile(t, cfg, tc.user)
			}
			if tc.ws != "" {
				writeFile(t, filepath.Join(e.ws, ".cordon.yaml"), tc.ws)
			}
			want := strings.NewReplacer("WS", filepath.Join(e.ws, ".cordon.yaml"), "CFG", cfg).Replace(tc.want)
			for _, cmd := range [][]string{{"policy"}, {"run"}} {
				args := append(append(cmd, tc.args...), "--", "touch", marker)
				if cmd[0] == "policy" {
					args = append(cmd, tc.args...)
				}
				r := e.run(args...)
				if r.code != 125 || strings.TrimRight(r.stderr, "\n") != want || r.stdout != "" {
					t.Errorf("cordon %s: want exit 125, no output and\n%s\ngot %s", cmd[0], want, r)
				}
				checkOneCordonLine(t, r)
			}
			if exists(marker) {
				t.Errorf("the command ran")
			}
		})
	}
}

// networkSection returns the network: section of cordon policy's YAML.
func networkSection(out string) string {
	_, after, ok := strings.Cut(out, "\nnetwork:\n")
	if !ok {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(after, "\n") {
		if !strings.HasPrefix(l, " ") {
			break
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestNetPolicyPrint: cordon policy prints the network's mode, each
// entry with where it came from, and, for the ci profile, the hosts the
// (fake) host's tools are configured to use, with what the repository
// asked for listed apart, not allowed.
func TestNetPolicyPrint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := filepath.Join(e.home, ".config", "cordon", "config.yaml")
	writeFile(t, cfg, "sandbox:\n  network:\n    deny:\n      - metadata.google.*\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"open with deny entries is filtered", []string{"--deny-net", "169.254.169.254"}, `  mode: filtered
  allow:
    - '*' # an open network with deny entries: every host but the denied ones
  deny:
    - metadata.google.* # CFG:4
    - 169.254.169.254 # --deny-net
  forward_ports: []
`},
		{"loopback", []string{"--net", "loopback", "--forward-port", "5432"}, `  mode: loopback
  allow: []
  deny:
    - metadata.google.* # CFG:4
  forward_ports:
    - 5432
`},
		{"allow list", []string{"--allow-net", "*.corp.example:443", "--allow-net", "10.0.0.0/8:5432"}, `  mode: filtered
  allow:
    - '*.corp.example:443' # --allow-net
    - 10.0.0.0/8:5432 # --allow-net
  deny:
    - metadata.google.* # CFG:4
  forward_ports: []
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.run(append([]string{"policy"}, tc.args...)...)
			want := strings.ReplaceAll(tc.want, "CFG", cfg)
			if r.code != 0 || networkSection(r.stdout) != want {
				t.Errorf("cordon policy %q: network section\n%s\nwant\n%s\n(%s)", tc.args, networkSection(r.stdout), want, r)
			}
		})
	}

	t.Run("ci", func(t *testing.T) {
		if _, err := exec.LookPath("git"); err != nil {
			skipOrFail(t, "git missing")
		}
		e := newEnv(t)
		e.extra = []string{
			"GOPROXY=https://goproxy.corp.example/mod,direct",
			"GOSUMDB=sum.corp.example+ab12 https://sumdb.corp.example",
			"npm_config_registry=https://npm.corp.example/",
		}
		writeFile(t, filepath.Join(e.home, ".config", "pip", "pip.conf"), "[global]\nindex-url = https://pypi.corp.example/simple\n")
		writeFile(t, filepath.Join(e.home, ".cargo", "config.toml"), "[registries.corp]\nindex = \"sparse+https://crates.corp.example/\"\n")
		writeFile(t, filepath.Join(e.home, ".ssh", "known_hosts"), "git.corp.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
		writeFile(t, filepath.Join(e.ws, ".npmrc"), "@evil:registry=https://npm.evil.example/\n")
		for _, args := range [][]string{{"init", "-q"}, {"remote", "add", "origin", "git@git.corp.example:org/repo.git"}, {"remote", "add", "fork", "https://git.evil.example/org/repo.git"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir, cmd.Env = e.ws, e.environ()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %q: %v\n%s", args, err, out)
			}
		}
		r := e.run("policy", "--profile", "ci", "--allow-net", "extra.example:443")
		got := networkSection(r.stdout)
		for _, want := range []string{
			"  mode: filtered\n  allow:\n",
			"    - goproxy.corp.example:443 # GOPROXY: GOPROXY in the environment\n",
			"    - sumdb.corp.example:443 # GOSUMDB: GOSUMDB in the environment\n",
			"    - npm.corp.example:443 # npm: npm_config_registry in the environment\n",
			"    - pypi.corp.example:443 # pip: ~/.config/pip/pip.conf: index-url\n",
			"    - crates.corp.example:443 # cargo: ~/.cargo/config.toml: registries.corp.index\n",
			"    - git.corp.example:22 # git: remote origin (url) of the workspace's repository; git.corp.example is in ~/.ssh/known_hosts\n",
			"    - extra.example:443 # --allow-net\n",
			"  not_allowed:\n",
			"    - entry: npm.evil.example:443\n",
			"    - entry: git.evil.example:443\n",
			"allow it with --allow-net git.evil.example:443",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("cordon policy --profile ci lacks %q:\n%s\n(%s)", want, got, r)
			}
		}
		for _, never := range []string{"- npm.evil.example", "- git.evil.example", "ab12"} {
			if strings.Contains(got, never) {
				t.Errorf("cordon policy --profile ci shows %q:\n%s", never, got)
			}
		}
		// The registries your own tool configuration names, and only
		// those (not a git remote, not a name you added), may resolve
		// to a private address: --explain says so.
		x := e.run("policy", "--profile", "ci", "--allow-net", "extra.example:443", "--explain")
		const note = "registries your own tool configuration names may resolve to a private address (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7), for these names only: goproxy.corp.example, sumdb.corp.example, npm.corp.example, pypi.corp.example, crates.corp.example; loopback, link-local and metadata addresses stay refused"
		if x.code != 0 || !strings.Contains(x.stdout, note) {
			t.Errorf("cordon policy --profile ci --explain lacks %q:\n%s", note, x)
		}
		// Denying the network replaces the list.
		if r := e.run("policy", "--profile", "ci", "--net", "deny"); r.code != 0 || networkSection(r.stdout) != "  mode: deny\n  allow: []\n  deny: []\n  forward_ports: []\n" {
			t.Errorf("ci --net deny:\n%s", r)
		}
	})
}
