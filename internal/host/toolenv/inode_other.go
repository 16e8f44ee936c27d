//go:build !unix

package toolenv

import "os"

// inode is 0: os.FileInfo carries no inode number outside Unix, and a
// file is then told by its other fields only.
func inode(os.FileInfo) uint64 { return 0 }
