// Command cordon-mcp is cordon's MCP server. Its file tools are built only
// for Linux and macOS: on Windows it says so and exits with 125.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "cordon-mcp: the MCP server's file tools are built only for Linux and macOS, not for Windows; use cordon run on Windows")
	os.Exit(125)
}
