package result

import "testing"

func TestLimitHitLine(t *testing.T) {
	for _, tc := range []struct {
		h    LimitHit
		want string
	}{
		{LimitHit{Limit: LimitCPU, Value: 1, Killed: true, Certain: true}, "killed: CPU time limit of 1 s reached (--max-cpu)"},
		{LimitHit{Limit: LimitFileSize, Value: 64, Killed: true, Certain: true}, "killed: file size limit of 64 MB reached (--max-file-size)"},
		{LimitHit{Limit: LimitMemory, Value: 512, Killed: true, Certain: true}, "killed: memory limit of 512 MB reached (--max-memory)"},
		{LimitHit{Limit: LimitCPU, Value: 2, Killed: true, Evidence: "E"}, "probably killed: CPU time limit of 2 s reached (--max-cpu): E"},
		{LimitHit{Limit: LimitProcesses, Value: 10, Certain: true, Evidence: "E"}, "process limit of 10 reached (--max-procs): E"},
	} {
		if got := tc.h.Line(); got != tc.want {
			t.Errorf("%+v.Line() = %q, want %q", tc.h, got, tc.want)
		}
	}
}

// TestNetRefusalLine: the end-of-run line of a refusal gives the flag
// that would allow it, else the hint saying why none would; the count of
// refusals not listed has its own line.
func TestNetRefusalLine(t *testing.T) {
	for _, tc := range []struct {
		f    NetRefusal
		want string
	}{
		{NetRefusal{Host: "example.org", Port: 443, Rule: "no allow rule", Allow: "example.org:443"},
			"refused example.org:443 (no allow rule); allow it with --allow-net example.org:443"},
		{NetRefusal{Host: "::1", Port: 80, Rule: "1.2.3.4", Allow: "[::1]:80"},
			"refused [::1]:80 (1.2.3.4); allow it with --allow-net [::1]:80"},
		{NetRefusal{Host: "bad.test", Port: 443, Rule: "*.test", Hint: "a deny entry refuses it"},
			"refused bad.test:443 (*.test); a deny entry refuses it"},
		{NetRefusal{Host: "x.test", Port: 443, Rule: "R"},
			"refused x.test:443 (R); no --allow-net entry would allow it"},
	} {
		if got := tc.f.Line(); got != tc.want {
			t.Errorf("%+v.Line() = %q, want %q", tc.f, got, tc.want)
		}
	}
	if got, want := NetRefusedMoreLine(7), "refused 7 more requests to hosts and ports not listed here (the audit log, when one is kept, has each)"; got != want {
		t.Errorf("NetRefusedMoreLine(7) = %q, want %q", got, want)
	}
}

func TestViolationLine(t *testing.T) {
	const home = "/h"
	for _, tc := range []struct {
		v    Violation
		want string
	}{
		{Violation{Operation: "file-read", Path: "/h/.ssh/id_rsa", Rule: "filesystem.deny: /h/.ssh", Locked: true, Command: "cat", Count: 2},
			"file-read ~/.ssh/id_rsa by cat (2 times): filesystem.deny: ~/.ssh (not to be allowed)"},
		{Violation{Operation: "file-write", Path: "/h/src/o/x", Rule: "filesystem.write: not listed", Allow: "--allow-write /h/src/o", Count: 1},
			"file-write ~/src/o/x: filesystem.write: not listed; to allow it: --allow-write ~/src/o"},
		{Violation{Operation: "file-write", Path: "/w/.git/hooks/pre-commit", Rule: "protected: **/.git/hooks/", Locked: true, Unenforced: "this backend cannot enforce it (see the degraded lines)", Command: "sh", Count: 1},
			"file-write /w/.git/hooks/pre-commit by sh: protected: **/.git/hooks/ denies it, but it happened: this backend cannot enforce it (see the degraded lines)"},
		{Violation{Operation: "network-connect", Address: "192.0.2.1:443", Rule: "network: deny", Count: 1},
			"network-connect 192.0.2.1:443: network: deny"},
		{Violation{Operation: "file-write", Path: "/w/evil\x1b[2J", Rule: "filesystem.write: not listed", Command: "a\nb", Count: 1},
			`file-write "/w/evil\x1b[2J" by "a\nb": filesystem.write: not listed`},
		{Violation{Operation: "file-read", Path: "/h", Rule: "filesystem.read: not listed", Count: 1},
			"file-read ~: filesystem.read: not listed"},
	} {
		if got := tc.v.Line(home); got != tc.want {
			t.Errorf("Line:\n got %q\nwant %q", got, tc.want)
		}
	}
}
