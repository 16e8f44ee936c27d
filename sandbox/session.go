package sandbox

import (
	"context"
	"os/exec"

	"github.com/cordon-sandbox/cordon/internal/launch"
	"github.com/cordon-sandbox/cordon/result"
)

// Session runs many commands under a Sandbox's policy in one sandbox kept
// set up between them, for hosts that run many commands (an agent's
// tool calls): a command then costs about a fork and exec inside, not a
// sandbox of its own. Each command still gets what Run gives it: its own
// process tree, in a session and process group of its own, killed
// entirely (background processes, and those that left its session,
// included) when it ends or times out; its own limits and environment;
// the check for what it planted, before its Result is returned; and the
// same view of the files as a run of its own. Each command's plan is
// built as for Run: when it differs from the sandbox's (a repository
// created in the workspace since, whose protected paths need mounts, or
// a repository's config that changed what is protected), the sandbox is
// replaced before the command runs.
//
// A command runs in a sandbox of its own, as with Run, when the session
// cannot serve it: on the Landlock-only backend and in mode off, with a
// filtered network or forwarded ports, the violation monitor, credentials,
// max_processes or max_memory (a cgroup per command), or while another
// command of the session runs, and a command that names a git command
// that may write a repository's config (git config, git remote add, ...),
// where git writes a private copy as in Run. In the session's sandbox, git
// cannot write a repository's config: the Result's GitConfigRefused says
// so, as for a command of Wrap. See docs/library.md.
//
// A Session is safe for concurrent use. Close it when the host is done.
type Session struct {
	sb *Sandbox
	ls *launch.Session
}

// NewSession starts a session under s's policy. Its sandbox starts with
// its first command.
func (s *Sandbox) NewSession() *Session {
	return &Session{sb: s, ls: launch.NewSession()}
}

// Run runs cmd in the session, as Sandbox.Run does (the same streams,
// environment, errors and Result). If the session's sandbox ended under a
// command (a process inside killed it), Run returns an error and the next
// command starts a new sandbox.
func (ss *Session) Run(ctx context.Context, cmd *exec.Cmd) (*result.Result, error) {
	return ss.sb.run(ctx, cmd, ss.ls)
}

// SessionStats count what a Session did.
type SessionStats struct {
	// Commands ran in the session's sandbox (not in one of their own).
	Commands int
	// Sandboxes were started: the first, and one for each change of the
	// plan (policy, config, repositories) or sandbox that ended.
	Sandboxes int
	// WalksSpared are the walks of the writable trees (a plan's, a
	// check's after a command) that read no directory: the session
	// watches the trees (inotify) and saw nothing change since the same
	// walk before.
	WalksSpared int
	// SnapshotsReused are the commands whose record of what existed
	// before them (for the check of what they planted) was the command
	// before's, its time taken anew: the session watches what it was
	// read from (inotify) and saw nothing change.
	SnapshotsReused int
	// GroupsReused are the commands that ran in the cgroup (resource
	// limits) of the command before, their usage counted from its end,
	// instead of a cgroup made and removed for each.
	GroupsReused int
}

// Stats says what the session did so far.
func (ss *Session) Stats() SessionStats {
	st := ss.ls.Stats()
	return SessionStats{Commands: st.Commands, Sandboxes: st.Sandboxes, WalksSpared: st.WalksSpared, SnapshotsReused: st.SnapshotsReused, GroupsReused: st.GroupsReused}
}

// Close ends the session's sandbox, once the command running in it ended.
// Later commands of the session run in sandboxes of their own.
func (ss *Session) Close() error { return ss.ls.Close() }
