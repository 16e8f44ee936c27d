//go:build !unix

package workspace

import "os"

// oNonblock is 0 where O_NONBLOCK does not exist.
const oNonblock = 0

// nlink returns 1: the link count is unknown on this platform.
func nlink(os.FileInfo) uint64 { return 1 }
