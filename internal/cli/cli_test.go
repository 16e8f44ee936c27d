package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/spf13/cobra"
)

// parse registers the policy flags on a fresh command and parses args.
func parse(t *testing.T, args ...string) (*cobra.Command, *policyFlags) {
	t.Helper()
	var pf policyFlags
	c := &cobra.Command{Use: "run"}
	pf.register(c.Flags())
	if err := c.ParseFlags(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return c, &pf
}

func TestFlagLayerErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--max-memory", "lots"}, `--max-memory "lots": give a whole number of megabytes`},
		{[]string{"--max-procs", "1.5"}, `--max-procs "1.5": give a whole number of processes`},
		{[]string{"--mode", "bogus"}, `--mode "bogus": unknown value; use one of off, permissive, standard, strict`},
		{[]string{"--sandbox", "nope"}, `--sandbox "nope": unknown value`},
		{[]string{"--profile", "nope"}, `--profile "nope": unknown value; use one of minimal, development, ci, untrusted`},
		{[]string{"--net", "maybe"}, `--net "maybe": unknown value; use one of deny, open, loopback`},
		{[]string{"--backend", "docker"}, `--backend "docker": unknown value`},
		{[]string{"--forward-port", "70000"}, `--forward-port "70000": give a TCP port number from 1 to 65535`},
		{[]string{"--timeout", "soon"}, `--timeout "soon": give a positive duration`},
		{[]string{"--timeout", "-3s"}, `--timeout "-3s": give a positive duration`},
		{[]string{"--no-sandbox", "--mode", "strict"}, "--no-sandbox and --mode strict disagree"},
		{[]string{"--mode", "strict", "--sandbox", "off"}, `--mode "strict" and --sandbox "off" disagree`},
		{[]string{"--profile", "ci", "--sandbox-profile", "minimal"}, "disagree"},
		{[]string{"--audit-log", "/tmp/a.jsonl"}, "--audit-log: cordon run writes no audit records"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c, pf := parse(t, tc.args...)
			_, err := pf.layer(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestFlagLayerValues(t *testing.T) {
	c, pf := parse(t, "--sandbox", "strict", "--sandbox-profile", "ci", "--net", "deny", "--max-memory", "512",
		"--timeout", "90", "--allow-write", "/a", "--allow-write", "/b", "--env", "X=1", "--forward-port", "8080")
	l, err := pf.layer(c)
	if err != nil {
		t.Fatal(err)
	}
	if *l.Mode != "strict" || l.Name("sandbox.mode") != "--sandbox" {
		t.Errorf("mode %q named %q", *l.Mode, l.Name("sandbox.mode"))
	}
	if *l.Profile != "ci" || *l.Network.Mode != "deny" || *l.Resources.MaxMemoryMB != 512 {
		t.Errorf("profile %q net %q mem %d", *l.Profile, *l.Network.Mode, *l.Resources.MaxMemoryMB)
	}
	if *l.Timeout != 90*time.Second || len(l.Filesystem.Write) != 2 || l.Env[0] != "X=1" || l.Network.ForwardPorts[0] != 8080 {
		t.Errorf("timeout %v write %q env %q ports %v", *l.Timeout, l.Filesystem.Write, l.Env, l.Network.ForwardPorts)
	}
	c, pf = parse(t, "--no-sandbox")
	if l, err = pf.layer(c); err != nil || *l.Mode != "off" {
		t.Fatalf("--no-sandbox: %v", err)
	}
	c, pf = parse(t)
	if l, err = pf.layer(c); err != nil || l.Mode != nil || l.Profile != nil || l.Timeout != nil {
		t.Fatalf("no flags must set nothing: %+v %v", l, err)
	}
}

func TestParseTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{"30": 30 * time.Second, "1.5": 1500 * time.Millisecond, "5m": 5 * time.Minute, "250ms": 250 * time.Millisecond} {
		if got, err := parseTimeout(in); err != nil || got != want {
			t.Errorf("parseTimeout(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "0s", "", "x", "-1"} {
		if _, err := parseTimeout(in); err == nil {
			t.Errorf("parseTimeout(%q) must fail", in)
		}
	}
}

func TestMainErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "no command given"},
		{[]string{"run", "--bogus", "--", "true"}, "unknown flag: --bogus"},
		{[]string{"test"}, "no command given: use cordon test [flags] -- CMD [ARG...]"},
		{[]string{"shell"}, "cordon shell needs a terminal on stdin and stdout; run one command with cordon run -- CMD"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRoot()
			root.SetArgs(tc.args)
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{"plain": "plain", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "**/.env": "'**/.env'"} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestExplainLaunchNeeds: --explain says what the launcher does for the
// plan, from the fields its builder set.
func TestExplainLaunchNeeds(t *testing.T) {
	for _, tc := range []struct {
		name string
		pl   plan.Plan
		want []string
	}{
		{"bwrap", plan.Plan{Backend: backend.Bwrap, LockWorkspace: true, PidNamespace: true},
			[]string{"launch: holds the workspace's lock for the run", "launch: pid namespace: killing bwrap ends the whole sandbox"}},
		{"landlock", plan.Plan{Backend: backend.Landlock, HelperIsChild: true},
			[]string{"launch: the helper is cordon's child and becomes the command: no pid namespace"}},
		{"none", plan.Plan{Backend: backend.None}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			writeExplain(&out, &tc.pl)
			got := out.String()
			if n := strings.Count(got, "\nlaunch: "); n != len(tc.want) {
				t.Errorf("%d launch lines, want %d:\n%s", n, len(tc.want), got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, "\n"+w) {
					t.Errorf("missing %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestExplainHostEnv: --explain shows the command's environment and says
// that the process cordon starts on the host gets none of it (only the
// helper's GOMAXPROCS).
func TestExplainHostEnv(t *testing.T) {
	for _, tc := range []struct {
		backend backend.Name
		want    string // "": no host env line
	}{
		{backend.Bwrap, "host env: GOMAXPROCS=1 (bwrap runs on the host with it; the env above reaches the command only through the helper's spec, on fd 4)\n"},
		{backend.Landlock, "host env: GOMAXPROCS=1 (the helper runs on the host with it; the env above reaches the command only through the helper's spec, on fd 4)\n"},
		{backend.None, ""},
	} {
		t.Run(string(tc.backend), func(t *testing.T) {
			var out bytes.Buffer
			writeExplain(&out, &plan.Plan{Backend: tc.backend, Argv: []string{"/usr/bin/bwrap", "--", "true"}, Env: []string{"LD_PRELOAD=/ws/x.so"}})
			got := out.String()
			if !strings.Contains(got, "env:\n  LD_PRELOAD=/ws/x.so\n") {
				t.Errorf("the command's environment is missing:\n%s", got)
			}
			if tc.want == "" {
				if strings.Contains(got, "host env:") {
					t.Errorf("mode off runs nothing on the host but the command:\n%s", got)
				}
			} else if !strings.Contains(got, tc.want) {
				t.Errorf("missing %q:\n%s", tc.want, got)
			}
		})
	}
}

// TestExplainHelperMounts: --explain prints the mounts the helper makes,
// in their order, and the command's user namespace.
func TestExplainHelperMounts(t *testing.T) {
	pl := &plan.Plan{Backend: backend.Bwrap, Argv: []string{"/usr/bin/bwrap", "--", "true"}, Spec: helperspec.Spec{
		Mounts: []helperspec.Mount{{Dst: "/ws/r/.git"}, {Dst: "/ws/r/.git/hooks", ReadOnly: true},
			{Src: helperspec.PlaceholderDir + "/commondir", Dst: "/ws/r/.git/commondir", ReadOnly: true}},
		User: &helperspec.User{UID: 1001, GID: 1002}}}
	var out strings.Builder
	writeExplain(&out, pl)
	want := "helper mounts (first, in this order):\n  --bind /ws/r/.git /ws/r/.git\n  --ro-bind /ws/r/.git/hooks /ws/r/.git/hooks\n" +
		"  --ro-bind /run/cordon/placeholders/commondir /ws/r/.git/commondir\nhelper user namespace: the command runs as uid 1001, gid 1002\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("explain:\n%s\nwant it to hold:\n%s", out.String(), want)
	}
}
