//go:build linux

package helperspec

import "golang.org/x/sys/unix"

// Rights returns the descriptors that the SCM_RIGHTS messages of the
// control data oob carry, in order; control messages of other kinds are
// skipped, and oob that does not parse yields none. The caller owns (and
// must close) what it returns.
func Rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}
