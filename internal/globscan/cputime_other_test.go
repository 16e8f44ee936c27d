//go:build !unix

package globscan

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }
