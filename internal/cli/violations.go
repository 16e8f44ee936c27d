package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cordon-sandbox/cordon/audit"
	"github.com/spf13/cobra"
)

// defaultSince is how far back cordon violations looks by default.
const defaultSince = "24h"

func newViolations() *cobra.Command {
	pf := policyFlags{allowHomeWorkspace: true, auditLogUsed: true} // --audit-log names the log to read
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
			p, _, err := pf.loadPolicy(cmd)
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
			return writeTable(cmd.OutOrStdout(), recs)
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

// maxCommand bounds the command column of the table, in runes.
const maxCommand = 40

// writeTable writes recs as a table: time (local), action, command,
// operation, path or host, rule. Every field that came from a command
// (paths, hosts, the command line) is printed so that it cannot move the
// cursor or hide text: with control or non-printing characters, quoted.
func writeTable(w io.Writer, recs []audit.Record) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tACTION\tCOMMAND\tOPERATION\tPATH OR HOST\tRULE")
	for _, r := range recs {
		target := r.Path
		if r.Host != "" {
			target = r.Host
			if r.Port != 0 {
				target += ":" + strconv.Itoa(r.Port)
			}
		}
		cmd := r.Command
		if utf8.RuneCountInString(cmd) > maxCommand {
			cmd = string([]rune(cmd)[:maxCommand-1]) + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Timestamp.Local().Format("2006-01-02 15:04:05"),
			printable(r.Action), printable(cmd), printable(r.Operation), printable(target), printable(r.Rule))
	}
	return tw.Flush()
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
