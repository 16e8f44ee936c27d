// Command benchmcp measures the MCP server's file tools against ripgrep
// and GNU grep and its round trip on Linux and macOS, where those
// baselines run; on Windows it says so and exits with 125 (the server
// itself is built there: see cordon-mcp).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "benchmcp: the benchmark runs on Linux and macOS (its baselines, grep and ripgrep, and its shell set-up are Unix ones), not on Windows")
	os.Exit(125)
}
