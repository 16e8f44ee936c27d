//go:build linux || darwin

package launch

import (
	"fmt"
	"os"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/plan"
)

// startSeatbeltNet starts the network of a Seatbelt plan (runSeatbelt, on
// macOS) whose network is filtered: it checks the forwarded ports, starts
// the proxies on the host's 127.0.0.1 (listenHost, as the Landlock-only
// backend does on Linux), and returns a copy of pl that runs the profile
// allowing connections to their two ports (plan.SeatbeltWithProxy), with
// the proxy variables, their token included, in the command's
// environment. The caller closes the netRun after the run. It fails
// closed: on an error nothing is left listening and the command must not
// run. pl is not changed.
//
// It builds on Linux too, so that its test runs there; only macOS calls
// it, and only the sandbox-exec part of such a run has never run here.
func startSeatbeltNet(pl *plan.Plan, stdio Stdio) (*plan.Plan, *netRun, error) {
	if !pl.Net.Filtered() {
		return pl, nil, nil
	}
	n := *pl.Net
	if !n.HostListen || !n.Seatbelt {
		return nil, nil, fmt.Errorf("launch: the Seatbelt plan's filtered network is not served on the host's loopback")
	}
	if err := checkForwarded(n.MustListen()); err != nil {
		return nil, nil, err
	}
	cr, err := newCredRun(&n)
	if err != nil {
		return nil, nil, err
	}
	nr, err := listenHost(&n, stdio.NetEvents, stdio.NetAsk, stdio.Stderr, cr, stdio.CredentialUses)
	if err != nil {
		return nil, nil, err
	}
	if cr != nil {
		// Written by runSeatbelt once the private /tmp exists (there is
		// no helper on macOS).
		nr.bundle = &helperspec.File{Path: n.CABundle, Data: cr.bundle}
	}
	withNet := *pl
	withNet.Net = &n
	run, err := plan.SeatbeltWithProxy(&withNet)
	if err != nil {
		nr.close()
		return nil, nil, fmt.Errorf("the network proxy's ports in the Seatbelt profile: %w", err)
	}
	run.Env = cr.mergeEnv(n.MergeEnv(run.Env))
	return run, nr, nil
}

// writeBundle writes the trust bundle of a run with credentials where the
// plan says (Net.CABundle, in the private /tmp runSeatbelt made): new,
// read-only, through no symbolic link. Without credentials it does
// nothing.
func (nr *netRun) writeBundle() error {
	if nr == nil || nr.bundle == nil {
		return nil
	}
	f, err := os.OpenFile(nr.bundle.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444) // O_EXCL: never through a link
	if err != nil {
		return fmt.Errorf("writing the credentials' trust bundle: %w", err)
	}
	_, werr := f.Write(nr.bundle.Data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("writing the credentials' trust bundle: %w", werr)
	}
	return nil
}
