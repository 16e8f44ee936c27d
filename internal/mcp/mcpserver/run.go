package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cordon-sandbox/cordon/internal/launch"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// timeout returns the timeout for one call: the requested one, never more
// than the policy's (or MaxTimeout when the policy has none); 0 asks for
// the default. capped says a longer one was asked for. seconds is compared
// with the limit before it becomes a Duration, so no value wraps around.
func (s *Server) timeout(seconds int) (d time.Duration, capped bool, err error) {
	limit := s.p.Timeout
	if limit <= 0 {
		limit = MaxTimeout
	}
	d = s.p.Timeout
	if d <= 0 {
		d = s.opts.DefaultTimeout
	}
	switch {
	case seconds < 0:
		return 0, false, fmt.Errorf("run_command: timeout_seconds %d is out of range: give a number of seconds from 1 to %d, or leave it out for the default (%s)", seconds, int64(limit/time.Second), min(d, limit))
	case seconds == 0:
		return min(d, limit), false, nil
	case int64(seconds) > int64(limit/time.Second):
		return limit, true, nil
	}
	return min(time.Duration(seconds)*time.Second, limit), false, nil
}

// defaultTimeout is the timeout of a call that asks for none.
func (s *Server) defaultTimeout() time.Duration {
	d, _, _ := s.timeout(0)
	return d
}

func (s *Server) runCommand(ctx context.Context, in RunCommandInput) (*mcp.CallToolResult, error) {
	var argv []string
	switch {
	case len(in.Argv) > 0 && in.Command != "":
		return nil, errors.New("run_command: give either argv or command, not both")
	case len(in.Argv) > 0:
		argv = in.Argv
	case strings.TrimSpace(in.Command) != "":
		// The command line is one argv element of the shell; it is never
		// concatenated with any other input.
		argv = shellArgv(in.Command)
	default:
		return nil, errors.New("run_command: give argv (the command and its arguments) or command (a shell command line)")
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, errors.New("run_command: an argument contains a NUL byte")
		}
	}
	cwd := s.fs.Workspace()
	if in.Dir != "" {
		e, err := s.fs.Info(in.Dir)
		if err != nil {
			return nil, err
		}
		if e.Type != "dir" {
			return nil, fmt.Errorf("run_command: dir %q is not a directory", in.Dir)
		}
		cwd = e.Name
	}
	maxOut := DefaultMaxOutput
	switch {
	case in.MaxOutputBytes < 0:
		return nil, fmt.Errorf("run_command: max_output_bytes %d is out of range: give a number of bytes from 1 to %d, or leave it out for the default (%d)", in.MaxOutputBytes, MaxOutput, DefaultMaxOutput)
	case in.MaxOutputBytes > 0:
		maxOut = min(in.MaxOutputBytes, MaxOutput)
	}
	timeout, capped, err := s.timeout(in.TimeoutSeconds)
	if err != nil {
		return nil, err
	}
	p := *s.p
	p.Timeout = timeout
	opts := s.opts.Plan
	opts.Cwd, opts.Interactive = cwd, false
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("run_command: %w", err)
	}
	buf := newOutputBuffer(maxOut)
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(buf, r)
		close(copied)
	}()
	// What the run says goes into the result: the degraded rules, the
	// warnings (why a command that exited 0 ends with exit code 1: a git
	// config change that did not reach the host, a key the merge
	// refused), limits reached, the hosts the network proxy refused, what
	// the violation monitor saw denied, the hint and the notes before the
	// output; the fall back to the Landlock-only backend in the output,
	// where it happened. A connection to a target no rule names asks the
	// person, when the client can be asked while the command runs
	// (netask.go), and may warn meanwhile: the warnings are guarded.
	var degraded, said, notes []string
	var warnMu sync.Mutex
	var warned []string
	warn := func(s string) {
		warnMu.Lock()
		defer warnMu.Unlock()
		warned = append(warned, "warning: "+s)
	}
	tell := func(l launch.Line) {
		switch l.Kind {
		case launch.Degraded:
			// An agent reads each rule whole.
			for _, d := range l.Details {
				degraded = append(degraded, "degraded: "+d)
			}
		case launch.Warning:
			warn(l.Text)
		case launch.NetRefused:
			said = append(said, "network: "+l.Text)
		case launch.Denied:
			said = append(said, "denied: "+l.Text)
		case launch.Limit, launch.Hint:
			said = append(said, l.Text)
		case launch.Note:
			notes = append(notes, "note: "+l.Text)
		case launch.FallingBack:
			fmt.Fprintln(w, "cordon: "+l.Text)
		case launch.TimedOut:
			// The exit code's line says it.
		}
	}
	auditCommand := "mcp run_command: " + strings.Join(argv, " ")
	res, runErr := launch.RunCommand(ctx, launch.Request{Policy: &p, Command: argv, Options: opts, Helper: s.opts.Helper, Tell: tell,
		Stdio: launch.Stdio{Stdout: w, Stderr: w, NetAsk: s.netAsk(ctx, auditCommand, warn)}, Audit: s.opts.Audit, SessionID: s.opts.SessionID, AuditCommand: auditCommand, Session: s.session})
	w.Close()
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
		// A process that escaped the tree (mode off) still holds the pipe.
	}
	r.Close()
	output := buf.text()
	var xe *launch.ExecError
	var se *launch.SetupError
	switch {
	case errors.As(runErr, &xe):
		return text(fmt.Sprintf("exit code: %d\n%s\n", xe.Code, xe.Msg)), nil
	case errors.As(runErr, &se):
		return nil, fmt.Errorf("run_command: the sandbox could not start the command: %w", runErr)
	case runErr != nil:
		return nil, fmt.Errorf("run_command: %w", runErr) // the plan's
	}
	var b strings.Builder
	fmt.Fprintf(&b, "exit code: %d", res.ExitCode)
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, " (timed out after %s: the command and everything it started were killed)", p.Timeout)
	case res.Signal != 0:
		fmt.Fprintf(&b, " (killed by signal %d)", res.Signal)
	}
	b.WriteString("\n")
	if capped {
		fmt.Fprintf(&b, "note: timeout_seconds %d is above the limit of %s, which applied\n", in.TimeoutSeconds, p.Timeout)
	}
	warnMu.Lock()
	defer warnMu.Unlock()
	for _, l := range slices.Concat(degraded, warned, said, notes) {
		b.WriteString(l + "\n")
	}
	b.WriteString(output)
	return text(b.String()), nil
}

// Status is what sandbox_status reports.
type Status struct {
	// Mode is the sandbox mode.
	Mode string `json:"mode"`
	// Profile is the policy's profile.
	Profile string `json:"profile"`
	// Workspace is the working directory.
	Workspace string `json:"workspace"`
	// Backend is the OS sandbox run_command uses (or the error building it).
	Backend string `json:"backend"`
	// Network is the network mode of run_command.
	Network string `json:"network"`
	// Timeout is the default timeout of run_command.
	Timeout string `json:"timeout"`
	// Deny are the deny rules (file tools and commands).
	Deny []string `json:"deny"`
	// Protected are the paths kept read-only inside writable roots.
	Protected []string `json:"protected"`
	// Enforced says what is enforced, one sentence each.
	Enforced []string `json:"enforced"`
	// Degraded lists what run_command's backend cannot enforce.
	Degraded []string `json:"degraded,omitempty"`
	// AuditLog is the audit log file, or "" when violations are not logged.
	AuditLog string `json:"audit_log"`
	// SessionID identifies this server in the audit log.
	SessionID string `json:"session_id"`
}

func (s *Server) status() Status {
	st := Status{Mode: string(s.p.Mode), Profile: s.p.Profile, Workspace: s.fs.Workspace(), Network: string(s.p.Network.Mode),
		Timeout: s.defaultTimeout().String(), Deny: s.p.Deny, Protected: s.p.Protected, AuditLog: s.opts.Audit.Path(), SessionID: s.opts.SessionID}
	opts := s.opts.Plan
	opts.Cwd = s.fs.Workspace()
	opts.Host = launch.HostFacts(s.p, s.opts.Helper)
	pl, err := plan.Build(s.p, []string{"true"}, opts)
	if err != nil {
		st.Backend = "unavailable: " + err.Error()
	} else {
		st.Backend, st.Degraded = string(pl.Backend), pl.Degraded
	}
	if s.p.Mode == policy.ModeOff {
		st.Enforced = []string{
			"nothing: mode off (--no-sandbox); file tools reach any path and commands run unconfined",
			"file tools still refuse FIFOs, devices and sockets, and bound what they read and return",
		}
		return st
	}
	st.Enforced = []string{
		"file tools: every path resolves inside the workspace by descriptor (os.Root); '..', absolute paths elsewhere and symbolic links leaving it are refused",
		"file tools: deny rules apply inside the workspace; protected paths (at any depth, and the config, hooks and commondir entries of every git directory) and deny_write paths cannot be written or created; files with several hard links cannot be written",
		"file tools: FIFOs, devices and sockets are refused; reads and results are size-bounded",
		fmt.Sprintf("run_command: OS sandbox (backend %s) with the same policy; timeout %s; output capped at %d bytes (its head and tail, with the cut said)", st.Backend, st.Timeout, DefaultMaxOutput),
		"violations are tool errors starting 'sandbox violation:'",
	}
	if st.AuditLog != "" {
		st.Enforced = append(st.Enforced, "file tool violations are written to the audit log "+st.AuditLog)
	}
	return st
}

// shellArgv is the argv that runs the command line c: /bin/sh -c c, and
// on Windows cmd.exe /d /s /c c (the cmd.exe of %SystemRoot%\System32,
// without AutoRun commands). Go passes c to cmd.exe as one quoted
// argument, which /s unwraps; a double quote inside c is escaped as
// Windows programs read it, not as cmd.exe does, so a command with quoted
// arguments is better given as argv there.
func shellArgv(c string) []string {
	if runtime.GOOS != "windows" {
		return []string{"/bin/sh", "-c", c}
	}
	cmd := `C:\Windows\System32\cmd.exe`
	if root := os.Getenv("SystemRoot"); root != "" {
		cmd = filepath.Join(root, "System32", "cmd.exe")
	}
	return []string{cmd, "/d", "/s", "/c", c}
}
