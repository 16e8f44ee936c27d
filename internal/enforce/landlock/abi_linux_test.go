package landlock

import (
	"strings"
	"testing"
)

func TestABITable(t *testing.T) {
	for i := 1; i < len(ABIs); i++ {
		if ABIs[i].Version <= ABIs[i-1].Version || ABIs[i].FSRights&ABIs[i-1].FSRights != ABIs[i-1].FSRights {
			t.Errorf("ABIs[%d] (%d) does not follow ABIs[%d] (%d) with a superset of its rights", i, ABIs[i].Version, i-1, ABIs[i-1].Version)
		}
	}
	for _, tc := range []struct {
		abi  int
		want uint64
	}{
		{0, 0},
		{1, (1 << 13) - 1},
		{2, (1 << 14) - 1},
		{3, (1 << 15) - 1},
		{4, (1 << 15) - 1},
		{5, fsHandled},
		{8, fsHandled},
		{ResolveUnixABI, fsHandled | resolveUnix},
		{ResolveUnixABI + 3, fsHandled | resolveUnix},
	} {
		if got := fsSupported(tc.abi); got != tc.want {
			t.Errorf("fsSupported(%d) = %#x, want %#x", tc.abi, got, tc.want)
		}
	}
	for _, tc := range []struct {
		abi      int
		has, not []string
	}{
		{0, nil, []string{"lacks"}},
		{1, []string{"ABI 1 lacks cross-directory rename/link (ABI 2, Linux 5.19)", "TCP port rules (ABI 4, Linux 6.7)", "abstract-socket and signal scoping (ABI 6, Linux 6.12)"}, []string{"file-system rules"}},
		{4, []string{"device ioctl control (ABI 5, Linux 6.10)"}, []string{"TCP port rules"}},
		{6, nil, []string{"lacks"}},
		{7, nil, []string{"lacks"}},
	} {
		got := Lacks(tc.abi)
		for _, w := range tc.has {
			if !strings.Contains(got, w) {
				t.Errorf("Lacks(%d) = %q, want it to say %q", tc.abi, got, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(got, w) {
				t.Errorf("Lacks(%d) = %q, must not say %q", tc.abi, got, w)
			}
		}
	}
}
