package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/result"
)

func TestConfigSnippet(t *testing.T) {
	const home = "/h"
	for _, tc := range []struct {
		name string
		vs   []result.Violation
		want string
	}{
		{"nothing to allow", []result.Violation{{Rule: "filesystem.deny: /h/.ssh", Locked: true}}, ""},
		{"reads, writes and a socket, each once", []result.Violation{
			{Allow: "--allow-read /h/.config/foo"},
			{Allow: "--allow-write /h/src/other"},
			{Allow: "--allow-write /h/src/other"},
			{Allow: "--allow-unix-socket /run/user/1000/agent.sock"},
		}, "sandbox:\n  filesystem:\n    read: [\"~/.config/foo\"]\n    write: [\"~/src/other\"]\n  unix_sockets: [\"/run/user/1000/agent.sock\"]\n"},
		{"a hostile name stays one quoted scalar", []result.Violation{{Allow: "--allow-read /h/a\"], evil: [\"\n"}},
			"sandbox:\n  filesystem:\n    read: [\"~/a\\\"], evil: [\\\"\\x0a\"]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := configSnippet(tc.vs, home); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestWriteReport(t *testing.T) {
	var b strings.Builder
	writeReport(&b, &result.Result{}, "/h")
	if !strings.Contains(b.String(), "the violation monitor did not run") {
		t.Errorf("no monitor: %q", b.String())
	}
	b.Reset()
	writeReport(&b, &result.Result{Monitor: &result.Monitor{Calls: 12}}, "/h")
	if b.String() != "cordon: test: nothing was denied (12 calls watched)\n" {
		t.Errorf("nothing denied: %q", b.String())
	}
	b.Reset()
	writeReport(&b, &result.Result{Monitor: &result.Monitor{Calls: 9, More: 2},
		Violations: []result.Violation{{Operation: "file-read", Path: "/h/x", Rule: "filesystem.read: not listed", Allow: "--allow-read /h/x", Count: 1}}}, "/h")
	for _, w := range []string{"cordon: test: 3 denied (9 calls watched):\n", "  file-read ~/x: filesystem.read: not listed; to allow it: --allow-read ~/x\n", "and 2 more distinct denials", "read: [\"~/x\"]"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, b.String())
		}
	}
}

// TestWriteReportLog: a Seatbelt run's report counts the denials of
// macOS's log, and lists those of operations the policy does not name.
func TestWriteReportLog(t *testing.T) {
	var b strings.Builder
	writeReport(&b, &result.Result{Monitor: &result.Monitor{Calls: 4, FromLog: true, Other: 4,
		OtherSeen: []string{"mach-lookup com.apple.FontServer", "sysctl-read kern.bootargs\x1b[2J"}}}, "/h")
	for _, w := range []string{"cordon: test: nothing was denied (4 denials in macOS's log)\n", "and 4 denials of operations the policy does not name",
		"  mach-lookup com.apple.FontServer\n", `  "sysctl-read kern.bootargs\x1b[2J"` + "\n", "(2 more, with repeats)"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, b.String())
		}
	}
}

func TestLearnNetwork(t *testing.T) {
	deny := &policy.Policy{Profile: "development", Network: policy.Network{Mode: policy.NetDeny}}
	for _, tc := range []struct {
		name      string
		vs        []result.Violation
		loopback  []int
		wantMode  policy.NetMode
		wantAllow []string
		wantFwd   []int
	}{
		{"a loopback port is forwarded, not allowed", []result.Violation{{Operation: "network-connect", Address: "127.0.0.1:4873", Rule: "network: deny"}}, []int{4873},
			policy.NetLoopback, nil, []int{4873}},
		{"an address is allowed; the allow makes the network filtered", []result.Violation{{Operation: "network-connect", Address: "192.0.2.1:443", Rule: "network: deny"}}, []int{4873},
			"", []string{"192.0.2.1:443"}, []int{4873}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := learn(deny, &result.Result{Violations: tc.vs, Monitor: &result.Monitor{LoopbackPorts: tc.loopback}}, "/h")
			if l.netMode != tc.wantMode || !slices.Equal(l.allowNet, tc.wantAllow) || !slices.Equal(l.forward, tc.wantFwd) {
				t.Errorf("mode %q allow %q forward %v; want %q %q %v", l.netMode, l.allowNet, l.forward, tc.wantMode, tc.wantAllow, tc.wantFwd)
			}
		})
	}
}

// TestWriteLearnedHappened: a secret or protected path the run could not
// keep out is never listed as left denied: it is one warning line, unless
// a planted-file warning names it already; what was kept out is listed.
func TestWriteLearnedHappened(t *testing.T) {
	p := &policy.Policy{Profile: "development"}
	res := &result.Result{Monitor: &result.Monitor{Calls: 3}, Violations: []result.Violation{
		{Operation: "file-write", Path: "/h/ws/.envrc", Rule: "protected: **/.envrc", Locked: true, Count: 1},
		{Operation: "file-write", Path: "/h/ws/sub/.envrc", Rule: "protected: **/.envrc", Locked: true, Unenforced: "mode permissive", Count: 1},
		{Operation: "file-write", Path: "/h/ws/x/.vscode/tasks.json", Rule: "protected: **/.vscode/", Locked: true, Unenforced: "mode permissive", Count: 1},
	}, Planted: []result.Planted{{Path: "/h/ws/x/.vscode", Kind: "name"}}}
	var out, warn strings.Builder
	if err := writeLearned(&out, &warn, p, res, "/h", []string{"true"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "# Left denied: secrets and protected paths are never allowed.\n#   file-write: protected: **/.envrc\n#     ~/ws/.envrc\n") ||
		strings.Contains(out.String(), "sub/.envrc") || strings.Contains(out.String(), "tasks.json") {
		t.Errorf("policy:\n%s", out.String())
	}
	want := "cordon: warning: file-write ~/ws/sub/.envrc: protected: **/.envrc denies it, but it happened: mode permissive (cordon learn could not keep it out): review it\n"
	if warn.String() != want {
		t.Errorf("warnings %q, want %q", warn.String(), want)
	}
}

// TestLearnNoise: what a tool keeps for itself and runs without (Go's
// telemetry, and the directories made to hold it) is left out of the
// policy and listed in a comment; another write in the same directory
// (go env -w) is learnt.
func TestLearnNoise(t *testing.T) {
	p := &policy.Policy{Profile: "development"}
	res := &result.Result{Monitor: &result.Monitor{Calls: 4}, Violations: []result.Violation{
		{Operation: "file-write", Path: "/h/.config/go", Rule: "filesystem.write: not listed", Count: 1},
		{Operation: "file-write", Path: "/h/.config/go/telemetry/local/go.count", Rule: "filesystem.write: not listed", Allow: "--allow-write /h/.config/go/telemetry/local", Count: 1},
		{Operation: "file-read", Path: "/h/.config/go/telemetry/mode", Rule: "filesystem.read: not listed", Allow: "--allow-read /h/.config/go/telemetry", Count: 1},
		{Operation: "file-write", Path: "/h/.config/gopls/x", Rule: "filesystem.write: not listed", Allow: "--allow-write /h/.config/gopls", Count: 1},
	}}
	var out, warn strings.Builder
	if err := writeLearned(&out, &warn, p, res, "/h", []string{"go", "build"}); err != nil {
		t.Fatal(err)
	}
	want := `sandbox:
  filesystem:
    write: ["~/.config/gopls"]
# Left out: what a tool keeps for itself and runs without (it stays denied; the
# command goes on):
#   ~/.config/go/telemetry: Go's telemetry counters`
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "# Under this policy it runs in mode standard.") || !strings.Contains(out.String(), "#     ~/.config/go\n") {
		t.Errorf("policy:\n%s\nwant it to hold:\n%s", out.String(), want)
	}
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/h/.config/go/telemetry", 0}, {"/h/.config/go/telemetry/local/x", 0}, {"/h/.config", 0}, {"/h/.config/go", 0},
		{"/h", -1}, {"/h/.config/go/env", -1}, {"/h/.config/gopls", -1}, {"/other/.config/go/telemetry", -1},
	} {
		if got := noiseOf(tc.path, "/h"); got != tc.want {
			t.Errorf("noiseOf(%q) = %d, want %d", tc.path, got, tc.want)
		}
	}
}
