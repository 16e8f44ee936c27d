package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/host/probe"
)

// TestEnforcedElsewhere checks what cordon status says it enforces on
// macOS and Windows: the rows of their own backends, never the Linux
// layers' (bubblewrap mounts, pid namespaces), and each gap said.
func TestEnforcedElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      probe.Report
		want   map[string]string // area -> status
		says   []string          // in the text
		absent []string          // not in the text
	}{
		{"macOS", probe.Report{OS: "darwin", AutoBackend: backend.Seatbelt, Seatbelt: &probe.SeatbeltInfo{Available: true}},
			map[string]string{"files": "enforced", "resource limits": "not enforced", "network": "partial", "violation monitor": "available", "seccomp, landlock, namespaces": "unavailable"},
			[]string{"Seatbelt profile", "cordon's HTTP and SOCKS5 proxy", "no other address or port", "degraded", "--max-procs, --max-memory and --max-cpu are not enforced"},
			[]string{"bubblewrap", "pid namespace: host", "seccomp user-notification"}},
		{"macOS without sandbox-exec", probe.Report{OS: "darwin", AutoBackend: backend.None, Seatbelt: &probe.SeatbeltInfo{}},
			map[string]string{"sandbox": "unavailable"}, []string{"no OS sandbox on darwin"}, []string{"bubblewrap"}},
		{"Windows", probe.Report{OS: "windows", AutoBackend: backend.Job},
			map[string]string{"files": "not enforced", "network": "not enforced", "processes": "enforced", "resource limits": "enforced", "environment": "enforced", "MCP file tools": "enforced", "violation monitor": "not built"},
			[]string{backend.JobWarning, "JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE", "no file size limit on Windows"},
			[]string{"bubblewrap", "Landlock"}},
		{"Linux", probe.Report{OS: "linux", AutoBackend: backend.Bwrap},
			map[string]string{"files": "enforced", "seccomp": "enforced"}, []string{"bubblewrap mounts"}, []string{"Seatbelt profile", "Job Object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, e := range enforced(&tc.r) {
				got[e.Area] = e.Status
			}
			for area, st := range tc.want {
				if got[area] != st {
					t.Errorf("%s: %q, want %q (rows %v)", area, got[area], st, got)
				}
			}
			var b bytes.Buffer
			if err := writeEnforced(&b, &tc.r); err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.says {
				if !strings.Contains(b.String(), s) {
					t.Errorf("status does not say %q:\n%s", s, b.String())
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(b.String(), s) {
					t.Errorf("status says %q:\n%s", s, b.String())
				}
			}
		})
	}
}
