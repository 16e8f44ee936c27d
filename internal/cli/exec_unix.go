//go:build unix

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// execProgram replaces this process with path, argv and the environment;
// it returns only with an error.
func execProgram(path string, argv []string) error {
	return unix.Exec(path, argv, os.Environ())
}
