//go:build !linux

package helper

import (
	"fmt"
	"os"
	"runtime"
)

// Main refuses outside Linux: the helper applies Landlock and seccomp
// inside a bubblewrap sandbox, all of which exist only on Linux. It says
// so on stderr and returns 125.
func Main([]string) int {
	fmt.Fprintf(os.Stderr, "cordon: the in-sandbox helper is built only for Linux, not for %s\n", runtime.GOOS)
	return 125
}

// Serve refuses outside Linux, as Main does.
func Serve(args []string) int { return Main(args) }

// SessionExec refuses outside Linux, as Main does.
func SessionExec(args []string) int { return Main(args) }
