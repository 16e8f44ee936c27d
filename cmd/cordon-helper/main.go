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

	"github.com/cordon-sandbox/cordon/internal/helpercmd"
)

func main() {
	if s, ok := helpercmd.Lookup(os.Args[1:]); ok {
		os.Exit(s.Run(os.Args[2:]))
	}
	fmt.Fprintln(os.Stderr, "cordon: cordon-helper runs inside cordon's sandboxes only; use cordon run -- CMD")
	os.Exit(125)
}
