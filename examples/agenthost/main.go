// Command agenthost is the smallest agent host built on cordon's library:
// it runs one command confined to a workspace (writable, as is the private
// /tmp), with the tool caches (so go build, npm and pip work), no network
// and a timeout, and exits with the command's status. It is the library
// example of docs/library.md; the tests of package sandbox build it and run a real
// go build with it.
//
//	go run ./examples/agenthost -workspace DIR -- CMD [ARG...]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/cordon-sandbox/cordon/sandbox"
)

func main() {
	// First: inside the sandbox this process is cordon's helper.
	sandbox.Init()

	workspace := flag.String("workspace", ".", "the directory the command may write")
	timeout := flag.Duration("timeout", 30*time.Second, "kill the command tree after this long")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: agenthost [-workspace DIR] [-timeout D] -- CMD [ARG...]")
		os.Exit(2)
	}
	sb, err := sandbox.New(
		sandbox.WithWorkspace(*workspace),
		sandbox.WithWritePaths(*workspace),
		sandbox.WithToolCaches(), // Go's, npm's and pip's caches
		sandbox.WithNetwork(sandbox.NetworkDeny),
		sandbox.WithTimeout(*timeout),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agenthost:", err)
		os.Exit(125)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Dir = *workspace
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	res, err := sb.Run(context.Background(), cmd)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agenthost:", err)
		os.Exit(125)
	}
	summary, _ := json.Marshal(res)
	fmt.Fprintf(os.Stderr, "agenthost: backend %s, result %s\n", sb.Backend(), summary)
	os.Exit(res.ExitCode)
}
