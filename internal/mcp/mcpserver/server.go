// Package mcpserver is cordon's Model Context Protocol server: file tools
// confined to the workspace by the workspace package, run_command executed
// through the OS sandbox, and sandbox_status, all under one Policy.
//
// A sandbox violation is returned as a tool result with isError set and a
// text starting "sandbox violation:", and is written to the audit log; the
// server keeps serving. Tool handlers recover from panics, so no input can
// bring the server down.
//
// It owns the tools' schemas, their wording for an agent, and the stdio
// transport. It must not resolve a path itself (package workspace does,
// by descriptor) nor run a command but through launch.RunCommand.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/launch"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names: a fixed contract with MCP clients.
const (
	ToolReadFile      = "read_file"
	ToolWriteFile     = "write_file"
	ToolEditFile      = "edit_file"
	ToolReplaceLines  = "replace_lines"
	ToolListDir       = "list_dir"
	ToolFindFiles     = "find_files"
	ToolGrep          = "grep"
	ToolFileInfo      = "file_info"
	ToolCreateDir     = "create_dir"
	ToolRunCommand    = "run_command"
	ToolSandboxStatus = "sandbox_status"
)

// ToolNames lists every tool the server registers, in registration order.
var ToolNames = []string{ToolReadFile, ToolWriteFile, ToolEditFile, ToolReplaceLines, ToolListDir,
	ToolFindFiles, ToolGrep, ToolFileInfo, ToolCreateDir, ToolRunCommand, ToolSandboxStatus}

// Defaults for run_command.
const (
	// DefaultTimeout bounds a command when neither the policy nor the call
	// sets a timeout.
	DefaultTimeout = 120 * time.Second
	// MaxTimeout is the longest timeout a call may ask for when the policy
	// sets none.
	MaxTimeout = time.Hour
	// DefaultMaxOutput is the most bytes of command output returned.
	DefaultMaxOutput = 64 << 10
	// MaxOutput is the largest output cap a call may ask for.
	MaxOutput = 1 << 20
)

// Options configure a Server.
type Options struct {
	// Policy is the effective policy; its Workspace is the working directory.
	Policy *policy.Policy
	// Audit receives a record for every violation; nil disables it.
	Audit *audit.Log
	// SessionID identifies this server in audit records.
	SessionID string
	// Version is reported to clients.
	Version string
	// Plan is passed to plan.Build for run_command (Home, Getenv,
	// StateDir); Cwd is set per call and Interactive is always false.
	Plan plan.Options
	// Helper is the binary run_command runs as the in-sandbox helper:
	// cordon-mcp's is cordon-helper beside it (launch.SiblingHelper); the
	// zero value is the running program's own (sandbox.Init).
	Helper launch.Helper
	// DefaultTimeout replaces the package DefaultTimeout when non-zero.
	DefaultTimeout time.Duration
	// UserConfig is the user config file (policy.UserConfigPath): never
	// asked about, and where run_command saves a network answer "for
	// this workspace". "" is the one of Plan's Home and Getenv.
	UserConfig string
}

// Server is a cordon MCP server.
type Server struct {
	opts Options
	p    *policy.Policy
	fs   *workspace.FS
	srv  *mcp.Server
	// decider names the rule of an allowed call (recordAllowed).
	deciderOnce sync.Once
	decider     *policy.Decider
	// askMu guards asked: the elicitations the file tools sent, by id,
	// with the tool and path each asks about (elicit.go); and netSaved,
	// the network targets allowed "for this workspace" while the server
	// runs (netask.go).
	askMu    sync.Mutex
	asked    map[string]string
	netSaved map[string]bool
	// session keeps run_command's sandbox between calls (launch.Session).
	session *launch.Session
}

// New opens the workspace and registers the tools.
func New(opts Options) (*Server, error) {
	if opts.Policy == nil {
		return nil, errors.New("mcpserver: nil policy")
	}
	fsys, err := workspace.New(opts.Policy, workspace.PolicyRoots(opts.Policy)...)
	if err != nil {
		return nil, err
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.SessionID == "" {
		opts.SessionID = audit.NewSessionID()
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	s := &Server{opts: opts, p: opts.Policy, fs: fsys, session: launch.NewSession()}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "cordon", Title: "cordon sandbox", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "cordon's confined tools. " + s.note(),
		Capabilities: &mcp.ServerCapabilities{},
	})
	s.srv.AddReceivingMiddleware(fastTextResults)
	s.register()
	return s, nil
}

// MCP returns the underlying SDK server (to connect it to any transport).
func (s *Server) MCP() *mcp.Server { return s.srv }

// Run serves one session over t until the client disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error { return s.srv.Run(ctx, t) }

// Close ends run_command's session sandbox and releases the workspace.
func (s *Server) Close() error {
	_ = s.session.Close()
	return s.fs.Close()
}

// note is the sandbox sentence every tool description ends with.
func (s *Server) note() string {
	if s.p.Mode == policy.ModeOff {
		return "Sandbox: OFF (cordon runs with --no-sandbox): paths are not confined to the workspace " + s.fs.Workspace() + "; relative paths are taken from it."
	}
	return "Sandbox: confined by cordon to the workspace " + s.fs.Workspace() + " (relative paths are taken from it); paths outside it, denied paths (.env, secrets.*, ~/.ssh, ...) and, for writes, protected paths at any depth (.git/config, .git/hooks/, .envrc, .vscode/, ..., and the config and hooks of every git directory) are refused with an error starting 'sandbox violation:' that names the rule which decided; only the user can change these rules, in cordon's policy."
}

// text is a successful tool result.
func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// errorResult is a tool result with isError set.
func errorResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// fail turns a handler error into a tool result, recording violations in
// the audit log.
func (s *Server) fail(tool string, err error) *mcp.CallToolResult {
	var v *workspace.Violation
	if errors.As(err, &v) {
		s.record(tool, v)
	}
	return errorResult(err.Error())
}

func (s *Server) record(tool string, v *workspace.Violation) {
	path := v.Resolved
	if path == "" {
		path = v.Path
	}
	rule := v.Rule
	if rule == "" {
		rule = string(v.Kind)
	}
	_ = s.opts.Audit.Record(audit.Record{SessionID: s.opts.SessionID, Command: "mcp " + tool, Operation: v.Op,
		Path: path, Action: audit.ActionDenied, Rule: rule, Mode: string(s.p.Mode)})
}

// allowedOps is the audit operation of each file tool whose allowed calls
// audit.log_allowed records.
var allowedOps = map[string]string{
	ToolReadFile: "file-read", ToolListDir: "file-read", ToolFindFiles: "file-read", ToolGrep: "file-read", ToolFileInfo: "file-read",
	ToolWriteFile: "file-write", ToolEditFile: "file-write", ToolReplaceLines: "file-write", ToolCreateDir: "file-write",
}

// recordAllowed records an allowed call of a file tool with the policy
// entry that allows it, when audit.log_allowed asks for it.
func (s *Server) recordAllowed(tool string, in any) {
	op, ok := allowedOps[tool]
	if !ok || s.opts.Audit == nil || !s.p.Audit.LogAllowed {
		return
	}
	path := s.fs.Workspace()
	var f struct {
		Path string `json:"path"`
	}
	if b, err := json.Marshal(in); err == nil && json.Unmarshal(b, &f) == nil && f.Path != "" {
		path = f.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(s.fs.Workspace(), path)
		}
	}
	path = filepath.Clean(path)
	s.deciderOnce.Do(func() { s.decider = s.p.Decider(s.opts.Plan.Home) })
	_ = s.opts.Audit.Record(audit.Record{SessionID: s.opts.SessionID, Command: "mcp " + tool, Operation: op,
		Path: path, Action: audit.ActionAllowed, Rule: s.decider.Decide(policy.Op(op), path).Rule, Mode: string(s.p.Mode)})
}

// add registers a tool whose handler returns text or an error.
func add[In any](s *Server, t *mcp.Tool, h func(context.Context, In) (string, error)) {
	t.Description += "\n\n" + s.note()
	mcp.AddTool(s.srv, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, _ any, _ error) {
		defer func() {
			if r := recover(); r != nil {
				res = errorResult(fmt.Sprintf("cordon: internal error in %s: %v (please report this)\n%s", t.Name, r, debug.Stack()))
			}
		}()
		if req != nil && req.Session != nil {
			ctx = context.WithValue(ctx, requestKey{}, req)
		}
		var asked bool // served after an answer, itself the audit record
		ctx = context.WithValue(ctx, answeredKey{}, &asked)
		out, err := h(ctx, in)
		var ni *needInput
		if errors.As(err, &ni) {
			return ni.res, nil, nil // a question for the person (elicit.go)
		}
		if err != nil {
			return s.fail(t.Name, err), nil, nil
		}
		if !asked {
			s.recordAllowed(t.Name, in)
		}
		return text(out), nil, nil
	})
}

// addResult registers a tool whose handler builds its own result.
func addResult[In any](s *Server, t *mcp.Tool, h func(context.Context, In) (*mcp.CallToolResult, error)) {
	t.Description += "\n\n" + s.note()
	mcp.AddTool(s.srv, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, _ any, _ error) {
		defer func() {
			if r := recover(); r != nil {
				res = errorResult(fmt.Sprintf("cordon: internal error in %s: %v (please report this)\n%s", t.Name, r, debug.Stack()))
			}
		}()
		if req != nil && req.Session != nil {
			ctx = context.WithValue(ctx, requestKey{}, req)
		}
		r, err := h(ctx, in)
		if err != nil {
			return s.fail(t.Name, err), nil, nil
		}
		return r, nil, nil
	})
}

func ptr[T any](v T) *T { return &v }

func readOnly(title string) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, OpenWorldHint: ptr(false)}
}

func writes(title string, destructive, idempotent bool) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, DestructiveHint: ptr(destructive), IdempotentHint: idempotent, OpenWorldHint: ptr(false)}
}
