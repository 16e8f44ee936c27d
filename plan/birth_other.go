//go:build !linux

package plan

import "time"

// birthTime: only the Landlock-only backend, on Linux, asks.
func birthTime(string) (time.Time, bool) { return time.Time{}, false }

func fileClockNow() time.Time { return time.Now() }
