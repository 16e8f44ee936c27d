package probe

import (
	"fmt"

	"github.com/cordon-sandbox/cordon/backend"
)

// Auto picks the backend --backend auto runs on: bwrap when a user
// namespace can really be created (a cheap look at the knobs first, the
// full Detect when they say no), else landlock; on macOS seatbelt, on
// Windows job (see backend.Choose); an error says why none works. bwrapPath is sandbox.bwrap_path ("" searches the standard
// places). It is the one place a run's backend is chosen; Detect's
// AutoBackend applies the same rule (backend.Choose) to its report.
func Auto(bwrapPath string) (backend.Name, error) {
	if _, err := FindBwrap(bwrapPath); err == nil && userNSLikely() {
		return backend.Bwrap, nil
	}
	r := Detect(Options{BwrapPath: bwrapPath})
	switch r.AutoBackend {
	case backend.Bwrap, backend.Landlock, backend.Seatbelt, backend.Job:
		return r.AutoBackend, nil
	}
	reason := r.UserNS.Reason
	if !r.Bwrap.Found {
		reason = r.Bwrap.Reason
	}
	return backend.None, fmt.Errorf("no sandbox backend works here (%s; and Landlock is unavailable: %s); see cordon status, or run unconfined with --mode off", reason, r.Landlock.Reason)
}
