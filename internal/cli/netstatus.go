package cli

import (
	"fmt"

	"github.com/cordon-sandbox/cordon/internal/host/probe"
)

// landlockTCPABI is the Landlock ABI that limits TCP connect and bind
// by port, which the Landlock-only backend's filtered network needs.
const landlockTCPABI = 4

// networkRows say how cordon confines the network here: under
// bubblewrap, and on the Landlock-only backend.
func networkRows(r *probe.Report, st func(bool) string) []enforcement {
	return []enforcement{
		{"network", st(true), "deny: an empty network namespace (no DNS, nothing out); open: the host's network; " +
			"loopback (--net loopback): a namespace of its own with only its loopback, plus the host's --forward-port ports at the same numbers; " +
			"filtered (--allow-net, --deny-net, the ci profile): that namespace, whose only way out is cordon's HTTP and SOCKS5 proxy on the host, " +
			"deciding each connection by host, port and every resolved address (no DNS inside; loopback, private, link-local and cloud metadata addresses refused unless an IP or CIDR rule allows them); " +
			"every decision is an audit record", nil},
		landlockNetworkRow(r),
	}
}

// landlockNetworkRow says what the Landlock-only backend does with the
// network on this kernel: it has no network namespace.
func landlockNetworkRow(r *probe.Report) enforcement {
	e := enforcement{Area: "landlock-only network"}
	abi := r.Landlock.ABI
	switch {
	case abi < 1:
		e.Status, e.Detail = "unavailable", "no Landlock"
	case abi < landlockTCPABI:
		e.Status = "partial"
		e.Detail = fmt.Sprintf("deny (seccomp refuses internet sockets) and open work; filtered and loopback networks are refused (exit 125): Landlock ABI %d cannot limit TCP ports (needs ABI %d), and loopback needs a network namespace", abi, landlockTCPABI)
	default:
		e.Status = "partial"
		e.Detail = fmt.Sprintf("no network namespace: deny (seccomp refuses internet sockets) and open work; filtered: cordon's proxy listens on the host's 127.0.0.1 with a per-run token, Landlock (ABI %d) lets TCP connect only to its two ports and the forwarded ports and bind none, seccomp refuses every socket but TCP (no UDP, so no DNS; no raw or packet sockets); loopback is refused (it needs a network namespace)", abi)
		e.Degraded = []string{"filtered network: a TCP connection to any address on the proxy's port numbers is not stopped (Landlock limits ports, not addresses); strict mode refuses to run this way"}
	}
	return e
}
