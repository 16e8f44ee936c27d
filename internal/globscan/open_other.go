//go:build !unix

package globscan

import "os"

// openDir opens a directory for listing.
func openDir(path string) (*os.File, error) {
	return os.Open(path)
}
