package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/plan"
)

// writeSeatbeltArgv prints, for --explain, a Seatbelt plan's argv with the
// profile given by reference, one -D parameter a line, and then the
// profile itself and its parameters: the profile holds no path, each is a
// parameter whose value sandbox-exec gets with -D.
func writeSeatbeltArgv(w io.Writer, pl *plan.Plan) {
	sb := pl.Seatbelt
	fmt.Fprintln(w, "argv:")
	fmt.Fprintf(w, "  %s\n", quote(pl.Argv[0]))
	fmt.Fprintln(w, "  -p PROFILE (below)")
	for _, prm := range sb.Params {
		fmt.Fprintf(w, "  -D %s\n", quote(prm.Name+"="+prm.Value))
	}
	fmt.Fprintf(w, "  %s\n", strings.Join(quoteAll(pl.Command), " "))
	fmt.Fprintf(w, "seatbelt profile (SBPL, last match wins; denials are logged with %q):\n", sb.Tag)
	for _, l := range strings.Split(strings.TrimRight(sb.Profile, "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintln(w, "seatbelt params:")
	for _, prm := range sb.Params {
		fmt.Fprintf(w, "  %s = %s\n", prm.Name, quote(prm.Value))
	}
}
