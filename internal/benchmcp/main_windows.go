// Command benchmcp measures the MCP server, which is built only for Linux
// and macOS: on Windows it says so and exits with 125.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "benchmcp: the MCP server is built only for Linux and macOS, not for Windows")
	os.Exit(125)
}
