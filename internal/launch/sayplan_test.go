package launch

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/plan"
)

// TestSayPlanJobWarning checks that a Job plan's first degraded rule is
// said as a warning, and the others as degraded rules.
func TestSayPlanJobWarning(t *testing.T) {
	pl := &plan.Plan{Backend: backend.Job, Degraded: []string{plan.JobWarning, "max file size (1 MiB): not enforced"}}
	var got []Line
	sayPlan(func(l Line) { got = append(got, l) }, pl, nil)
	if len(got) != 2 || got[0].Kind != Warning || got[0].Text != backend.JobWarning || got[1].Kind != Degraded {
		t.Errorf("sayPlan said %+v", got)
	}
}

// TestSayPlanDegradedSummary: one degraded rule is said whole; several are
// one line of their heads, each rule whole in Details.
func TestSayPlanDegradedSummary(t *testing.T) {
	for _, tc := range []struct {
		rules []string
		want  string
	}{
		{[]string{"no pid namespace: the command can see host processes"}, "no pid namespace: the command can see host processes"},
		{[]string{"no pid namespace: the command can see host processes", "no mount namespace: the host's /tmp is hidden", "max_processes 64 is not enforced: no cgroup"},
			"no pid namespace; no mount namespace; max_processes 64 is not enforced (cordon policy --explain says what each leaves open, cordon status how to enforce it)"},
	} {
		var got []Line
		sayPlan(func(l Line) { got = append(got, l) }, &plan.Plan{Backend: backend.Landlock, Degraded: tc.rules}, nil)
		if len(got) != 1 || got[0].Kind != Degraded || got[0].Text != tc.want || strings.Join(got[0].Details, "|") != strings.Join(tc.rules, "|") {
			t.Errorf("sayPlan(%q) said %+v, want %q", tc.rules, got, tc.want)
		}
	}
}

// TestRunOtherPlatform checks that a backend not built for this system
// refuses with a *SetupError (exit 125) naming the system.
func TestRunOtherPlatform(t *testing.T) {
	var b []backend.Name
	switch runtime.GOOS {
	case "linux":
		b = []backend.Name{backend.Seatbelt, backend.Job}
	case "darwin":
		b = []backend.Name{backend.Bwrap, backend.Landlock, backend.Job}
	case "windows":
		b = []backend.Name{backend.Bwrap, backend.Landlock, backend.Seatbelt}
	}
	for _, n := range b {
		pl := &plan.Plan{Backend: n, Argv: []string{"true"}, Command: []string{"true"}}
		_, err := Run(context.Background(), pl, Stdio{})
		var se *SetupError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "only") || !strings.Contains(err.Error(), runtime.GOOS) {
			t.Errorf("Run(%s) = %v, want a *SetupError saying it is built only elsewhere, naming %s", n, err, runtime.GOOS)
		}
	}
}
