package plan

import (
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
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
		{"standard", policy.ModeStandard, policy.Resources{}, "", limits.Limits{}, 1},
		{"limits", policy.ModeStandard, policy.Resources{MaxProcesses: 8, MaxMemoryMB: 512, MaxCPUSeconds: 5}, "", limits.Limits{MaxProcesses: 8, MaxMemoryMB: 512, MaxCPUSeconds: 5}, 1},
		{"file size", policy.ModeStandard, policy.Resources{MaxFileSizeMB: 10}, "", limits.Limits{}, 2},
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
			if pl.Backend != backend.Job || pl.Limits != tc.wantLimits || len(pl.Degraded) != tc.degraded || pl.Degraded[0] != JobWarning {
				t.Errorf("plan: backend %s, limits %+v, degraded %q", pl.Backend, pl.Limits, pl.Degraded)
			}
			if pl.Argv[len(pl.Argv)-1] != "version" || pl.Dir != p.Workspace {
				t.Errorf("argv %q, dir %q", pl.Argv, pl.Dir)
			}
		})
	}
}

// TestJobEnv checks the environment of a Job run: Windows' own variables
// and the policy's allowlist pass, compared without case as Windows does;
// a credential the allowlist does not name stays out.
func TestJobEnv(t *testing.T) {
	host := map[string]string{
		"SYSTEMROOT": "SystemRoot=C:\\Windows", "PATH": "Path=C:\\Windows\\System32", "TEMP": "TEMP=C:\\t",
		"LC_ALL": "LC_ALL=C", "GITHUB_TOKEN": "GITHUB_TOKEN=ghp_secret", "AWS_SECRET_ACCESS_KEY": "AWS_SECRET_ACCESS_KEY=s",
		"GOFLAGS": "GOFLAGS=-mod=mod",
	}
	getenv := func(k string) (string, bool) { // case-blind, as on Windows
		kv, ok := host[strings.ToUpper(k)]
		_, v, _ := strings.Cut(kv, "=")
		return v, ok
	}
	p := &policy.Policy{Mode: policy.ModeStandard, Workspace: t.TempDir(),
		Env: policy.Env{Pass: []string{"PATH", "GOFLAGS"}, Set: map[string]string{"CI": "1"}}}
	pl, err := buildJob(p, []string{"go", "version"}, Options{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(pl.Env, "\n")
	for _, want := range []string{"SystemRoot=C:\\Windows", "PATH=C:\\Windows\\System32", "TEMP=C:\\t", "GOFLAGS=-mod=mod", "CI=1"} {
		if !strings.Contains(got, want) {
			t.Errorf("env lacks %q:\n%s", want, got)
		}
	}
	for _, secret := range []string{"ghp_secret", "AWS_SECRET_ACCESS_KEY", "LC_ALL"} {
		if strings.Contains(got, secret) {
			t.Errorf("env carries %q:\n%s", secret, got)
		}
	}
}
