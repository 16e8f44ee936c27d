//go:build unix

package agenthook

import "syscall"

// syscallENOTDIR is a component under a file that is not a directory.
const syscallENOTDIR = syscall.ENOTDIR
