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
