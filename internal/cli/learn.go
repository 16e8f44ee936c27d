package cli

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/result"
	"github.com/spf13/cobra"
)

func newLearn() *cobra.Command {
	pf := policyFlags{auditLogUsed: true}
	o := runOptions{watch: true, learn: true}
	c := &cobra.Command{
		Use:   "learn [flags] -- CMD [ARG...]",
		Short: "run CMD permissively and print a minimal policy that lets it run",
		Long: `Run CMD in mode permissive (the files and the network are the host's; the
pid namespace, the seccomp filter and the limits stay), with the violation
monitor recording every access the effective policy would deny, and print
on stdout a YAML policy that adds what CMD needed: read and write paths
(directories, never a secret, a protected path or a system directory),
unix sockets, network addresses and forwarded loopback ports. Under it the
same CMD runs in mode standard. CMD's own stdout goes to stderr. Secrets stay
hidden and protected paths read-only during the run, as in mode standard; those
it touched are listed as comments and stay denied. What the run could not keep
out (a protected path it created where none was kept) is one cordon: warning:
line each on stderr, never listed as denied. What a tool keeps for itself and
runs without (Go's telemetry counters) is left out, listed as a comment.
Write the file outside the workspace (a --config file there may only
tighten), e.g. in ~/.config/cordon/.
Exit status: CMD's, as cordon run.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, f := range []string{"mode", "sandbox", "no-sandbox"} {
				if cmd.Flags().Changed(f) {
					return fmt.Errorf("cordon learn always runs mode permissive and learns for mode standard: drop --%s", f)
				}
			}
			return runConfined(cmd, &pf, o, args)
		},
	}
	o.register(c, &pf)
	return c
}

// learned is what cordon learn adds to the policy.
type learned struct {
	read, write, sockets, allowNet []string
	forward                        []int
	netMode                        policy.NetMode
	kept                           []keptGroup // left denied
	// noise are the paths of each learnNoise entry the run touched, left
	// out of the policy (by the entry's index).
	noise map[int][]string
	// happened are the secrets and protected paths the run could not
	// keep out (result.Violation.Unenforced): never "left denied".
	happened []result.Violation
}

// keptGroup is one kind of access left denied: the operation and rule,
// and the paths.
type keptGroup struct {
	what  string // "file-write: filesystem.write: not listed"
	paths []string
	// locked: a secret or a protected path; else no change was
	// suggested (a system directory, a tool cache).
	locked bool
}

// learnNoise are the files a tool keeps for its own bookkeeping and runs
// without: cordon learn leaves them out of the policy (they stay denied in
// mode standard, where the tool goes on) and lists them in a comment. dir
// is relative to the home; an access to it, below it, or to a directory
// between the home and it (made to hold it) is noise.
var learnNoise = []struct{ dir, what string }{
	{".config/go/telemetry", "Go's telemetry counters (the go command goes on without them; go telemetry off stops them)"},
}

// noiseOf returns the index in learnNoise of the entry that an access to
// path is, or -1.
func noiseOf(path, home string) int {
	if home == "" || home == "/" {
		return -1
	}
	for i, n := range learnNoise {
		dir := filepath.Join(home, n.dir)
		if policy.Within(path, dir) || (path != home && policy.Within(path, home) && policy.Within(dir, path)) {
			return i
		}
	}
	return -1
}

// keep adds path to the group of what.
func (l *learned) keep(what, path string, locked bool) {
	for i := range l.kept {
		if l.kept[i].what == what {
			l.kept[i].paths = append(l.kept[i].paths, path)
			return
		}
	}
	l.kept = append(l.kept, keptGroup{what: what, paths: []string{path}, locked: locked})
}

// learn gathers what res's violations and loopback ports ask of p.
func learn(p *policy.Policy, res *result.Result, home string) learned {
	var l learned
	for _, v := range res.Violations {
		if v.Locked && v.Unenforced != "" {
			l.happened = append(l.happened, v)
			continue
		}
		if v.Locked {
			l.keep(v.Operation+": "+tildeText(v.Rule, home), tildeArg(v.Path, home), true)
			continue
		}
		if i := noiseOf(v.Path, home); i >= 0 && v.Path != "" {
			if l.noise == nil {
				l.noise = map[int][]string{}
			}
			l.noise[i] = appendNew(l.noise[i], tildeArg(v.Path, home))
			continue
		}
		if v.Address != "" {
			if ap, err := netip.ParseAddrPort(v.Address); err == nil && (ap.Addr().Unmap().IsLoopback() || ap.Addr().IsUnspecified()) {
				continue // the host's loopback: a port to forward (below)
			}
			l.allowNet = appendNew(l.allowNet, v.Address)
			continue
		}
		flag, arg, ok := strings.Cut(v.Allow, " ")
		if !ok {
			l.keep(v.Operation+": "+tildeText(v.Rule, home), tildeArg(v.Path, home), false)
			continue
		}
		switch flag {
		case "--allow-read":
			l.read = appendNew(l.read, arg)
		case "--allow-write":
			l.write = appendNew(l.write, arg)
		case "--allow-unix-socket":
			l.sockets = appendNew(l.sockets, arg)
		}
	}
	// A directory covers what lies below it; a write path is readable.
	l.write = collapse(l.write, nil)
	l.read = collapse(l.read, l.write)
	if m, _ := p.Network.Effective(); m != policy.NetOpen && res.Monitor != nil {
		for _, port := range res.Monitor.LoopbackPorts {
			if !slices.Contains(p.Network.ForwardPorts, port) {
				l.forward = append(l.forward, port)
			}
		}
		if len(l.forward) > 0 && m == policy.NetDeny && len(l.allowNet) == 0 {
			// A forwarded port needs a network namespace with its own
			// loopback (allow entries make the network filtered, which
			// has one).
			l.netMode = policy.NetLoopback
		}
	}
	return l
}

// collapse drops the paths of l that another path of l, or of also,
// covers.
func collapse(l, also []string) []string {
	var out []string
	for i, p := range l {
		covered := policy.CoveredBy(p, also)
		for j, q := range l {
			if i != j && p != q && policy.Within(p, q) {
				covered = true
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// writeLearned prints the learned policy for command on w, and on warn
// one "cordon: warning:" line for each secret or protected path the run
// could not keep out that no planted-file warning (res.Planted) already
// named.
func writeLearned(w, warn io.Writer, p *policy.Policy, res *result.Result, home string, command []string) error {
	if res.Monitor == nil {
		return errors.New("cordon learn: the violation monitor did not run (see the degraded line above): nothing was learnt")
	}
	l := learn(p, res, home)
	for _, v := range l.happened {
		if slices.ContainsFunc(res.Planted, func(f result.Planted) bool { return policy.Within(v.Path, f.Path) || policy.Within(f.Path, v.Path) }) {
			continue // its planted line says what became of it
		}
		fmt.Fprintf(warn, "cordon: warning: %s (cordon learn could not keep it out): review it\n", v.Line(home))
	}
	q := func(paths []string) string {
		out := make([]string, len(paths))
		for i, s := range paths {
			out[i] = yamlQuote(tildeArg(s, home))
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	var b strings.Builder
	nothing := len(l.read)+len(l.write)+len(l.sockets)+len(l.allowNet)+len(l.forward) == 0 && l.netMode == ""
	if nothing {
		// No setting to add: a bare "sandbox:" read as if one were needed.
		fmt.Fprintf(&b, "# cordon learn: %s needed nothing beyond the %s profile (%d watched calls): there is nothing to add.\n", printableCommand(command), p.Profile, res.Monitor.Calls)
	} else {
		fmt.Fprintf(&b, "# cordon learn: what %s needed beyond the %s profile, from %d watched calls.\n", printableCommand(command), p.Profile, res.Monitor.Calls)
	}
	switch {
	case slices.ContainsFunc(l.kept, func(k keptGroup) bool { return !k.locked }):
		b.WriteString("# Under this policy it may still fail in mode standard: see what it does not allow below.\n")
	case !nothing:
		b.WriteString("# Under this policy it runs in mode standard.\n")
	}
	if !nothing {
		fmt.Fprintf(&b, "# Keep it outside the workspace (a --config file there may only tighten), e.g. in\n# ~/.config/cordon/, and pass it with --config FILE after your other config files,\n# with the same flags (profile %s), or add it to your user config\n# (~/.config/cordon/config.yaml).\n", p.Profile)
		b.WriteString("sandbox:\n")
	}
	if len(l.read)+len(l.write) > 0 {
		b.WriteString("  filesystem:\n")
		if len(l.read) > 0 {
			fmt.Fprintf(&b, "    read: %s\n", q(l.read))
		}
		if len(l.write) > 0 {
			fmt.Fprintf(&b, "    write: %s\n", q(l.write))
		}
	}
	if len(l.sockets) > 0 {
		fmt.Fprintf(&b, "  unix_sockets: %s\n", q(l.sockets))
	}
	if len(l.allowNet)+len(l.forward) > 0 || l.netMode != "" {
		b.WriteString("  network:\n")
		if l.netMode != "" {
			fmt.Fprintf(&b, "    mode: %s\n", l.netMode)
		}
		if len(l.allowNet) > 0 {
			fmt.Fprintf(&b, "    allow: %s  # through cordon's proxy (HTTP_PROXY)\n", q(l.allowNet))
		}
		if len(l.forward) > 0 {
			ports := make([]string, len(l.forward))
			for i, port := range l.forward {
				ports[i] = fmt.Sprint(port)
			}
			fmt.Fprintf(&b, "    forward_ports: [%s]\n", strings.Join(ports, ", "))
		}
	}
	for _, locked := range []bool{true, false} {
		head := "# Left denied: secrets and protected paths are never allowed.\n"
		if !locked {
			head = "# Not allowed by this policy, with no change suggested (a system directory, a host tool's\n# cache or config, a directory too broad): the command may fail on them in mode standard.\n"
		}
		said := false
		for _, k := range l.kept {
			if k.locked != locked {
				continue
			}
			if !said {
				b.WriteString(head)
				said = true
			}
			fmt.Fprintf(&b, "#   %s\n", printableLine(k.what))
			writePaths(&b, k.paths)
		}
	}
	saidNoise := false
	for i, n := range learnNoise {
		paths := l.noise[i]
		if len(paths) == 0 {
			continue
		}
		if !saidNoise {
			saidNoise = true
			b.WriteString("# Left out: what a tool keeps for itself and runs without (it stays denied; the\n# command goes on):\n")
		}
		fmt.Fprintf(&b, "#   ~/%s: %s\n", n.dir, n.what)
		writePaths(&b, paths)
	}
	if res.Monitor.More > 0 {
		fmt.Fprintf(&b, "# %d more distinct accesses were not kept (the monitor's cap): run cordon learn again under this policy.\n", res.Monitor.More)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writePaths writes the first paths, one comment line each, and how
// many more there are.
func writePaths(b *strings.Builder, paths []string) {
	const show = 3
	for _, p := range paths[:min(show, len(paths))] {
		fmt.Fprintf(b, "#     %s\n", printableLine(p))
	}
	if n := len(paths) - show; n > 0 {
		fmt.Fprintf(b, "#     and %d more\n", n)
	}
}

// warnOutputInside says, in one line on warn, when out (cordon learn's
// stdout) is a regular file inside the workspace, where cordon run
// refuses a --config file that allows more (a repository's files may only
// tighten). The file's name comes from /proc/self/fd, only for this
// warning; where there is none, nothing is said.
func warnOutputInside(warn io.Writer, out *os.File, workspace, home string) {
	fi, err := out.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	path, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", out.Fd()))
	if err != nil || !policy.Within(path, workspace) {
		return
	}
	fmt.Fprintf(warn, "cordon: warning: the learnt policy went to %s, inside the workspace, where cordon run refuses a --config file that allows more: move it out, e.g. into ~/.config/cordon/\n", printableLine(tildeArg(path, home)))
}

// printableCommand is command for a comment line.
func printableCommand(command []string) string {
	return printableLine(strings.Join(command, " "))
}

// printableLine quotes s when it holds a character that is not printable
// (see printable), so it stays on one comment line.
func printableLine(s string) string {
	if p := printable(s); p != "-" {
		return p
	}
	return s
}

// tildeText writes every path in home that s holds as ~/...
func tildeText(s, home string) string {
	if home == "" || home == "/" {
		return s
	}
	return strings.ReplaceAll(s, home+"/", "~/")
}
