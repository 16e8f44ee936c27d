package launch

import (
	"slices"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/plan"
)

// TestDropLookup: a command run with an environment whose PATH is not the
// one the plan looked its program up in says neither the plan's note nor
// its not-found line; the same PATH, or no environment, keeps both.
func TestDropLookup(t *testing.T) {
	mk := func() *plan.Plan {
		return &plan.Plan{RunNotes: []string{"other", "python3 is X outside"},
			Lookup: plan.Lookup{PATH: "/a:/usr/bin", Note: "python3 is X outside", Code: 127, NotFound: "stringer was not found inside"}}
	}
	for _, tc := range []struct {
		name string
		env  []string
		keep bool
	}{
		{"no environment", nil, true},
		{"the same PATH", []string{"HOME=/h", "PATH=/a:/usr/bin"}, true},
		{"another PATH", []string{"PATH=/usr/bin"}, false},
		{"no PATH", []string{"HOME=/h"}, false},
	} {
		pl := mk()
		dropLookup(pl, tc.env)
		kept := pl.Lookup.NotFound != "" && slices.Contains(pl.RunNotes, "python3 is X outside")
		if kept != tc.keep || !slices.Contains(pl.RunNotes, "other") {
			t.Errorf("%s: lookup %+v, notes %q; want kept %v", tc.name, pl.Lookup, pl.RunNotes, tc.keep)
		}
	}
}
