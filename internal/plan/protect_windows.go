package plan

import (
	"os"
)

// unwritable is false on Windows: cordon masks nothing there (a Windows
// run confines no file), so there is nothing to spare.
func unwritable(string) bool { return false }

// unreadable is false on Windows, for the same reason as unwritable.
func unreadable(string) bool { return false }

// readable reports that path can be opened for reading on the host.
func readable(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// reachable is readable on Windows.
func reachable(path string) bool { return readable(path) }

// writable is nil on Windows, where ACLs are not examined: an attempt to
// write says what is wrong.
func writable(string) error { return nil }
