//go:build unix

package gitconfig

import "syscall"

// oNonblock keeps an open of a FIFO planted as a config file from
// blocking.
const oNonblock = syscall.O_NONBLOCK
