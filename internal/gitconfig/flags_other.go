//go:build !unix

package gitconfig

const oNonblock = 0
