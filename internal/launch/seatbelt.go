package launch

import (
	"fmt"
	"runtime"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/plan"
)

// errSeatbeltElsewhere is the refusal of a Seatbelt plan off macOS: the
// plan builds anywhere (cordon policy --explain shows it), only macOS can
// run it.
var errSeatbeltElsewhere = fmt.Errorf("--backend seatbelt: the macOS backend runs only on macOS, not on %s; use --backend bwrap or auto", runtime.GOOS)

// refuseUnrunnable refuses, before anything is said or started, a plan
// this host cannot run: a Seatbelt plan (sandbox-exec) anywhere but on
// macOS (see runSeatbelt there).
func refuseUnrunnable(pl *plan.Plan) error {
	if pl.Backend == backend.Seatbelt && runtime.GOOS != "darwin" {
		return &SetupError{Err: errSeatbeltElsewhere}
	}
	return nil
}
