//go:build !linux

package monitor

import "errors"

// SuperviseAvailable: the supervisor is built only for Linux.
func SuperviseAvailable() error {
	return errors.New("the supervisor is built only for Linux")
}
