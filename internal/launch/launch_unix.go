//go:build unix

package launch

import (
	"os"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/result"
)

// forwarded are the signals passed on to the command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

func fillExit(res *result.Result, ps *os.ProcessState) {
	if ps == nil {
		res.ExitCode = result.ExitSetup
		return
	}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		res.Signal = int(ws.Signal())
		res.ExitCode = 128 + res.Signal
	default:
		res.ExitCode = ws.ExitStatus()
		if res.ExitCode > 128 && res.ExitCode < 128+65 {
			res.Signal = res.ExitCode - 128
		}
	}
}

func usage(ps *os.ProcessState, wall time.Duration) result.Usage {
	u := result.Usage{Wall: wall}
	if ps == nil {
		return u
	}
	u.User = ps.UserTime()
	u.System = ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		u.MaxRSSKB = ru.Maxrss
	}
	return u
}

// gracePeriod is how long a timed-out command has between SIGTERM and the
// SIGKILL of the whole sandbox.
const gracePeriod = 2 * time.Second
