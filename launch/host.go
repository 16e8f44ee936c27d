package launch

import (
	"os"

	"github.com/cordon-sandbox/cordon/landlock"
	"github.com/cordon-sandbox/cordon/plan"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/probe"
)

// HostFacts finds what plan.Build needs to know about this host for policy
// p (plan.Options.Host): the bubblewrap binary, the backend auto runs on
// (probe.Auto, only for an auto policy), the kernel's Landlock ABI and
// cordon's own binary. Every front end (cordon run and its --explain, the
// MCP server, the library) fills plan.Options.Host with it. In mode off
// nothing is looked at.
func HostFacts(p *policy.Policy) plan.Host {
	var h plan.Host
	if p.Mode == policy.ModeOff {
		return h
	}
	h.Bwrap, h.BwrapErr = probe.FindBwrap(p.BwrapPath)
	if p.Backend.IsAuto() {
		h.Auto, h.AutoErr = probe.Auto(p.BwrapPath)
	}
	h.LandlockABI, _ = landlock.ABI()
	if exe, err := os.Executable(); err == nil {
		h.Self = exe
	}
	return h
}
