//go:build linux

package launch

import (
	"time"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/monitor"
	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
)

// watchLinger bounds the wait, once the sandbox has ended, for the last
// process of the watch filter to go: a process that outlived the sandbox
// (without a pid namespace, one that left its process group) then has its
// watched calls fail with ENOSYS once the monitor stops.
const watchLinger = 500 * time.Millisecond

// handWatch starts the violation monitor on the listener the helper handed
// over (helperspec.MsgWatch), calling Stdio.Watch for each event; on the
// Landlock-only backend it is also the supervisor (plan.Supervision, with
// the command's terminals). It runs on readStatus's goroutine, before the
// ready status is sent on statusCh.
func (r *sandboxRun) handWatch(fd int, terminals []string) {
	if r.stdio.Watch == nil && r.stdio.WatchOptions.Ask == nil && r.pl.Supervise == nil && len(r.pl.GitConfigs) == 0 && !r.spec.TreeChanges || r.watch != nil {
		unix.Close(fd) // not asked for: the watched calls fail (ENOSYS)
		return
	}
	opts := r.stdio.WatchOptions
	if r.pl.Supervise != nil {
		opts.Supervise = r.pl.Supervise.ForRun(terminals)
	}
	m, err := monitor.Start(fd, r.stdio.Watch, opts)
	if err != nil {
		r.watchErr = err
		return
	}
	r.watch = m
}

// stopWatch waits (briefly) for the monitor to see the end of the
// sandbox's processes and stops it: every event has been passed on when
// it returns. It runs after statusCh is drained. It returns the
// monitor's Stats, and whether its listener was sent every call that
// can create a directory entry (the watch's, the supervisor's or the
// count's filter, alone or in --ask's: seccomp.Creating), installed
// before the command started. --ask's filter without the count sends
// only the opens: that run is walked.
func (r *sandboxRun) stopWatch() (monitor.Stats, bool) {
	if r.watchErr != nil && r.pl.Supervise != nil {
		r.passDegraded([]string{"the Landlock-only backend's supervisor could not start: " + r.watchErr.Error() + "; every call it supervises (open, create, remove, rename, link, metadata) failed (ENOSYS)"})
	} else if r.watchErr != nil {
		r.passDegraded([]string{helperspec.WatchUnavailable + ": " + r.watchErr.Error() + "; what the command is denied is not reported"})
	}
	if r.watch == nil {
		return monitor.Stats{}, false
	}
	select {
	case <-r.watch.Done():
	case <-time.After(watchLinger):
	}
	st := r.watch.Stop()
	all := r.spec.Watch || r.spec.Supervise || r.spec.TreeChanges
	if r.stdio.Watch == nil {
		return st, all // the supervisor or the count alone: nothing was asked to be seen
	}
	r.res.Monitor = &result.Monitor{Calls: st.Calls, Unresolved: st.Unresolved}
	return st, all
}
