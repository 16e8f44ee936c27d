package cli

import (
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/host/probe"
)

// TestNetworkStatusRows: cordon status says, per Landlock ABI, what the
// Landlock-only backend does with the network, and what it cannot stop.
func TestNetworkStatusRows(t *testing.T) {
	for _, tc := range []struct {
		abi      int
		status   string
		detail   []string
		degraded bool
	}{
		{0, "unavailable", []string{"no Landlock"}, false},
		{3, "partial", []string{"filtered and loopback networks are refused (exit 125): Landlock ABI 3 cannot limit TCP ports (needs ABI 4)"}, false},
		{4, "partial", []string{"Landlock (ABI 4) lets TCP connect only to its two ports and the forwarded ports", "seccomp refuses every socket but TCP", "loopback is refused"}, true},
		{7, "partial", []string{"Landlock (ABI 7)"}, true},
	} {
		r := &probe.Report{OS: "linux", AutoBackend: backend.Bwrap}
		r.Landlock.ABI = tc.abi
		rows := enforced(r)
		var row *enforcement
		for i := range rows {
			if rows[i].Area == "landlock-only network" {
				row = &rows[i]
			}
			if rows[i].Area == "network allowlists" || strings.Contains(rows[i].Area, "network") && rows[i].Status == "not built yet" {
				t.Errorf("ABI %d: a network row still says not built: %+v", tc.abi, rows[i])
			}
		}
		if row == nil {
			t.Fatalf("ABI %d: no landlock-only network row in %+v", tc.abi, rows)
		}
		if row.Status != tc.status {
			t.Errorf("ABI %d: status %q, want %q", tc.abi, row.Status, tc.status)
		}
		for _, d := range tc.detail {
			if !strings.Contains(row.Detail, d) {
				t.Errorf("ABI %d: detail lacks %q: %s", tc.abi, d, row.Detail)
			}
		}
		if got := len(row.Degraded) > 0 && strings.Contains(row.Degraded[0], "a TCP connection to any address on the proxy's port numbers is not stopped"); got != tc.degraded {
			t.Errorf("ABI %d: degraded %q", tc.abi, row.Degraded)
		}
	}
}
