package launch

import (
	"fmt"
	"os"

	"github.com/cordon-sandbox/cordon/internal/host/sibling"
)

// helperExe opens the helper's binary for helperspec.FdHelperExe: the
// sibling the plan names (plan.Plan.Helper), checked by descriptor and
// kept open by package sibling for the life of the process, or else the
// running program's own binary, held until the run is over.
func (r *sandboxRun) helperExe() (*os.File, error) {
	if r.pl.Helper != "" {
		b, err := sibling.Open(r.pl.Helper)
		if err != nil {
			return nil, helperError(err)
		}
		return b.File, nil
	}
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("opening the running program's own binary as the helper: %w", err)
	}
	r.afterWait(func() { exe.Close() })
	return exe, nil
}
