package plan

import (
	"github.com/cordon-sandbox/cordon/backend"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// TestLandlockUnixSockets: how the Landlock-only backend keeps the command
// from the host's pathname unix sockets, for each kernel and policy: by
// Landlock from ABI 9, else by seccomp refusing socket(AF_UNIX) when the
// network is denied and no socket is allowed, else a degraded line (which
// strict mode refuses with the rest).
func TestLandlockUnixSockets(t *testing.T) {
	for _, c := range []struct {
		name     string
		abi      int
		net      policy.NetMode
		allowed  []string
		restrict bool // Landlock's RestrictUnix
		deny     bool // seccomp's AF_UNIX refusal
		gap      bool // a degraded line about pathname unix sockets
	}{
		{"abi 7, net deny", 7, policy.NetDeny, nil, false, true, false},
		{"abi 7, net deny, allowed socket", 7, policy.NetDeny, []string{"/run/x.sock"}, false, false, true},
		{"abi 7, net open", 7, policy.NetOpen, nil, false, false, true},
		{"abi 0, net deny", 0, policy.NetDeny, nil, false, true, false},
		{"abi 9, net deny", 9, policy.NetDeny, nil, true, false, false},
		{"abi 9, net deny, allowed socket", 9, policy.NetDeny, []string{"/run/x.sock"}, true, false, false},
		{"abi 10, net open", 10, policy.NetOpen, nil, true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, opts := testPolicy(t)
			p.Backend = backend.Landlock
			p.Network.Mode = c.net
			p.UnixSockets = c.allowed
			opts.Host.LandlockABI = c.abi
			pl, err := Build(p, []string{"true"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			r := pl.Spec.Landlock
			if r.RestrictUnix != c.restrict || pl.Spec.Seccomp.DenyUnix != c.deny {
				t.Errorf("RestrictUnix %v seccomp DenyUnix %v, want %v %v", r.RestrictUnix, pl.Spec.Seccomp.DenyUnix, c.restrict, c.deny)
			}
			gap := slices.ContainsFunc(pl.Degraded, func(d string) bool { return strings.Contains(d, "pathname unix sockets") })
			if gap != c.gap {
				t.Errorf("degraded line about unix sockets: %v, want %v:\n%s", gap, c.gap, strings.Join(pl.Degraded, "\n"))
			}
			for _, a := range c.allowed {
				if !slices.Contains(r.ReadWrite, a) {
					t.Errorf("allowed socket %s not in ReadWrite %q", a, r.ReadWrite)
				}
			}
		})
	}
}

// TestLandlockDeclaresGaps: what the Landlock-only backend cannot enforce
// (no pid namespace) is on every run's degraded list and in LandlockGaps,
// for cordon status; what its supervisor enforces (file metadata, denied
// and protected paths inside the allowed trees) is not a gap any more, and
// the plan asks the helper for the supervisor. Devices are no gap either
// (StdDevices grants the command's own terminal only).
func TestLandlockDeclaresGaps(t *testing.T) {
	p, opts := testPolicy(t)
	p.Backend = backend.Landlock
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !pl.Spec.Landlock.StdDevices || slices.Contains(pl.Spec.Landlock.ReadWrite, "/dev") {
		t.Errorf("devices: %+v", pl.Spec.Landlock)
	}
	if pl.Supervise == nil || !pl.Spec.Supervise {
		t.Errorf("the plan does not ask for the supervisor: %v %v", pl.Supervise, pl.Spec.Supervise)
	}
	joined := strings.Join(pl.Degraded, "\n")
	gaps := strings.Join(LandlockGaps(), "\n")
	if !strings.Contains(joined, "no pid namespace") || !strings.Contains(gaps, "no pid namespace") {
		t.Errorf("the pid namespace is not declared:\n%s", joined)
	}
	for _, gone := range []string{"file metadata", "carve-outs", "stay readable and writable", "stay writable without bubblewrap"} {
		if strings.Contains(joined, gone) || strings.Contains(gaps, gone) {
			t.Errorf("%q is still declared:\n%s", gone, joined)
		}
	}
	if UnixSocketGap(7) == "" || UnixSocketGap(9) != "" {
		t.Errorf("UnixSocketGap(7) %q, UnixSocketGap(9) %q", UnixSocketGap(7), UnixSocketGap(9))
	}
}
