package launch

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/net/netproxy"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
)

// sessionSandbox is a session's sandbox: bwrap with the helper as the
// session's server (helperspec.SessionCommand), started like a run's
// (sandboxRun.start: the workspace lock and placeholders, held until it
// ends), and the messages the server sends on its socket.
type sessionSandbox struct {
	r     *sandboxRun
	key   string
	ctrl  int                 // the host's end of the server's socket
	msgs  chan sessionMessage // the server's messages; closed when the socket closes
	notes []string            // what the server could not enforce (Landlock)
	ended chan struct{}       // closed once bwrap exited
	// cur is the Stdio of the command running, whose NetEvents receive
	// the denied network's lookups (the name server is the sandbox's).
	cur atomic.Pointer[Stdio]
	// mu guards what follows, shared with prepareAhead.
	mu        sync.Mutex
	serverPid int        // the server's pid on the host (read's, from its MsgReady)
	lastPlan  *plan.Plan // the last command's plan, for the next one's cgroup
	claimed   int        // commands taken (takeAhead), each before it is handed over
	closed    bool
	ahead     *aheadGroup   // the next command's cgroup, its helper in it
	aheadDone chan struct{} // closed once a preparation under way ended
	// kept is the last command's cgroup, kept for the next (keptGroup);
	// keptBack is closed once the command that has it gave it back.
	kept         *keptGroup
	keptBack     chan struct{}
	reusedGroups int // commands that ran in the group of the one before
	// noGroup remembers, for the limits it was asked for, that newGroup
	// made no cgroup here (none usable, its notes said again to every
	// command), so that later commands do not try again.
	noGroup *noGroup
	// journal is the commands' journal (commands run one at a time).
	journal sessionJournal
	// snap is the snapshot for the planted-files check kept between the
	// commands (commands run one at a time).
	snap snapshotReuse
}

// aheadGroup is a cgroup made for the next command, with the helper the
// server started ahead already moved into it: on cgroup v1 a move waits for
// an RCU grace period (about 10 ms), which then costs no command.
type aheadGroup struct {
	g      *limits.Group
	base   *limits.Usage // its usage so far, when it was kept (groupFor)
	pid    int
	limits limits.Limits
	notes  []string
}

// aheadFor starts, for the MsgPrestarted that said the server answered
// served commands, the preparation of the next command's cgroup
// (prepareAhead), unless a command was taken since (its helper is that
// one: it must not be moved) or the last plan needs no cgroup. Called by
// the reader of the server's messages, before it passes on the answer
// that follows, so that the next command's takeAhead waits for it.
func (sb *sessionSandbox) aheadFor(served int) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	pl := sb.lastPlan
	if pl == nil || served != sb.claimed || sb.closed || sb.ahead != nil || sb.aheadDone != nil || pl.Limits.MaxProcesses == 0 && pl.Limits.MaxMemoryMB == 0 {
		return
	}
	if ng := sb.noGroup; ng != nil && ng.limits == pl.Limits {
		return // no cgroup here
	}
	done := make(chan struct{})
	sb.aheadDone = done
	go sb.prepareAhead(pl, sb.serverPid, done)
}

// prepareAhead makes the next command's cgroup, with the limits of the
// last command, and moves into it the helper the server started ahead
// (the server's only child); takeAhead waits for done.
func (sb *sessionSandbox) prepareAhead(pl *plan.Plan, server int, done chan struct{}) {
	defer close(done)
	pid := onlyChild(server)
	if pid <= 0 {
		return
	}
	g, base, notes, err := sb.groupFor(pl)
	if g == nil || err != nil {
		return
	}
	if err := g.Add(pid); err != nil {
		_ = g.Close()
		return
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.closed {
		_ = g.Close()
		return
	}
	sb.ahead = &aheadGroup{g: g, base: base, pid: pid, limits: pl.Limits, notes: notes}
}

// takeAhead marks a command of pl running and returns the cgroup
// prepared ahead for it, if one was for its limits (waiting for a
// preparation under way); nil otherwise.
func (sb *sessionSandbox) takeAhead(pl *plan.Plan) *aheadGroup {
	sb.mu.Lock()
	sb.claimed++
	sb.lastPlan = pl
	done := sb.aheadDone
	sb.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-time.After(readyTimeout):
		}
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	a := sb.ahead
	sb.ahead, sb.aheadDone = nil, nil
	if a != nil && a.limits != pl.Limits {
		go a.g.Close()
		return nil
	}
	return a
}

// onlyChild is the one child of the process pid (its threads' children
// together), or 0 when it has none or several.
func onlyChild(pid int) int {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var kids []string
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			return 0
		}
		kids = append(kids, strings.Fields(string(b))...)
	}
	if len(kids) != 1 {
		return 0
	}
	n, err := strconv.Atoi(kids[0])
	if err != nil {
		return 0
	}
	return n
}

// noGroup is newGroup's answer when it made no cgroup.
type noGroup struct {
	limits limits.Limits
	notes  []string
}

// newGroup is newGroup(pl), asked once while it makes none.
func (sb *sessionSandbox) newGroup(pl *plan.Plan) (*limits.Group, []string, error) {
	sb.mu.Lock()
	ng := sb.noGroup
	sb.mu.Unlock()
	if ng != nil && ng.limits == pl.Limits {
		return nil, ng.notes, nil
	}
	g, notes, err := newGroup(pl)
	if g == nil && err == nil {
		sb.mu.Lock()
		sb.noGroup = &noGroup{pl.Limits, notes}
		sb.mu.Unlock()
	}
	return g, notes, err
}

// sessionMessage is one datagram of the server, with its descriptors.
type sessionMessage struct {
	data []byte
	fds  []int
}

// startSession starts the sandbox of a session for pl's key and waits for
// its server's readiness. Its error is a *SetupError, UserNS set when
// bwrap could not make its namespaces.
func startSession(pl *plan.Plan) (*sessionSandbox, error) {
	sb := &sessionSandbox{key: sessionKey(pl), msgs: make(chan sessionMessage, 1), ended: make(chan struct{})}
	events := func(ev netproxy.Event) {
		if c := sb.cur.Load(); c != nil && c.NetEvents != nil {
			c.NetEvents(ev)
		}
	}
	r := &sandboxRun{pl: serverPlan(pl), pidfd: -1, session: true, res: &result.Result{Backend: pl.Backend}, stdio: Stdio{NetEvents: events}}
	if err := r.start(); err != nil {
		r.closeAfterWait()
		return nil, err
	}
	sb.r, sb.ctrl = r, int(r.statusHost.Fd())
	go sb.read()
	var waitErr error
	go func() {
		waitErr = <-r.waitc
		close(sb.ended)
	}()
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
wait:
	for {
		select {
		case m, ok := <-sb.msgs:
			msg := m.data
			switch {
			case !ok:
				break wait
			case msg[0] == helperspec.MsgListener:
				// The denied network's name server (see readStatus).
				l, families, err := helperspec.ParseListener(msg)
				if err != nil || len(m.fds) != len(families) {
					closeFds(m.fds)
					continue
				}
				r.net.handOver(l, m.fds)
				if l.Kind == helperspec.ListenDNS {
					_, _ = r.statusHost.Write([]byte{helperspec.MsgGo})
				}
			case msg[0] == helperspec.MsgReady:
				sb.notes, _ = helperspec.ParseReady(msg)
				return sb, nil
			case msg[0] == helperspec.MsgExecFailed:
				_, text, _ := helperspec.ParseExecFailed(msg)
				sb.close()
				return nil, &SetupError{Err: fmt.Errorf("the session's sandbox could not start: %s", text)}
			default:
				closeFds(m.fds)
			}
		case <-timer.C:
			break wait
		}
	}
	sb.close()
	msg := r.bwErr.String()
	return nil, &SetupError{Err: setupFailure(msg, waitErr), UserNS: userNSFailure(msg)}
}

// read passes the server's messages on, until its socket closes.
func (sb *sessionSandbox) read() {
	defer close(sb.msgs)
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred)+unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(sb.ctrl, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		switch buf[0] {
		case helperspec.MsgReady:
			if pid := credPid(oob[:oobn]); pid > 0 {
				sb.mu.Lock()
				sb.serverPid = pid
				sb.mu.Unlock()
			}
		case helperspec.MsgPrestarted:
			closeFds(helperspec.Rights(oob[:oobn]))
			if served, err := strconv.Atoi(string(buf[1:n])); err == nil {
				sb.aheadFor(served)
			}
			continue
		}
		sb.msgs <- sessionMessage{append([]byte(nil), buf[:n]...), helperspec.Rights(oob[:oobn])}
	}
}

// credPid is the pid of the credentials a control message carries, or 0.
func credPid(oob []byte) int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if c, err := unix.ParseUnixCredentials(&m); err == nil {
			return int(c.Pid)
		}
	}
	return 0
}

// close kills the sandbox (bwrap's init dies with it, and the pid
// namespace with everything in it) and releases what its run held: the
// workspace lock, the placeholders.
func (sb *sessionSandbox) close() {
	sb.mu.Lock()
	sb.closed = true
	a, done := sb.ahead, sb.aheadDone
	sb.ahead = nil
	sb.mu.Unlock()
	if done != nil {
		<-done
	}
	if a != nil {
		_ = a.g.Close()
	}
	sb.closeKept()
	sb.r.killAll()
	<-sb.ended
	<-sb.r.bwErrDone
	sb.r.closeAfterWait()
	for m := range sb.msgs {
		closeFds(m.fds)
	}
	sb.journal.close()
}

// alive reports whether the sandbox still runs.
func (sb *sessionSandbox) alive() bool {
	select {
	case <-sb.ended:
		return false
	default:
		return true
	}
}
