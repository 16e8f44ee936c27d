//go:build !linux

package launch

import "github.com/cordon-sandbox/cordon/result"

// unkeptSnapshot: only the Landlock-only backend, on Linux, leaves paths
// unkept (plan.Plan.Unkept).
type unkeptSnapshot struct{}

func snapshotUnkept([]string) *unkeptSnapshot { return nil }

func (*unkeptSnapshot) check(bool) []result.Planted { return nil }
