package plan

import (
	"github.com/cordon-sandbox/cordon/backend"
	"testing"
)

// TestRefuseDegraded: strict mode is decided when the plan is built, for
// every backend: a strict plan with anything degraded is refused, with the
// first degraded rule; a standard one runs degraded.
func TestRefuseDegraded(t *testing.T) {
	for _, tc := range []struct {
		name string
		pl   Plan
		want string // "" runs
	}{
		{"bwrap strict degraded", Plan{Backend: backend.Bwrap, Strict: true, Degraded: []string{"gap one", "gap two"}}, "strict mode refuses to run degraded: gap one"},
		{"bwrap strict whole", Plan{Backend: backend.Bwrap, Strict: true}, ""},
		{"bwrap standard degraded", Plan{Backend: backend.Bwrap, Degraded: []string{"gap one"}}, ""},
		{"landlock strict degraded", Plan{Backend: backend.Landlock, Strict: true, Degraded: []string{"no pid namespace"}}, "strict mode refuses to run degraded on the Landlock-only backend: no pid namespace"},
		{"landlock standard degraded", Plan{Backend: backend.Landlock, Degraded: []string{"no pid namespace"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refuseDegraded(&tc.pl)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
