package launch

import (
	"time"

	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/plan"
)

// keptGroup is the cgroup of a session's last command, kept for the next
// command of the same limits (limits.Group.Reuse) instead of a group made
// and removed for each: on cgroup v1 that is a directory in each of three
// hierarchies, made, written and removed, about a fifth of a command's
// time. base is its usage at the last command's end, which the next
// command's is counted from (limits.Usage.Since).
type keptGroup struct {
	g      *limits.Group
	limits limits.Limits
	base   limits.Usage
}

// lendGroup marks the group of the command about to start as lent: the
// next command's group (groupFor) waits for giveBack, whose channel it
// returns.
func (sb *sessionSandbox) lendGroup() chan struct{} {
	back := make(chan struct{})
	sb.mu.Lock()
	sb.keptBack = back
	sb.mu.Unlock()
	return back
}

// giveBack takes back the group g of a command that ended, with limits l,
// in the background: kept for the next command when the command ended
// with its usage read (used, raw: the group's, not counted from its base)
// and the group is empty and ready again (Reuse); removed otherwise. back
// is lendGroup's channel, closed once decided.
func (sb *sessionSandbox) giveBack(g *limits.Group, l limits.Limits, used *limits.Usage, back chan struct{}) {
	go func() {
		defer close(back)
		if used == nil || !g.Reuse() {
			_ = g.Close()
			return
		}
		sb.mu.Lock()
		old, keep := sb.kept, !sb.closed
		sb.kept = nil
		if keep {
			sb.kept = &keptGroup{g: g, limits: l, base: *used}
		}
		sb.mu.Unlock()
		if old != nil {
			_ = old.g.Close()
		}
		if !keep {
			_ = g.Close()
		}
	}()
}

// groupFor is the cgroup for a command of pl: the one kept from the last
// command when its limits are pl's (waiting, within readyTimeout, for
// that command to give it back), with the usage it is counted from, or a
// new one (newGroup, with its notes; base nil); nil when pl sets no limit
// or none can be made.
func (sb *sessionSandbox) groupFor(pl *plan.Plan) (g *limits.Group, base *limits.Usage, notes []string, err error) {
	if k := sb.takeKept(); k != nil {
		if k.limits == pl.Limits {
			return k.g, &k.base, nil, nil
		}
		go k.g.Close()
	}
	g, notes, err = sb.newGroup(pl)
	return g, nil, notes, err
}

// groupsReused counts the commands of sb that ran in the group of the
// command before.
func (sb *sessionSandbox) groupsReused() int {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.reusedGroups
}

// closeKept removes the group kept for the next command, once the last
// command gave it back (within readyTimeout): the session ends.
func (sb *sessionSandbox) closeKept() {
	if k := sb.takeKept(); k != nil {
		_ = k.g.Close()
	}
}

// takeKept takes the group kept for the next command, once the last
// command gave it back (within readyTimeout); nil if none was kept.
func (sb *sessionSandbox) takeKept() *keptGroup {
	sb.mu.Lock()
	back := sb.keptBack
	sb.mu.Unlock()
	if back != nil {
		select {
		case <-back:
		case <-time.After(readyTimeout):
		}
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	k := sb.kept
	sb.kept = nil
	return k
}
