//go:build !linux

package plan

import "time"

// birthTime: only the Landlock-only backend, on Linux, asks.
func birthTime(string) (time.Time, bool) { return time.Time{}, false }

// fileClockNow is time.Now where no file clock is asked for.
func fileClockNow() time.Time { return time.Now() }
