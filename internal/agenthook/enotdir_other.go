//go:build !unix

package agenthook

import "errors"

// syscallENOTDIR never matches where there is no ENOTDIR.
var syscallENOTDIR = errors.New("not a directory")
