// Package helpercmd is the one table of the subcommands a process runs
// when cordon starts it as its in-sandbox helper: the helper itself
// (helperspec.HelperCommand), ssh's ProxyCommand inside a filtered
// sandbox (helperspec.ConnectCommand) and the go command's GOCACHEPROG
// (gocacheprog.Command). Both programs that can be started as the helper
// dispatch through it: the cordon-helper binary, and a library host
// through sandbox.Init, whose own executable is the helper there.
//
// It owns the dispatch only. It must not parse flags, print anything of
// its own or import the planner: it is linked into the helper, which
// starts in every sandbox.
package helpercmd

import (
	"github.com/cordon-sandbox/cordon/internal/gocacheprog"
	"github.com/cordon-sandbox/cordon/internal/helper"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
)

// Subcommand is one entry of the table: the first argument that selects
// it and the function that runs it with the arguments after that one,
// returning the process's exit status.
type Subcommand struct {
	Name string
	Run  func(args []string) int
}

// Subcommands are every subcommand a process started as cordon's helper
// may be asked to run.
var Subcommands = []Subcommand{
	{helperspec.HelperCommand, helper.Main},
	// A session's server (launch.Session).
	{helperspec.SessionCommand, helper.Serve},
	// The helper a session's server starts ahead of a command.
	{helperspec.SessionExecCommand, helper.SessionExec},
	// ssh's ProxyCommand inside a filtered sandbox.
	{helperspec.ConnectCommand, helper.Connect},
	// The go command inside the sandbox starts it as its GOCACHEPROG.
	{gocacheprog.Command, gocacheprog.Main},
}

// Lookup returns the subcommand args[0] selects, if any (args are the
// process's arguments after its name, os.Args[1:]).
func Lookup(args []string) (Subcommand, bool) {
	if len(args) == 0 {
		return Subcommand{}, false
	}
	for _, s := range Subcommands {
		if s.Name == args[0] {
			return s, true
		}
	}
	return Subcommand{}, false
}
