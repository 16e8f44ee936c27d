package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/result"
	"github.com/spf13/cobra"
)

func newTest() *cobra.Command {
	pf := policyFlags{auditLogUsed: true}
	o := runOptions{watch: true, report: true}
	c := &cobra.Command{
		Use:   "test [flags] -- CMD [ARG...]",
		Short: "run CMD confined and report what was denied, with the rule and a suggested change",
		Long: `Run CMD confined, as cordon run does, with the violation monitor on, and
print on stderr each distinct access the policy denied: the operation, the
path or address, the program, the rule that decided, and the flag that
would allow it (never for a secret or a protected path). Then a YAML
snippet for your user config file with every suggested change.
Exit status: as cordon run.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConfined(cmd, &pf, o, args)
		},
	}
	o.register(c, &pf)
	return c
}

// maxReported caps the denials cordon test prints one line each.
const maxReported = 100

// writeReport prints what the violation monitor saw of res for cordon
// test: one line a denial, then the config snippet that allows what may
// be allowed.
func writeReport(w io.Writer, res *result.Result, home string) {
	if res.Monitor == nil {
		fmt.Fprintln(w, "cordon: test: the violation monitor did not run (see the degraded line above): nothing can be reported")
		return
	}
	n := len(res.Violations)
	watched := fmt.Sprintf("%d calls watched", res.Monitor.Calls)
	if res.Monitor.FromLog {
		watched = fmt.Sprintf("%d denials in macOS's log", res.Monitor.Calls)
	}
	if res.Monitor.Unresolved > 0 {
		watched += fmt.Sprintf(", %d of them unreadable", res.Monitor.Unresolved)
	}
	defer writeOther(w, res.Monitor)
	if n == 0 {
		fmt.Fprintf(w, "cordon: test: nothing was denied (%s)\n", watched)
		return
	}
	fmt.Fprintf(w, "cordon: test: %d denied (%s):\n", n+res.Monitor.More, watched)
	shown := res.Violations[:min(n, maxReported)]
	for _, v := range shown {
		fmt.Fprintln(w, "  "+v.Line(home))
	}
	if rest := n - len(shown); rest > 0 {
		fmt.Fprintf(w, "  and %d more (cordon test --json lists them)\n", rest)
	}
	if res.Monitor.More > 0 {
		fmt.Fprintf(w, "  and %d more distinct denials (only the first %d are kept)\n", res.Monitor.More, n)
	}
	if snippet := configSnippet(res.Violations, home); snippet != "" {
		fmt.Fprintln(w, "cordon: test: to allow what may be allowed, add to your user config (~/.config/cordon/config.yaml), or pass the flags above:")
		fmt.Fprint(w, snippet)
	}
}

// writeOther prints the denials of operations the policy has no name for
// (macOS's Mach lookups, sysctls, signals), which no flag allows.
func writeOther(w io.Writer, m *result.Monitor) {
	if m.Other == 0 {
		return
	}
	fmt.Fprintf(w, "cordon: test: and %d denials of operations the policy does not name, which the Seatbelt profile denies by default and no flag allows:\n", m.Other)
	for _, s := range m.OtherSeen {
		fmt.Fprintln(w, "  "+printableLine(s))
	}
	if extra := m.Other - len(m.OtherSeen); len(m.OtherSeen) > 0 && extra > 0 {
		fmt.Fprintf(w, "  (%d more, with repeats)\n", extra)
	}
}

// configSnippet is the YAML that makes the suggested changes of vs, or "".
func configSnippet(vs []result.Violation, home string) string {
	var read, write, sockets []string
	for _, v := range vs {
		flag, arg, ok := strings.Cut(v.Allow, " ")
		if !ok {
			continue
		}
		arg = yamlQuote(tildeArg(arg, home))
		switch flag {
		case "--allow-read":
			read = appendNew(read, arg)
		case "--allow-write":
			write = appendNew(write, arg)
		case "--allow-unix-socket":
			sockets = appendNew(sockets, arg)
		}
	}
	if len(read)+len(write)+len(sockets) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("sandbox:\n")
	if len(read)+len(write) > 0 {
		b.WriteString("  filesystem:\n")
		if len(read) > 0 {
			fmt.Fprintf(&b, "    read: [%s]\n", strings.Join(read, ", "))
		}
		if len(write) > 0 {
			fmt.Fprintf(&b, "    write: [%s]\n", strings.Join(write, ", "))
		}
	}
	if len(sockets) > 0 {
		fmt.Fprintf(&b, "  unix_sockets: [%s]\n", strings.Join(sockets, ", "))
	}
	return b.String()
}

func appendNew(l []string, s string) []string {
	if slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}

// tildeArg writes a path in home as ~/..., as the config file accepts it.
func tildeArg(p, home string) string {
	if home != "" && home != "/" && strings.HasPrefix(p, home+"/") {
		return "~" + p[len(home):]
	}
	return p
}

// yamlQuote is s as a YAML flow scalar: double-quoted, with JSON's
// escapes, which YAML accepts.
func yamlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
