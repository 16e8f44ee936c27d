// Command cordon-helper is cordon's in-sandbox helper: bubblewrap starts
// it inside the sandbox (or the Landlock-only backend directly) to apply
// Landlock, seccomp and rlimits before it executes the command; inside a
// filtered sandbox it is also ssh's ProxyCommand and the go command's
// GOCACHEPROG. cordon finds it beside itself and checks it before use
// (package sibling). It links only the helper's contract and enforcers,
// never the planner, the policy, net/http or the MCP SDK, so that it
// starts fast. See README.md.
package main

import (
	"fmt"
	"os"

	"github.com/cordon-sandbox/cordon/gocacheprog"
	"github.com/cordon-sandbox/cordon/helper"
	"github.com/cordon-sandbox/cordon/helperspec"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case helperspec.HelperCommand:
			os.Exit(helper.Main(os.Args[2:]))
		case helperspec.ConnectCommand:
			// ssh's ProxyCommand inside a filtered sandbox.
			os.Exit(helper.Connect(os.Args[2:]))
		case gocacheprog.Command:
			// The go command inside the sandbox starts it as its
			// GOCACHEPROG.
			os.Exit(gocacheprog.Main(os.Args[2:]))
		}
	}
	fmt.Fprintln(os.Stderr, "cordon: cordon-helper runs inside cordon's sandboxes only; use cordon run -- CMD")
	os.Exit(125)
}
