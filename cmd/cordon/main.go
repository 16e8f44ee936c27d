// Command cordon runs commands confined by a sandbox policy. See README.md.
package main

import (
	"os"

	"github.com/cordon-sandbox/cordon/gocacheprog"
	"github.com/cordon-sandbox/cordon/helper"
	"github.com/cordon-sandbox/cordon/helperspec"
	"github.com/cordon-sandbox/cordon/internal/cli"
)

func main() {
	// Inside the sandbox, the helper runs before anything else: it must be
	// fast and must not parse flags meant for the user's command.
	if len(os.Args) > 1 && os.Args[1] == helperspec.HelperCommand {
		os.Exit(helper.Main(os.Args[2:]))
	}
	// ssh's ProxyCommand inside a filtered sandbox.
	if len(os.Args) > 1 && os.Args[1] == helperspec.ConnectCommand {
		os.Exit(helper.Connect(os.Args[2:]))
	}
	// The go command inside the sandbox starts this as its GOCACHEPROG.
	if len(os.Args) > 1 && os.Args[1] == gocacheprog.Command {
		os.Exit(gocacheprog.Main(os.Args[2:]))
	}
	os.Exit(cli.Main(os.Args[1:]))
}
