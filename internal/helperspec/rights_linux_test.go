//go:build linux

package helperspec

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRights: the descriptors of every SCM_RIGHTS message, in order; other
// control messages skipped; control data that does not parse, none.
func TestRights(t *testing.T) {
	creds := unix.UnixCredentials(&unix.Ucred{Pid: 1, Uid: 2, Gid: 3})
	rights := unix.UnixRights(3, 4)
	for _, tc := range []struct {
		name string
		oob  []byte
		want []int
	}{
		{"none", nil, nil},
		{"one message", unix.UnixRights(7), []int{7}},
		{"two descriptors", rights, []int{3, 4}},
		{"two messages", append(slices.Clone(rights), unix.UnixRights(9)...), []int{3, 4, 9}},
		{"credentials skipped", append(slices.Clone(creds), unix.UnixRights(5)...), []int{5}},
		{"only credentials", creds, nil},
		{"truncated", rights[:len(rights)-5], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Rights(tc.oob); !slices.Equal(got, tc.want) {
				t.Errorf("Rights = %v, want %v", got, tc.want)
			}
		})
	}
}
