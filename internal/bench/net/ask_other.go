//go:build !linux

package main

import "errors"

func runAsk(cordon, base string, reqs, runs int) error {
	return errors.New("-cordon is built for Linux only")
}
