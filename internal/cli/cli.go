// Package cli is cordon's command line: it parses flags into a config layer,
// builds the Policy, asks a backend for a Plan and launches it, and words
// what a run says for a terminal (the "cordon:" lines, the tables, the
// JSON of docs/json.md).
//
// It owns the commands, their flags, help and examples, and the exit
// statuses cordon itself gives. It must not decide policy or enforce
// anything: what is allowed comes from package policy, how it is enforced
// from plan and launch; and it must not link the MCP SDK (cordon mcp
// executes cordon-mcp).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/enforce/seccomp"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/host/probe"
	"github.com/cordon-sandbox/cordon/internal/launch"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/suggest"
	"github.com/cordon-sandbox/cordon/internal/walkserver"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/result"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// Version is cordon's version when set at build time with -ldflags
// (release builds: -X github.com/cordon-sandbox/cordon/internal/cli.Version=v1.2.3);
// otherwise the build info's module version and VCS revision are printed
// (see version).
var Version = ""

// exitError carries an exit status through cobra.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Main runs the command line and returns the process exit status.
func Main(args []string) int {
	return execute(newRoot(), args)
}

// execute runs root with args and returns the process exit status.
func execute(root *cobra.Command, args []string) int {
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "cordon: "+oneLine(commandSuggestion(err.Error())))
	return result.ExitSetup
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "cordon",
		Short:         "cordon confines the commands and file operations of AI coding agents",
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       BuildVersion(),
	}
	root.SetVersionTemplate(versionLine() + "\n")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(newRun(), newStatus(), newPolicy(), newVersion(), newMCPExec(), newCache(), newViolations(), newTest(), newLearn(), newShell(), newSetup(), newHook(), newWalkServer())
	// The completion command, made now rather than at Execute so that the
	// examples, the man pages and the tests see it.
	root.InitDefaultCompletionCmd()
	refuseUnknownShell(root)
	return withExamples(root)
}

// refuseUnknownShell makes `cordon completion SHELL` refuse a shell it has
// no script for (cobra's completion command printed its help and exited 0
// for `completion bashh`), with the nearest if one is near.
func refuseUnknownShell(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, s := range c.Commands() {
			shells = append(shells, s.Name())
		}
		c.Args = func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return errors.New(suggest.Unknown("shell", args[0], shells))
		}
		c.RunE = func(c *cobra.Command, args []string) error { return c.Help() }
	}
}

// flagError words a flag error of command c, with the flag it may have
// meant.
func flagError(c *cobra.Command, err error) error {
	return fmt.Errorf("%s%s; see '%s --help'", err, flagSuggestion(c, err), c.CommandPath())
}

func newRun() *cobra.Command {
	pf := policyFlags{auditLogUsed: true}
	var o runOptions
	c := &cobra.Command{
		Use:   "run [flags] -- CMD [ARG...]",
		Short: "run CMD confined",
		Long: `Run CMD confined by the effective policy (see 'cordon policy').
Exit status: the command's own; 128+N if it died of signal N; 124 if --timeout
fired; 125 if cordon failed before running it; 126/127 as a shell would.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// --audit-log asks for the record of what was denied.
			o.watch = cmd.Flags().Changed("audit-log")
			return runConfined(cmd, &pf, o, args)
		},
	}
	o.register(c, &pf)
	return c
}

// runOptions are the flags of cordon run and cordon test besides the
// policy's.
type runOptions struct {
	// jsonOut is the file --json-out names; jsonFlag is --json, refused
	// (errRunJSON).
	jsonOut            string
	jsonFlag, noDisarm bool
	// watch turns the violation monitor on; report prints what it saw
	// (cordon test).
	watch, report bool
	// learn runs permissively, with the command's stdout on stderr, and
	// prints the learned policy on stdout (cordon learn).
	learn bool
}

func (o *runOptions) register(c *cobra.Command, pf *policyFlags) {
	pf.register(c.Flags())
	c.Flags().StringVar(&o.jsonOut, "json-out", "", "write the result (exit code, usage, violations) as one JSON object to `FILE` (or /dev/fd/N), never into the command's output")
	c.Flags().BoolVar(&o.jsonFlag, "json", false, "refused: use --json-out FILE")
	_ = c.Flags().MarkHidden("json")
	c.Flags().BoolVar(&o.noDisarm, "no-disarm", false, "leave git hooks, config keys and other files the command planted armed (they are still reported)")
	c.Flags().SetInterspersed(false)
}

// runConfined runs args as cordon run and cordon test do.
func runConfined(cmd *cobra.Command, pf *policyFlags, o runOptions, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("no command given: use cordon %s [flags] -- CMD [ARG...]", cmd.Name())
	}
	if o.jsonFlag {
		return errRunJSON
	}
	var jsonFile *os.File
	if o.jsonOut != "" {
		f, err := openResultJSON(o.jsonOut)
		if err != nil {
			return err
		}
		defer f.Close()
		jsonFile = f
	}
	// Orphans of the sandbox (bwrap's init) come back to cordon,
	// which reaps them for the command's CPU time.
	_ = launch.BecomeSubreaper()
	p, h, err := pf.loadPolicy(cmd)
	if err != nil {
		return err
	}
	opts := planOptions(h)
	opts.KeepPlanted = o.noDisarm
	stdout := os.Stdout
	if o.learn {
		profileMode := p.Mode
		// What it let through is the learnt policy, not a warning each.
		p.Mode, p.OnViolation = policy.ModePermissive, policy.OnViolationLog
		if profileMode == policy.ModeOff {
			return errors.New("cordon learn learns a policy for a confined mode: drop --mode off (or --no-sandbox, or sandbox.mode: off)")
		}
		// The policy is learnt on stdout.
		stdout = os.Stderr
		// Secrets stay hidden: the learnt policy never allows them.
		opts.HideDenied = true
	}
	req := launch.Request{Policy: p, Command: args, Options: opts, Helper: launch.SiblingHelper, Tell: tellStderr, Watch: o.watch,
		Stdio: launch.Stdio{Stdin: os.Stdin, Stdout: stdout, Stderr: os.Stderr, ForwardSignals: true, OwnsChildren: true, NoUsage: o.jsonOut == ""}}
	if p.Audit.Enabled && p.Audit.LogDenied && p.Audit.LogFile != "" {
		lg := &lazyLog{path: p.Audit.LogFile, max: p.Audit.MaxSize()}
		defer lg.Close()
		req.Audit, req.SessionID, req.AuditCommand = lg, audit.NewSessionID(), strings.Join(args, " ")
	}
	if p.OnViolation == policy.OnViolationAsk {
		s, err := askSession(cmd, p, h)
		if err != nil {
			return err
		}
		if s == nil {
			// From a config file, where nobody is at a terminal: said,
			// not dropped in silence.
			fmt.Fprintln(os.Stderr, "cordon: note: on_violation: ask refuses as block here: no terminal on stdin and stderr to ask on (or not Linux)")
		}
		req.Ask = s
	}
	req.Options.WalkCache = launch.WalkCache(opts.StateDir)
	res, err := launch.RunCommand(context.Background(), req)
	var xe *launch.ExecError
	if errors.As(err, &xe) {
		fmt.Fprintln(os.Stderr, "cordon: "+xe.Msg)
		return &exitError{xe.Code}
	}
	if err != nil {
		return err
	}
	// A large workspace's next runs take their walks from a walk server.
	if exe, err := os.Executable(); err == nil {
		launch.StartWalkServer(req.Options.WalkCache, opts.StateDir, exe)
	}
	if o.report {
		writeReport(os.Stderr, res, h.Home)
	}
	if o.learn {
		if err := writeLearned(os.Stdout, os.Stderr, p, res, h.Home, args); err != nil {
			return err
		}
		warnOutputInside(os.Stderr, os.Stdout, p.Workspace, h.Home)
	}
	if jsonFile != nil {
		if err := writeResultJSON(jsonFile, res); err != nil {
			fmt.Fprintln(os.Stderr, "cordon: "+err.Error())
		}
	}
	if res.ExitCode != 0 {
		return &exitError{res.ExitCode}
	}
	return nil
}

// newWalkServer is the hidden command `cordon __walk DIR` that
// StartWalkServer starts: the walk server of the walk cache directory DIR
// (see walkserver.Serve).
func newWalkServer() *cobra.Command {
	return &cobra.Command{
		Use:    launch.WalkServerArg + " DIR",
		Hidden: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 || !filepath.IsAbs(args[0]) {
				return fmt.Errorf("%s is started by cordon run, with the absolute path of a walk cache directory (~/.local/state/cordon/walk), not %q", launch.WalkServerArg, strings.Join(args, " "))
			}
			return walkserver.Serve(args[0], walkserver.Idle)
		},
	}
}

// tellStderr says what a run says to its user on stderr, as "cordon: "
// lines.
func tellStderr(l launch.Line) {
	prefix := map[launch.LineKind]string{launch.Warning: "warning: ", launch.Note: "note: ", launch.Degraded: "degraded: ", launch.NetRefused: "network: ", launch.Denied: "denied: "}[l.Kind]
	suffix := ""
	if l.Kind == launch.TimedOut {
		suffix = "; killed the command and everything it started"
	}
	fmt.Fprintln(os.Stderr, "cordon: "+prefix+l.Text+suffix)
}

// lazyLog is the audit log of cordon run, opened at its first record: a
// run that planted nothing leaves no log behind.
type lazyLog struct {
	path string
	max  int64
	lg   *audit.Log
}

// Record opens the log if need be and appends r.
func (l *lazyLog) Record(r audit.Record) error {
	if l.lg == nil {
		lg, err := audit.Open(l.path, l.max)
		if err != nil {
			return err
		}
		l.lg = lg
	}
	return l.lg.Record(r)
}

// Close closes the log if it was opened.
func (l *lazyLog) Close() { l.lg.Close() }

// policyJSON is `cordon policy --json`: the effective policy and, with
// --explain, the plan's lines as the text prints them.
type policyJSON struct {
	Policy  *policy.Policy `json:"policy"`
	Explain []string       `json:"explain,omitempty"`
}

// explainLines are the lines of `cordon policy --explain -- args`: the
// plan built for args (CMD when none) and the repository warning.
func explainLines(p *policy.Policy, h policy.Host, args []string) ([]string, error) {
	if len(args) == 0 {
		args = []string{"CMD"}
	}
	opts := planOptions(h)
	opts.Host = launch.HostFacts(p, launch.SiblingHelper)
	pl, err := plan.Build(p, args, opts)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	writeExplain(&b, pl)
	for _, c := range p.Credentials {
		fmt.Fprintf(&b, "credential: %s\n", c.Describe())
	}
	if p.Repo != nil && p.Repo.Refused != "" {
		fmt.Fprintf(&b, "warning: %s\n", p.Repo.Refused)
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"), nil
}

func newPolicy() *cobra.Command {
	pf := policyFlags{readOnly: true}
	var explain, jsonOut bool
	c := &cobra.Command{
		Use:   "policy [flags] [--explain] [--json] [-- CMD...]",
		Short: "print the effective policy (YAML) and, with --explain, the plan",
		RunE: func(cmd *cobra.Command, args []string) error {
			p, h, err := pf.loadPolicy(cmd)
			if err != nil {
				return err
			}
			refused := p.HomeWorkspace && !pf.allowHomeWorkspace
			if refused {
				// No plan: cordon run would make none here.
				also := ""
				if explain {
					also = ", with which --explain prints its plan"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "cordon: note: cordon run refuses the workspace %s (your home directory, an ancestor of it, or /): cd into a project or pass --workspace DIR; this is the policy it would use with --allow-home-workspace%s\n", p.Workspace, also)
			}
			var explained []string
			if explain && !refused {
				if explained, err = explainLines(p, h, args); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			if jsonOut {
				return writeJSON(out, policyJSON{Policy: p, Explain: explained})
			}
			enc := yaml.NewEncoder(out)
			enc.SetIndent(2)
			if err := enc.Encode(p); err != nil {
				return fmt.Errorf("printing policy: %w", err)
			}
			for _, l := range explained {
				fmt.Fprintln(out, l)
			}
			return nil
		},
	}
	pf.register(c.Flags())
	c.Flags().BoolVar(&explain, "explain", false, "also print the plan: the exact bwrap command line and what the helper applies")
	c.Flags().BoolVar(&jsonOut, "json", false, "print one JSON object: the policy, and with --explain the plan's lines")
	return c
}

// planOptions are the launch facts for a plan: an interactive command (stdin
// is a terminal) gets a private pty.
func planOptions(h policy.Host) plan.Options {
	return plan.Options{Home: h.Home, Cwd: h.Cwd, Getenv: h.Getenv, Interactive: launch.IsTerminal(os.Stdin), StateDir: h.StateDir()}
}

func writeExplain(w io.Writer, pl *plan.Plan) {
	fmt.Fprintf(w, "# plan\nbackend: %s\n", pl.Backend)
	if pl.Seatbelt != nil {
		writeSeatbeltArgv(w, pl)
	} else {
		writeArgv(w, pl.Argv)
	}
	writeHelperMounts(w, pl)
	fmt.Fprintf(w, "dir: %s\nenv:\n", pl.Dir)
	for _, e := range pl.Env {
		fmt.Fprintf(w, "  %s\n", e)
	}
	if pl.Backend != backend.None {
		fmt.Fprintf(w, "host env: %s\n", launcherEnvLine(pl))
	}
	for _, n := range launchNeeds(pl) {
		fmt.Fprintf(w, "launch: %s\n", n)
	}
	for _, n := range pl.Net.Describe() {
		fmt.Fprintf(w, "network: %s\n", n)
	}
	if r := pl.Spec.Landlock; r != nil {
		fmt.Fprintln(w, "landlock (best effort for the kernel's ABI):")
		fmt.Fprintf(w, "  read-only: %s\n", strings.Join(limitedList(r.ReadOnly, 12), " "))
		fmt.Fprintf(w, "  read-write: %s\n", strings.Join(r.ReadWrite, " "))
		fmt.Fprintf(w, "  standard devices: %v; no TCP: %v; signal scoping: %v; abstract unix scoping: %v\n", r.StdDevices, r.DenyNetwork, r.ScopeSignals, r.ScopeAbstractUnix)
	}
	if pl.PrivateTmp != "" {
		fmt.Fprintf(w, "private temporary directory: %s (TMPDIR; removed after the run)\n", pl.PrivateTmp)
	}
	if l := pl.Limits; l.MaxProcesses > 0 || l.MaxMemoryMB > 0 {
		fmt.Fprintf(w, "cgroup (when one can be created, see cordon status): pids.max=%d memory=%dMiB\n", l.MaxProcesses, l.MaxMemoryMB)
	}
	if o := pl.Spec.Seccomp; o != nil {
		mode := "standard"
		if o.Strict {
			mode = "strict"
		}
		fmt.Fprintf(w, "seccomp (%s): EPERM for\n", mode)
		for _, d := range seccomp.Describe(*o) {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	if len(pl.Spec.Rlimits) > 0 {
		fmt.Fprintln(w, "helper sets:")
		for _, r := range pl.Spec.Rlimits {
			fmt.Fprintf(w, "  %s=%d\n", r.Name, r.Value)
		}
	}
	if pl.Timeout > 0 {
		fmt.Fprintf(w, "timeout: %s (then SIGTERM, and SIGKILL of the whole sandbox 2s later)\n", pl.Timeout)
	}
	for _, p := range pl.Placeholders {
		fmt.Fprintf(w, "placeholder: %s (an empty %s for a missing protected path; removed after the run)\n", p.Path, p.Kind)
	}
	for _, n := range pl.RunNotes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, n := range pl.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, d := range pl.Degraded {
		fmt.Fprintf(w, "degraded: %s\n", d)
	}
}

// writeArgv prints argv for --explain: one option a line with its
// operands, like a shell script.
// writeHelperMounts prints the protected paths' mounts the helper makes
// (a workspace of many repositories: plan.HelperMountsFrom), in order,
// as bwrap's options would say them, and the command's user namespace.
func writeHelperMounts(w io.Writer, pl *plan.Plan) {
	if len(pl.Spec.Mounts) == 0 {
		return
	}
	fmt.Fprintln(w, "helper mounts (first, in this order):")
	for _, m := range pl.Spec.Mounts {
		src, opt := m.Src, "--bind"
		if src == "" {
			src = m.Dst
		}
		if m.ReadOnly {
			opt = "--ro-bind"
		}
		fmt.Fprintf(w, "  %s\n", strings.Join(quoteAll([]string{opt, src, m.Dst}), " "))
	}
	if u := pl.Spec.User; u != nil {
		fmt.Fprintf(w, "helper user namespace: the command runs as uid %d, gid %d\n", u.UID, u.GID)
	}
}

func writeArgv(w io.Writer, argv []string) {
	fmt.Fprintln(w, "argv:")
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if strings.HasPrefix(a, "--") && i+1 < len(argv) && i > 0 {
			// One option per line with its operands, like a shell script.
			line := []string{a}
			for j := i + 1; j < len(argv) && !strings.HasPrefix(argv[j], "--"); j++ {
				line = append(line, argv[j])
				i = j
			}
			fmt.Fprintf(w, "  %s\n", strings.Join(quoteAll(line), " "))
			continue
		}
		fmt.Fprintf(w, "  %s\n", quote(a))
	}
}

// launchNeeds says what the launcher does for pl, one line each.
func launchNeeds(pl *plan.Plan) []string {
	var out []string
	if pl.LockWorkspace {
		out = append(out, "holds the workspace's lock for the run (placeholders are created under it, and removed by the last run to leave)")
	}
	if pl.PidNamespace {
		out = append(out, "pid namespace: killing bwrap ends the whole sandbox; the command's exact exit status comes through a pidfd")
	}
	if pl.HelperIsChild {
		out = append(out, "the helper is cordon's child and becomes the command: no pid namespace, so a timeout kills the command's process group (and the cgroup, when there is one)")
	}
	return out
}

// launcherEnvLine says what environment the process cordon starts on the
// host gets, and how the command's reaches the command.
func launcherEnvLine(pl *plan.Plan) string {
	who := "bwrap"
	switch pl.Backend {
	case backend.Landlock:
		who = "the helper"
	case backend.Seatbelt:
		return "the env above (sandbox-exec runs on the host with it and passes it on to the command)"
	}
	env := "empty"
	if le := plan.LauncherEnv(); len(le) > 0 {
		env = strings.Join(le, " ")
	}
	return fmt.Sprintf("%s (%s runs on the host with it; the env above reaches the command only through the helper's spec, on fd %d)", env, who, helperspec.FdSpec)
}

// limitedList shortens a long list for printing.
func limitedList(ss []string, n int) []string {
	if len(ss) <= n {
		return ss
	}
	return append(ss[:n:n], fmt.Sprintf("... (%d more)", len(ss)-n))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = quote(s)
	}
	return out
}

func quote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;!#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newStatus() *cobra.Command {
	var jsonOut bool
	var bwrapPath string
	c := &cobra.Command{
		Use:   "status [--json]",
		Short: "backend, kernel features, what is enforced or degraded, remedies",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := probe.Detect(probe.Options{BwrapPath: bwrapPath})
			if jsonOut {
				return writeJSON(cmd.OutOrStdout(), statusJSON{r, r.Features(), enforced(r), binaries()})
			}
			if err := r.WriteText(cmd.OutOrStdout()); err != nil {
				return err
			}
			if err := writeEnforced(cmd.OutOrStdout(), r); err != nil {
				return err
			}
			return writeBinaries(cmd.OutOrStdout(), binaries())
		},
	}
	c.Flags().BoolVar(&jsonOut, "json", false, "print the report as JSON")
	c.Flags().StringVar(&bwrapPath, "bwrap", "", "check this bwrap binary (absolute path) instead of the standard locations")
	return c
}

// statusJSON is `cordon status --json`: the probe's findings, and the
// very lines the text prints (features, remedies, enforced), so that the
// two say the same.
type statusJSON struct {
	*probe.Report
	// Features are the text's lines about the host, "backend (auto)"
	// last.
	Features []probe.Feature `json:"features"`
	// Enforced are the text's lines about what cordon enforces here.
	Enforced []enforcement `json:"enforced"`
	// Binaries are the helper and the MCP server beside cordon, each
	// usable or what is wrong with it.
	Binaries []binaryStatus `json:"binaries"`
}

// enforcement is one line of what this build of cordon enforces.
type enforcement struct {
	Area   string `json:"area"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Degraded lists what the area cannot enforce on this host, as runs
	// print it ("cordon: degraded: ...").
	Degraded []string `json:"degraded,omitempty"`
}

// enforced says what cordon itself enforces on this host, as opposed to
// what the kernel offers.
func enforced(r *probe.Report) []enforcement {
	if rows, ok := enforcedElsewhere(r); ok {
		return rows
	}
	ok := r.AutoBackend == backend.Bwrap
	st := func(built bool) string {
		if built && ok {
			return "enforced"
		}
		if built {
			return "unavailable"
		}
		return "not built yet"
	}
	limitState, limitDetail := limitsState(r)
	rows := []enforcement{
		{"files", st(true), "reads are an allowlist, writes only to write paths, denied paths masked, protected paths (every git directory's config and hooks at any depth, editor, agent and shell config) read-only and kept from being created (bubblewrap mounts); after each run, what it planted is reported and disarmed", nil},
		{"git outside the workspace", st(true), "a sub-directory, linked worktree or submodule checkout gets its repository's work tree (read-only) and git directory (writable, config and hooks read-only); a .git file whose git directory does not name the workspace back gets nothing", nil},
		{"processes", st(true), "own pid namespace: host processes invisible; the whole tree is killed on timeout or when cordon dies", nil},
	}
	rows = append(rows, networkRows(r, st)...)
	return append(rows, []enforcement{
		{"terminal", st(true), "new session, or a private pty when interactive: no TIOCSTI into your terminal", nil},
		{"resource limits", limitState, limitDetail, nil},
		{"seccomp", st(true), "arch-checked filter (x32 and i386 refused): ptrace, bpf, io_uring, kexec, modules, keyctl, mount family, new user namespaces, TIOCSTI/TIOCLINUX get EPERM; strict mode denies more", nil},
		{"landlock", landlockState(r), "under bubblewrap, a second layer: writes only to write paths, /tmp and /dev; no TCP when the network is denied; no signals or abstract unix sockets beyond the sandbox (ABI 6)", nil},
		{Area: "landlock-only backend", Status: landlockOnlyState(r), Detail: landlockOnlyDetail(r), Degraded: landlockOnlyDegraded(r)},
		{"audit log", "enforced", "cordon mcp records every refused file operation, cordon run and run_command every file a run planted and every decision of the network proxy, allowed or refused, and, with the violation monitor on, every distinct access the policy denied a command (audit.log_file, --audit-log); allowed accesses with audit.log_allowed", nil},
		{"violation monitor", monitorState(r), "on request (cordon test, cordon learn, --mode permissive, on_violation: warn or log, --audit-log, audit.log_allowed): a seccomp user-notification supervisor sees every file open, create, rename, exec and socket connect of the command's tree and names the rule that denies it; it only observes (the kernel layers enforce); off by default, at no cost", nil},
	}...)
}

// monitorState says whether the violation monitor can run here: on the
// Linux backends, on an architecture the watch filter is written for (the
// Seatbelt backend's is enforcedSeatbelt's).
func monitorState(r *probe.Report) string {
	if seccomp.WatchAvailable() != nil {
		return "unavailable"
	}
	if r.AutoBackend == backend.Bwrap || r.AutoBackend == backend.Landlock {
		return "available"
	}
	return "unavailable"
}

// limitsState says how process and memory limits are enforced here, by
// the cgroup the probe could create as cordon run would (see the cgroups
// line).
func limitsState(r *probe.Report) (string, string) {
	switch m := r.Limits.Mechanism; m {
	case probe.MechanismCgroup2, probe.MechanismCgroup1:
		return "enforced", m + ": pids and memory limits for the whole sandbox tree; RLIMIT_CPU and RLIMIT_FSIZE per process"
	}
	const detail = "no usable cgroup (see cgroups above): rlimits only: RLIMIT_DATA and RLIMIT_CPU per process, RLIMIT_FSIZE, RLIMIT_NPROC per user"
	if r.Root {
		return "degraded", detail + "; root is exempt from RLIMIT_NPROC, so the process limit is not enforced"
	}
	return "partial", detail
}

// landlockOnlyState says whether --backend landlock (and auto's fallback)
// can run here.
func landlockOnlyState(r *probe.Report) string {
	if r.Landlock.ABI >= 1 {
		return "available"
	}
	return "unavailable"
}

// landlockOnlyDetail says what the Landlock-only backend enforces here;
// how it keeps the command from the host's pathname unix sockets depends
// on the kernel's Landlock ABI.
func landlockOnlyDetail(r *probe.Report) string {
	unixSockets := "pathname unix sockets (ssh-agent, docker): refused when the network is denied, seccomp refusing socket(AF_UNIX) (socketpair works); Landlock confines them only from ABI 9"
	if plan.UnixSocketGap(r.Landlock.ABI) == "" {
		unixSockets = fmt.Sprintf("pathname unix sockets (ssh-agent, docker): only those in the write paths, --allow-unix-socket's and the sandbox's own (Landlock ABI %d)", r.Landlock.ABI)
	}
	return "where no user namespace can be created: Landlock read allowlist and write paths; a seccomp supervisor performs every open, create, remove, rename, link, truncate and metadata change by descriptor and refuses denied and protected paths inside the allowed trees (.env, a --deny directory in the workspace, .git/hooks, .git/config, .vscode, ...) and chmod, chown, utimes and xattr changes outside the write paths; devices: only /dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom, /dev/tty and the command's own terminal, never another /dev/pts/N (so no new pseudo-terminals: openpty, script, tmux fail); " +
		unixSockets + "; seccomp refuses internet sockets when the network is denied; rlimits or cgroup. What it cannot enforce is listed below, printed as degraded at run time, and strict mode refuses to run"
}

// landlockOnlyDegraded lists what the Landlock-only backend cannot enforce
// here, as its runs print it.
func landlockOnlyDegraded(r *probe.Report) []string {
	if r.Landlock.ABI < 1 {
		return nil
	}
	d := plan.LandlockGaps()
	if g := plan.UnixSocketGap(r.Landlock.ABI); g != "" {
		d = append(d, g)
	}
	return d
}

// landlockState says whether the helper's Landlock rules take effect here.
func landlockState(r *probe.Report) string {
	switch {
	case r.AutoBackend != backend.Bwrap:
		return "unavailable"
	case r.Landlock.ABI >= 6:
		return "enforced"
	case r.Landlock.ABI >= 1:
		return "partial"
	}
	return "unavailable"
}

func writeEnforced(w io.Writer, r *probe.Report) error {
	if _, err := fmt.Fprintf(w, "Enforced by cordon %s:\n", BuildVersion()); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	for _, e := range enforced(r) {
		if _, err := fmt.Fprintf(w, "  %-30s %-14s %s\n", e.Area, e.Status, e.Detail); err != nil {
			return fmt.Errorf("write status: %w", err)
		}
		for _, d := range e.Degraded {
			if _, err := fmt.Fprintf(w, "  %-30s %-14s %s\n", "", "degraded", d); err != nil {
				return fmt.Errorf("write status: %w", err)
			}
		}
	}
	return nil
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print cordon's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), versionLine())
		},
	}
}
