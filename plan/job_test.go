package plan

import (
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/limits"
	"github.com/cordon-sandbox/cordon/policy"
)

// TestBuildJob checks the Windows Job plan: the limits it carries, what it
// says is not confined, and strict mode's refusal.
func TestBuildJob(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mode       policy.Mode
		res        policy.Resources
		wantErr    string
		wantLimits limits.Limits
		degraded   int
	}{
		{"standard", policy.ModeStandard, policy.Resources{}, "", limits.Limits{}, 2},
		{"limits", policy.ModeStandard, policy.Resources{MaxProcesses: 8, MaxMemoryMB: 512, MaxCPUSeconds: 5}, "", limits.Limits{MaxProcesses: 8, MaxMemoryMB: 512, MaxCPUSeconds: 5}, 2},
		{"file size", policy.ModeStandard, policy.Resources{MaxFileSizeMB: 10}, "", limits.Limits{}, 3},
		{"strict", policy.ModeStrict, policy.Resources{}, "strict mode refuses the Windows Job Object backend: files and network are not confined on Windows; use --mode standard", limits.Limits{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &policy.Policy{Mode: tc.mode, Workspace: t.TempDir(), Resources: tc.res}
			pl, err := buildJob(p, []string{"go", "version"}, Options{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("buildJob = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pl.Backend != backend.Job || pl.Limits != tc.wantLimits || len(pl.Degraded) != tc.degraded || pl.Degraded[0] != JobWarning ||
				!strings.Contains(pl.Degraded[1], "the policy's allowlist (sandbox.env, --env) is not applied") {
				t.Errorf("plan: backend %s, limits %+v, degraded %q", pl.Backend, pl.Limits, pl.Degraded)
			}
			if pl.Argv[len(pl.Argv)-1] != "version" || pl.Dir != p.Workspace {
				t.Errorf("argv %q, dir %q", pl.Argv, pl.Dir)
			}
		})
	}
}
