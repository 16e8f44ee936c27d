package helperspec

import (
	"encoding/json"
	"errors"
	"fmt"
)

// SessionCommand is the hidden subcommand of a session's server (the
// library's Session, the MCP server's run_command): bwrap starts the helper
// with it instead of HelperCommand. The server reads its Spec as the helper
// does, applies it to itself (capabilities, Landlock, seccomp: every
// process it starts inherits them), reports MsgReady on FdStatus and then
// serves MsgCommand requests on that socket, one at a time, until it
// closes.
const SessionCommand = "__session"

// SessionExecCommand is the hidden subcommand of the helper a session's
// server starts ahead of the next command (the helper's own start, its Go
// runtime's, then costs that command nothing): it waits on descriptor
// FdHelperExe, a socket, for the server's MsgCommand and its CommandFds
// descriptors, puts them at 0, 1, 2, FdStatus and FdSpec, changes to the
// command's directory, starts a session of its own, and goes on as the
// helper (HelperCommand) with the command.
const SessionExecCommand = "__session-exec"

// Messages of a session's server on FdStatus, after its MsgReady.
const (
	// MsgCommand asks the server to start one command: a JSON Command
	// after the type byte, and CommandFds descriptors (SCM_RIGHTS): the
	// command's stdin, stdout and stderr, the command's own status socket
	// and the read end of its spec pipe. The server starts the helper
	// (HelperCommand) with them at 0, 1, 2, FdStatus and FdSpec, in a
	// session of its own: the helper reads that spec (Rlimits, Env, the
	// WaitGo of a cgroup), reports on that socket and execs the command,
	// as in a sandbox of its own.
	MsgCommand = 'C'
	// MsgExited is the server's answer to MsgCommand once the command
	// ended and every other process of the sandbox was killed and reaped:
	// a JSON Exited after the type byte.
	MsgExited = 'X'
	// MsgPrestarted tells the host that the server started the next
	// command's helper ahead (SessionExecCommand): its only child now,
	// which the host may move into the next command's cgroup until it
	// hands the server another command. The decimal number after it
	// counts the commands the server answered so far, so that the host
	// knows which command that helper will serve.
	MsgPrestarted = 'P'
)

// CommandFds is the number of descriptors a MsgCommand carries.
const CommandFds = 5

// MaxCommand bounds a MsgCommand (one datagram): a longer command line
// runs in a sandbox of its own.
const MaxCommand = 64 << 10

// Command is the payload of MsgCommand.
type Command struct {
	// Argv is the command and its arguments.
	Argv []string `json:"argv"`
	// Dir is its working directory inside the sandbox.
	Dir string `json:"dir"`
	// PrestartFirst asks the server to start the next command's helper
	// and say so (MsgPrestarted) before it answers MsgExited: the host
	// then has that helper's pid before the next command, for its cgroup.
	PrestartFirst bool `json:"prestart_first,omitempty"`
}

// Exited is the payload of MsgExited.
type Exited struct {
	// Status is the command's wait status (the helper became the
	// command), as wait4 reported it.
	Status int `json:"status"`
	// UserNS and SystemNS are the CPU time of the command and of the
	// processes it waited for, in nanoseconds; MaxRSSKB its peak resident
	// set.
	UserNS   int64 `json:"user_ns"`
	SystemNS int64 `json:"system_ns"`
	MaxRSSKB int64 `json:"max_rss_kb"`
	// Err says why the command could not be started (no working
	// directory inside, say); Status is then meaningless.
	Err string `json:"err,omitempty"`
}

// CommandMessage is the MsgCommand datagram of c.
func CommandMessage(c Command) ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	if len(b)+1 > MaxCommand {
		return nil, fmt.Errorf("the command line is %d bytes, over a session's %d", len(b), MaxCommand)
	}
	return append([]byte{MsgCommand}, b...), nil
}

// ParseCommand returns the Command of a MsgCommand datagram.
func ParseCommand(msg []byte) (Command, error) {
	var c Command
	if len(msg) == 0 || msg[0] != MsgCommand {
		return c, fmt.Errorf("not a command message: %q", msg[:min(len(msg), 16)])
	}
	if err := json.Unmarshal(msg[1:], &c); err != nil {
		return c, fmt.Errorf("decoding a command message: %w", err)
	}
	if len(c.Argv) == 0 {
		return c, errors.New("a command message without a command")
	}
	return c, nil
}

// ExitedMessage is the MsgExited datagram of e.
func ExitedMessage(e Exited) []byte {
	b, _ := json.Marshal(e) // numbers and a string always encode
	return append([]byte{MsgExited}, b...)
}

// ParseExited returns the Exited of a MsgExited datagram.
func ParseExited(msg []byte) (Exited, error) {
	var e Exited
	if len(msg) == 0 || msg[0] != MsgExited {
		return e, fmt.Errorf("not an exit message: %q", msg[:min(len(msg), 16)])
	}
	if err := json.Unmarshal(msg[1:], &e); err != nil {
		return e, fmt.Errorf("decoding an exit message: %w", err)
	}
	return e, nil
}
