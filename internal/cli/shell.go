package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/launch"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/result"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// shellHelp is what /sandbox help prints.
const shellHelp = `Each line runs confined, in a sandbox of its own, with bash -c (sh without
bash), starting in the workspace; a cd does not carry over to the next line.
  /sandbox, /sandbox status   the policy this shell runs lines under
  /sandbox test CMD           run CMD and report what the policy denied it
  /sandbox violations         what was denied in this shell (the audit log)
  /sandbox help               this text
  exit, Ctrl-D, Ctrl-C        leave
Up and down recall earlier lines; left, right, Ctrl-A, Ctrl-E, Ctrl-U,
Ctrl-W edit the line.
`

func newShell() *cobra.Command {
	pf := policyFlags{auditLogUsed: true}
	c := &cobra.Command{
		Use:   "shell [flags]",
		Short: "interactive confined shell; lines starting with /sandbox are commands",
		Long: `An interactive shell whose every line runs confined by the effective policy,
as cordon run would run it, with line editing and history. Lines starting
with /sandbox are cordon's own commands (/sandbox help lists them).
It needs a terminal.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("ask") {
				return errors.New("cordon shell does not ask yet: drop --ask (its lines refuse as on_violation: block does); cordon run --ask -- CMD asks")
			}
			if !launch.IsTerminal(os.Stdin) || !launch.IsTerminal(os.Stdout) {
				return errors.New("cordon shell needs a terminal on stdin and stdout; run one command with cordon run -- CMD")
			}
			_ = launch.BecomeSubreaper()
			p, h, err := pf.loadPolicy(cmd)
			if err != nil {
				return err
			}
			s := &shell{p: p, h: h, session: audit.NewSessionID()}
			return s.loop()
		},
	}
	pf.register(c.Flags())
	return c
}

// shell is one cordon shell: its policy, host and audit session.
type shell struct {
	p       *policy.Policy
	h       policy.Host
	session string
	t       *term.Terminal
	// lastStatus is the exit status of the line before, the next line's $?.
	lastStatus int
}

// isExitN reports whether line is "exit N", N a number.
func isExitN(line string) bool {
	n, ok := strings.CutPrefix(line, "exit ")
	_, err := strconv.Atoi(strings.TrimSpace(n))
	return ok && err == nil
}

// stdio is the terminal's two ends, for term.Terminal.
type stdio struct{}

func (stdio) Read(b []byte) (int, error)  { return os.Stdin.Read(b) }
func (stdio) Write(b []byte) (int, error) { return os.Stdout.Write(b) }

// loop reads lines until exit, Ctrl-D or Ctrl-C: the terminal is raw
// while a line is edited, and restored while it runs.
func (s *shell) loop() error {
	fd := int(os.Stdin.Fd())
	s.t = term.NewTerminal(stdio{}, "cordon$ ")
	fmt.Fprintf(os.Stdout, "cordon shell: every line runs confined (%s profile, mode %s, workspace %s); /sandbox help\n", s.p.Profile, s.p.Mode, s.p.Workspace)
	for {
		old, err := term.MakeRaw(fd)
		if err != nil {
			return fmt.Errorf("cordon shell: making the terminal raw: %w", err)
		}
		line, err := s.t.ReadLine()
		_ = term.Restore(fd, old)
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(os.Stdout)
			return nil
		}
		if err != nil {
			return fmt.Errorf("cordon shell: reading a line: %w", err)
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case line == "exit" || line == "logout" || isExitN(line):
			// "exit 3" leaves too: it would only end the line's own
			// shell inside the sandbox.
			return nil
		case line == "/sandbox" || strings.HasPrefix(line, "/sandbox "):
			s.sandbox(strings.TrimSpace(strings.TrimPrefix(line, "/sandbox")))
		default:
			s.run(line, false)
		}
	}
}

// sandbox runs one /sandbox command.
func (s *shell) sandbox(arg string) {
	name, rest, _ := strings.Cut(arg, " ")
	rest = strings.TrimSpace(rest)
	switch name {
	case "", "status":
		s.status()
	case "test":
		if rest == "" {
			fmt.Fprintln(os.Stderr, "cordon: /sandbox test needs a command: /sandbox test CMD")
			return
		}
		s.run(rest, true)
	case "violations":
		s.violations()
	case "help":
		fmt.Fprint(os.Stdout, shellHelp)
	default:
		fmt.Fprintf(os.Stderr, "cordon: /sandbox %s: no such command; /sandbox help lists them\n", printable(name))
	}
}

// status prints the policy the lines run under.
func (s *shell) status() {
	p := s.p
	net, _ := p.Network.Effective()
	w := os.Stdout
	fmt.Fprintf(w, "mode %s, profile %s, backend %s\n", p.Mode, p.Profile, p.Backend)
	fmt.Fprintf(w, "workspace: %s\n", p.Workspace)
	fmt.Fprintf(w, "writable:  %s\n", strings.Join(p.HostWrites(), ", "))
	fmt.Fprintf(w, "denied:    %s\n", strings.Join(p.Deny, ", "))
	fmt.Fprintf(w, "network:   %s\n", net)
	if p.Audit.Enabled && p.Audit.LogDenied {
		fmt.Fprintf(w, "audit log: %s (session %s)\n", p.Audit.LogFile, s.session)
	} else {
		fmt.Fprintln(w, "audit log: off")
	}
	fmt.Fprintln(w, "cordon status says what this host enforces; cordon policy --explain prints the whole plan")
}

// run runs line confined, with the violation monitor and its report when
// test is set.
func (s *shell) run(line string, test bool) {
	shellProg := "/bin/sh"
	if _, err := os.Stat("/bin/bash"); err == nil {
		shellProg = "/bin/bash"
	}
	// Each line runs in a shell of its own: $? is carried over from the
	// line before by a fixed program that sets it, the line itself passed
	// as an argument (never spliced into the program) and run by eval.
	args := []string{shellProg, "-c", `__cordon_status=$1 __cordon_line=$2; set --; (exit "$__cordon_status"); eval "$__cordon_line"`,
		shellProg, strconv.Itoa(s.lastStatus), line}
	req := launch.Request{Policy: s.p, Command: args, Options: planOptions(s.h), Helper: launch.SiblingHelper, Tell: tellStderr, Watch: test,
		Stdio:     launch.Stdio{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, ForwardSignals: true, OwnsChildren: true, NoUsage: true},
		SessionID: s.session, AuditCommand: line}
	if s.p.Audit.Enabled && s.p.Audit.LogDenied && s.p.Audit.LogFile != "" {
		lg := &lazyLog{path: s.p.Audit.LogFile, max: s.p.Audit.MaxSize()}
		defer lg.Close()
		req.Audit = lg
	}
	res, err := launch.RunCommand(context.Background(), req)
	var xe *launch.ExecError
	switch {
	case errors.As(err, &xe):
		fmt.Fprintln(os.Stderr, "cordon: "+xe.Msg)
		s.lastStatus = xe.Code
	case err != nil:
		fmt.Fprintln(os.Stderr, "cordon: "+oneLine(err.Error()))
		s.lastStatus = result.ExitSetup
	default:
		s.lastStatus = res.ExitCode
		if test {
			writeReport(os.Stderr, res, s.h.Home)
		}
	}
}

// violations prints what was denied in this shell's session.
func (s *shell) violations() {
	if !s.p.Audit.Enabled || !s.p.Audit.LogDenied {
		fmt.Fprintln(os.Stderr, "cordon: the audit log is off (audit.enabled or audit.log_denied is false): nothing is recorded")
		return
	}
	recs, _, err := audit.Read(s.p.Audit.LogFile, audit.Filter{Session: s.session, Actions: []string{audit.ActionDenied, audit.ActionWarned}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "cordon: "+oneLine(err.Error()))
		return
	}
	if len(recs) == 0 {
		fmt.Fprintln(os.Stdout, "nothing was denied in this shell (denials are recorded by /sandbox test, planted files always)")
		return
	}
	_ = writeTable(os.Stdout, recs, s.h.Home)
}
