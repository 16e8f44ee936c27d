//go:build !windows

package launch

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/monitor"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
)

// records keeps the audit records of a run.
type records []audit.Record

func (r *records) Record(rec audit.Record) error { *r = append(*r, rec); return nil }

// TestViolationsSeatbelt: the denials macOS logged of a Seatbelt run
// (package seatbeltlog's events) are classified as the Linux monitor's
// are, every one enforced (action denied); one the policy allows is the
// profile's; other operations are counted, not recorded.
func TestViolationsSeatbelt(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	ws := filepath.Join(home, "proj")
	key := filepath.Join(home, ".ssh", "id_rsa")
	if err := os.MkdirAll(filepath.Dir(key), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &policy.Policy{Mode: policy.ModeStandard, Workspace: ws, Read: []string{"/usr", ws}, Write: []string{ws},
		Deny: []string{filepath.Join(home, ".ssh")}, Network: policy.Network{Mode: policy.NetDeny}, OnViolation: policy.OnViolationWarn}
	var recs records
	req := Request{Policy: p, Options: plan.Options{Home: home}, Audit: &recs, SessionID: "s", AuditCommand: "cmd"}
	v := newViolations(req, &plan.Plan{Backend: backend.Seatbelt, Writable: []string{ws}}, func(Line) {})

	v.observe(monitor.Event{Pid: 1, Call: "file-read-data", Op: monitor.OpRead, Path: key, Comm: "cat"})
	v.observe(monitor.Event{Pid: 2, Call: "file-read-data", Op: monitor.OpRead, Path: key, Comm: "cat"})
	v.observe(monitor.Event{Pid: 3, Call: "file-read-data", Op: monitor.OpRead, Path: "/usr", Comm: "ls"})
	v.observe(monitor.Event{Pid: 4, Call: "network-outbound", Op: monitor.OpConnect, Addr: netip.MustParseAddrPort("93.184.215.14:443"), Comm: "curl"})
	v.observe(monitor.Event{Pid: 4, Call: "network-outbound", Op: monitor.OpConnect, Name: "remote:*:443", Comm: "curl"})
	v.observe(monitor.Event{Pid: 5, Call: "file-read-data", Op: monitor.OpRead, Path: filepath.Join(dir, "nonexistent"), Comm: "sh"})
	for _, c := range []string{"com.apple.FontServer", "com.apple.FontServer", "kern.bootargs"} {
		v.observe(monitor.Event{Pid: 6, Call: "mach-lookup", Op: monitor.OpOther, Name: c, Comm: "java"})
	}

	got, more := v.result()
	if more != 0 || len(got) != 4 {
		t.Fatalf("%d violations (%d more), want 4: %+v", len(got), more, got)
	}
	for _, vi := range got {
		if vi.Unenforced != "" {
			t.Errorf("%+v: a denial macOS logged was enforced", vi)
		}
	}
	if g := got[0]; g.Path != key || g.Count != 2 || !strings.HasPrefix(g.Rule, "filesystem.deny:") || !g.Locked {
		t.Errorf("the secret: %+v", g)
	}
	if g := got[1]; g.Path != "/usr" || !strings.Contains(g.Rule, "Seatbelt profile (file-read-data)") || g.Allow != "" {
		t.Errorf("what the policy allows: %+v", g)
	}
	if g := got[2]; g.Address != "93.184.215.14:443" || g.Operation != string(monitor.OpConnect) || !strings.HasPrefix(g.Rule, "network") {
		t.Errorf("the connect: %+v", g)
	}
	if g := got[3]; g.Address != "remote:*:443" || !strings.Contains(g.Rule, "Seatbelt profile (network-outbound)") {
		t.Errorf("the connect without a host: %+v", g)
	}
	if n, seen := v.others(); n != 3 || len(seen) != 2 || seen[0] != "mach-lookup com.apple.FontServer" {
		t.Errorf("others() = %d, %q", n, seen)
	}
	if len(recs) != 4 {
		t.Fatalf("%d audit records, want 4: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if r.Action != audit.ActionDenied || r.SessionID != "s" || r.Mode != "standard" {
			t.Errorf("record %+v", r)
		}
	}
}
