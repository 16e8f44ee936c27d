//go:build !linux

package main

// growStdoutPipe does nothing: only Linux resizes a pipe (F_SETPIPE_SZ).
func growStdoutPipe() {}
