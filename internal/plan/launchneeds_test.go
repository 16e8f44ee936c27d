package plan

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"

	"github.com/cordon-sandbox/cordon/policy"
)

// TestLaunchNeeds: each builder says what its plan needs from the
// launcher (the workspace lock, a pid namespace, the helper as cordon's
// own child, a guard that trusts what existed), since the launcher never
// asks which backend it runs.
func TestLaunchNeeds(t *testing.T) {
	for _, tc := range []struct {
		backend                     backend.Name
		mode                        policy.Mode
		lock, pidNS, child, knownRO bool
	}{
		{backend.Bwrap, policy.ModeStandard, true, true, false, true},
		{backend.Bwrap, policy.ModePermissive, true, true, false, true},
		{backend.Landlock, policy.ModePermissive, false, false, true, false},
		{backend.Landlock, policy.ModeStandard, false, false, true, false},
		{backend.None, policy.ModeOff, false, false, false, false},
	} {
		t.Run(string(tc.backend)+"-"+string(tc.mode), func(t *testing.T) {
			p, opts := testPolicy(t)
			p.Backend = tc.backend
			p.Mode = tc.mode
			if tc.backend == backend.None {
				p.Backend = ""
			}
			pl, err := Build(p, []string{"true"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if pl.Backend != tc.backend {
				t.Fatalf("backend %s, want %s", pl.Backend, tc.backend)
			}
			got := [4]bool{pl.LockWorkspace, pl.PidNamespace, pl.HelperIsChild, slices.Contains(pl.Guard.KeptReadOnly, filepath.Join(p.Workspace, ".git"))}
			if want := [4]bool{tc.lock, tc.pidNS, tc.child, tc.knownRO}; got != want {
				t.Errorf("lock, pid namespace, helper is child, known read-only = %v, want %v", got, want)
			}
		})
	}
}
