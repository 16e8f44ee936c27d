//go:build !linux

package main

import "errors"

// runAsk: --ask is built for Linux only.
func runAsk(int, string, string, string, int, int) error {
	return errors.New("-ask: cordon run --ask is built for Linux only")
}
