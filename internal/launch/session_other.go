//go:build !linux

package launch

import (
	"context"
	"errors"

	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// sessionSandbox exists only on Linux: elsewhere no plan is sessionable
// (bubblewrap's only).
type sessionSandbox struct{ key string }

var errSessionDied = errors.New("no session's sandbox on this system")

func startSession(*plan.Plan) (*sessionSandbox, error) { return nil, &SetupError{Err: errSessionDied} }

func (*sessionSandbox) close()      {}
func (*sessionSandbox) alive() bool { return false }

func (*sessionSandbox) snapshotsReused() int { return 0 }

func (*sessionSandbox) groupsReused() int { return 0 }

func (*sessionSandbox) run(context.Context, *plan.Plan, Stdio, *globscan.Cache) (*result.Result, error) {
	return nil, &SetupError{Err: errSessionDied}
}
