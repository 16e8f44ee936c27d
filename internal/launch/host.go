package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cordon-sandbox/cordon/internal/enforce/landlock"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/host/probe"
	"github.com/cordon-sandbox/cordon/internal/host/sibling"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
)

// Helper says which binary runs as the in-sandbox helper.
type Helper int

const (
	// SelfHelper is the running program's own binary, re-executed
	// through /proc/self/exe: a program that calls the helper first thing
	// (sandbox.Init), as the library's hosts and tests do.
	SelfHelper Helper = iota
	// SiblingHelper is cordon-helper (helperspec.HelperBinary) beside
	// the running program, opened and checked by descriptor (package
	// sibling): cordon and cordon-mcp. Missing or failing its check, it
	// is an error, never the running program instead.
	SiblingHelper
)

// HostFacts finds what plan.Build needs to know about this host for policy
// p (plan.Options.Host): the bubblewrap binary, the backend auto runs on
// (probe.Auto, only for an auto policy), the kernel's Landlock ABI and
// the helper's binary, as helper says. Every front end (cordon run and
// its --explain, the MCP server, the library) fills plan.Options.Host
// with it. In mode off nothing is looked at.
func HostFacts(p *policy.Policy, helper Helper) plan.Host {
	var h plan.Host
	if p.Mode == policy.ModeOff {
		return h
	}
	h.Bwrap, h.BwrapErr = probe.FindBwrap(p.BwrapPath)
	if p.Backend.IsAuto() {
		h.Auto, h.AutoErr = probe.Auto(p.BwrapPath)
	}
	h.LandlockABI, _ = landlock.ABI()
	h.Helper, h.HelperErr = helperBinary(helper)
	h.HelperSibling = helper == SiblingHelper
	if rc, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil {
		h.ResolvConf = rc
	}
	return h
}

// helperBinary is the path of the helper's binary on the host. The
// running program's own is "" when it cannot be named (its GOCACHEPROG and
// ssh ProxyCommand on the Landlock-only backend are then left out).
func helperBinary(helper Helper) (string, error) {
	if helper != SiblingHelper {
		exe, _ := os.Executable()
		return exe, nil
	}
	b, err := sibling.Find(helperspec.HelperBinary)
	if err != nil {
		return "", helperError(err)
	}
	return b.Path, nil
}

// helperError words an error of package sibling about the helper.
func helperError(err error) error {
	var se *sibling.Error
	if errors.As(err, &se) {
		return fmt.Errorf("the helper %w", err)
	}
	return fmt.Errorf("finding the helper: %w", err)
}
