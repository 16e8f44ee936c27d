package launch

import (
	"strings"
	"testing"
)

// TestGitConfigRefusedLine: the line names each config file relative to
// the workspace (absolute outside it), says to run the command outside,
// and gives the status 1 only when the command exited 0.
func TestGitConfigRefusedLine(t *testing.T) {
	for _, tc := range []struct {
		files   []string
		exited0 bool
		want    []string
		not     []string
	}{
		{[]string{"/ws/.git/config"}, true, []string{"could not write .git/config:", "outside the sandbox", "; exit status 1, though the command exited 0"}, nil},
		{[]string{"/ws/.git/modules/lib/config", "/repo/.git/config"}, false, []string{"could not write .git/modules/lib/config, /repo/.git/config:"}, []string{"exit status"}},
	} {
		got := gitConfigRefusedLine(tc.files, "/ws", tc.exited0)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q: want %q in it", got, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%q: want no %q in it", got, n)
			}
		}
		if strings.Contains(got, "\n") {
			t.Errorf("%q: more than one line", got)
		}
	}
}
