package launch

import (
	"slices"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
)

// TestWithCPUView: the view's bind goes among bwrap's own options, before
// the "--" that ends them, and only when nothing the plan mounts is at or
// above its target.
func TestWithCPUView(t *testing.T) {
	v := limits.CPUView{Source: "/sys/fs/cgroup/cpu/cordon-run-1", Target: "/sys/fs/cgroup/cpu"}
	tail := []string{"--chdir", "/w", "--", helperspec.HelperPath, helperspec.HelperCommand, "--", "go", "--", "/sys"}
	args := func(opts ...string) []string { return slices.Concat([]string{"bwrap"}, opts, tail) }
	bind := []string{"--ro-bind", v.Source, v.Target}
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"added before bwrap's --", args("--ro-bind", "/usr", "/usr"),
			slices.Concat([]string{"bwrap", "--ro-bind", "/usr", "/usr", "--chdir", "/w"}, bind, tail[2:])},
		{"the policy shows /sys", args("--ro-bind", "/sys", "/sys"), args("--ro-bind", "/sys", "/sys")},
		{"the policy shows the target", args("--ro-bind-try", "/sys/fs/cgroup/cpu/", "/sys/fs/cgroup/cpu/"), args("--ro-bind-try", "/sys/fs/cgroup/cpu/", "/sys/fs/cgroup/cpu/")},
		{"a sibling is no obstacle", args("--ro-bind", "/sys/fs/cgroup/cpuset", "/x"),
			slices.Concat([]string{"bwrap", "--ro-bind", "/sys/fs/cgroup/cpuset", "/x", "--chdir", "/w"}, bind, tail[2:])},
		{"no helper", []string{"bwrap", "--", "true"}, []string{"bwrap", "--", "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			got := withCPUView(in, v)
			if !slices.Equal(got, tc.want) {
				t.Errorf("withCPUView:\n got %q\nwant %q", got, tc.want)
			}
			if !slices.Equal(in, tc.in) {
				t.Errorf("the plan's arguments changed: %q", in)
			}
		})
	}
}
