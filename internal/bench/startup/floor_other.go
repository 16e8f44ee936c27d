//go:build !linux

package main

import "errors"

// floorChildArg is Linux's (see floor_linux.go).
const floorChildArg = "__floor_mounts"

// runFloor is Linux's: the mounts it measures are bwrap's and the helper's.
func runFloor(n, rounds int) error {
	return errors.New("-floor measures Linux's mounts: run it on Linux")
}

func floorChild([]string) error { return errors.New("-floor is Linux's") }
