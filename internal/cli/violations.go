package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/spf13/cobra"
)

// defaultSince is how far back cordon violations looks by default.
const defaultSince = "24h"

func newViolations() *cobra.Command {
	pf := policyFlags{readOnly: true, auditLogUsed: true} // --audit-log names the log to read
	var since, session string
	var jsonOut bool
	c := &cobra.Command{
		Use:   "violations [--since DUR] [--session ID] [--json]",
		Short: "recent denials from the audit log",
		Long: `Print the operations the policy refused (and those mode permissive, or a
backend that could not enforce them, let through: warned) as the audit log
recorded them: what cordon mcp refused, what the network proxy refused, the
files a run planted, and what the violation monitor saw a command denied
(cordon test, cordon learn, on_violation: warn or log). --since takes a duration
(90m, 24h, 7d; 0 for the whole log); --json prints the records as JSON lines,
in the audit log's own format. The log is audit.log_file (--audit-log FILE),
including its rotated generation (FILE.1).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := parseSince(since)
			if err != nil {
				return err
			}
			p, h, err := pf.loadPolicy(cmd)
			if err != nil {
				return err
			}
			f := audit.Filter{Session: session, Actions: []string{audit.ActionDenied, audit.ActionWarned}}
			if d > 0 {
				f.Since = time.Now().Add(-d)
			}
			recs, st, err := audit.Read(p.Audit.LogFile, f)
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			if st.Skipped > 0 {
				fmt.Fprintf(stderr, "cordon: warning: %d lines of %s are not audit records; skipped\n", st.Skipped, p.Audit.LogFile)
			}
			if !p.Audit.Enabled || !p.Audit.LogDenied {
				fmt.Fprintln(stderr, "cordon: note: the audit log is off (audit.enabled or audit.log_denied is false): new violations are not recorded")
			}
			if jsonOut {
				return writeJSONLines(cmd.OutOrStdout(), recs)
			}
			if len(recs) == 0 {
				what := "in the last " + since
				if d == 0 {
					what = "at all"
				}
				fmt.Fprintf(stderr, "cordon: no violations %s in %s\n", what, p.Audit.LogFile)
				return nil
			}
			return writeTable(cmd.OutOrStdout(), recs, h.Home)
		},
	}
	pf.register(c.Flags())
	// Only the flags that choose the log mean something here.
	for _, name := range []string{"profile", "sandbox-profile", "mode", "sandbox", "no-sandbox", "allow-home-workspace",
		"allow-read", "allow-write", "deny", "deny-write", "net", "allow-net", "deny-net", "forward-port", "allow-unix-socket",
		"max-memory", "max-procs", "max-cpu", "max-file-size", "timeout", "env", "backend"} {
		_ = c.Flags().MarkHidden(name)
	}
	c.Flags().StringVar(&since, "since", defaultSince, "show the records of the last DUR (90m, 24h, 7d; 0: all)")
	c.Flags().StringVar(&session, "session", "", "show only the records of session ID (a record's session_id)")
	c.Flags().BoolVar(&jsonOut, "json", false, "print the records as JSON lines (the audit log's format)")
	return c
}

// parseSince parses --since: a Go duration, a number of days ("7d"), or
// "0" for no bound.
func parseSince(s string) (time.Duration, error) {
	bad := fmt.Errorf("--since %q: not a duration; use one like 90m, 24h or 7d (0: the whole log)", s)
	if s == "0" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 36500 {
			return 0, bad
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, bad
	}
	return d, nil
}

// writeJSONLines writes each record as one line, as the audit log has it.
func writeJSONLines(w io.Writer, recs []audit.Record) error {
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("printing a record: %w", err)
		}
		if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
			return err
		}
	}
	return nil
}

// The table of cordon violations fits tableWidth columns: each record is
// a line of time, action, operation, path or host and command, in columns
// of these widths, and an indented line with the rule that decided.
const (
	tableWidth  = 100
	colTime     = 14 // 11-27 10:00:00
	colAction   = 7  // allowed
	colOp       = 15 // network-connect
	colTarget   = 36
	colCommand  = tableWidth - colTime - colAction - colOp - colTarget - 4*2
	tableIndent = "  "
)

// writeTable writes recs as a table that fits tableWidth columns: time
// (local), action, operation, path or host, command, and the rule on a
// line of its own; paths in home are written ~/... as cordon test writes
// them. Every field that came from a command (paths, hosts, the command
// line) is printed so that it cannot move the cursor or hide text: with
// control or non-printing characters, quoted. A field too long for its
// column is cut with "…" (a path keeps its end, where its name is).
func writeTable(w io.Writer, recs []audit.Record, home string) error {
	var b strings.Builder
	row := func(cols ...string) {
		widths := []int{colTime, colAction, colOp, colTarget, colCommand}
		for i, c := range cols {
			if i == len(cols)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
		}
		b.WriteByte('\n')
	}
	row("TIME", "ACTION", "OPERATION", "PATH OR HOST", "COMMAND")
	for _, r := range recs {
		target := tildeText(r.Path, home)
		if r.Host != "" {
			target = r.Host
			if r.Port != 0 {
				target += ":" + strconv.Itoa(r.Port)
			}
		}
		row(r.Timestamp.Local().Format("01-02 15:04:05"), cutEnd(printable(r.Action), colAction), cutEnd(printable(r.Operation), colOp),
			cutStart(printable(target), colTarget), cutEnd(printable(tildeText(r.Command, home)), colCommand))
		b.WriteString(cutEnd(tableIndent+"rule: "+printable(tildeText(r.Rule, home)), tableWidth))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cutEnd is s cut to n runes, its end replaced by "…" when it is longer.
func cutEnd(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// cutStart is s cut to n runes, its start replaced by "…" when it is
// longer (a path keeps its file name).
func cutStart(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

// printable returns s as it is when every rune is a printing character
// other than a tab, else s quoted with Go's escapes (a newline, an escape
// sequence or a bidirectional override in a planted file's name shows as
// \n, \x1b, \u202e).
func printable(s string) string {
	for _, r := range s {
		if r == '\t' || !unicode.IsPrint(r) || r == utf8.RuneError {
			return strconv.QuoteToGraphic(s)
		}
	}
	if s == "" {
		return "-"
	}
	return s
}
