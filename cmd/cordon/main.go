// Command cordon runs commands confined by a sandbox policy. See README.md.
// Its helper (cmd/cordon-helper) and MCP server (cmd/cordon-mcp) are
// programs of their own, installed beside it.
package main

import (
	"os"

	"github.com/cordon-sandbox/cordon/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
