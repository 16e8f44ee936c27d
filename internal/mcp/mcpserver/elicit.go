package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/cordon-sandbox/cordon/internal/ask"
	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/subpath"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// requestKey keys the tool call's request in a tool handler's context.
type requestKey struct{}

// answeredKey keys a *bool in a file tool handler's context that askFile
// sets when the call is served after an answer (whose audit record is
// the call's: no log_allowed record follows).
type answeredKey struct{}

// needInput is a tool result that asks the client for input (an
// elicitation) instead of answering: the call is made again with the
// answer (MCP's multi round-trip requests, which the Go SDK turns into
// elicitation/create for a client of an earlier protocol version).
type needInput struct{ res *mcp.CallToolResult }

func (n *needInput) Error() string { return "input required" }

// fileAsk is how a file tool's refusal is asked about: the policy
// operation, the words of the question ("allow the agent to VERB PATH
// once?") and whether the tool reads a whole tree (find_files, grep),
// which is never asked about when cordon's own files lie inside it.
type fileAsk struct {
	op   policy.Op
	verb string
	tree bool
}

// fileAsks are the file tools that ask, by name: every one that takes a
// path the policy may refuse.
var fileAsks = map[string]fileAsk{
	ToolReadFile:     {policy.OpRead, "read", false},
	ToolFileInfo:     {policy.OpRead, "look up", false},
	ToolListDir:      {policy.OpRead, "list", false},
	ToolFindFiles:    {policy.OpRead, "find files under", true},
	ToolGrep:         {policy.OpRead, "search the contents of", true},
	ToolWriteFile:    {policy.OpWrite, "write", false},
	ToolEditFile:     {policy.OpWrite, "edit", false},
	ToolReplaceLines: {policy.OpWrite, "edit", false},
	ToolCreateDir:    {policy.OpWrite, "create the directory", false},
}

// fileCall runs the file tool's operation do on the server's file API
// with path, and when the policy refuses it, asks (askFile): do runs
// again, on a file API for the one path the person allowed, after an
// accept.
func (s *Server) fileCall(ctx context.Context, tool, path string, do func(fsys *workspace.FS, path string) error) error {
	err := do(s.fs, path)
	if err == nil {
		return nil
	}
	return s.askFile(ctx, tool, err, do)
}

// askFile is a file tool's question, through MCP elicitation, to the
// person behind a client that declared the elicitation capability: may
// the tool read (or write) once a path that err refused for lying
// outside every root (or, for a write, in a read-only one)? It returns
// do's error after an accepted answer to a question this server asked
// for this tool and path; a *needInput error that asks it; or err (the
// refusal stands, as without asking) when the client cannot be asked,
// when the path is not askable (policy.Decision.Askable on its real path,
// never cordon's own files: ask.Session.Askable, as cordon run --ask), or
// on any other answer. Every answer is an audit record.
//
// After an accept, do runs on a file API of its own whose one more root
// is the path's directory (the nearest existing one, for a write that
// creates directories): walked by descriptor from that root as every
// call is, the deny, deny_write and protected rules applied there too,
// a symbolic link leaving it refused.
func (s *Server) askFile(ctx context.Context, tool string, err error, do func(fsys *workspace.FS, path string) error) error {
	a, ok := fileAsks[tool]
	var v *workspace.Violation
	if !ok || !errors.As(err, &v) || !(v.Kind == workspace.KindOutside || a.op == policy.OpWrite && v.Kind == workspace.KindReadOnly) {
		return err
	}
	req := elicitRequest(ctx)
	if req == nil {
		return err
	}
	path := v.Resolved
	if path == "" {
		path = v.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(s.fs.Workspace(), path)
		}
	}
	real, root, ok := hostPath(path, a.op == policy.OpWrite)
	if !ok {
		return err
	}
	s.deciderOnce.Do(func() { s.decider = s.p.Decider(s.opts.Plan.Home) })
	d := s.decider.DecideHost(a.op, real)
	kind := ask.FileRead
	if a.op == policy.OpWrite {
		kind = ask.FileWrite
	}
	never := s.never()
	sess := &ask.Session{Never: never}
	if !sess.Askable(ask.Question{Kind: kind, Path: real, Program: "mcp " + tool, Rule: d.Rule, Decision: d}) {
		return err
	}
	if a.tree && slices.ContainsFunc(never, func(n string) bool { return subpath.Within(n, real) }) {
		return err // a search of a tree that holds cordon's own files
	}
	// An answer counts only to a question this server asked, for this
	// tool and path, once.
	key := tool + "\x00" + real
	s.askMu.Lock()
	var answer *mcp.ElicitResult
	for id, r := range req.Params.InputResponses {
		if s.asked[id] == key {
			delete(s.asked, id)
			answer, _ = r.(*mcp.ElicitResult)
			break
		}
	}
	if answer == nil {
		var b [12]byte
		_, _ = rand.Read(b[:])
		id := "cordon-file-" + hex.EncodeToString(b[:])
		if s.asked == nil {
			s.asked = map[string]string{}
		}
		if len(s.asked) >= maxAsked {
			clear(s.asked)
		}
		s.asked[id] = key
		s.askMu.Unlock()
		why := "outside the sandbox's policy"
		if a.op == policy.OpWrite {
			why = "not writable under the sandbox's policy"
		}
		return &needInput{res: &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{id: &mcp.ElicitParams{
			Mode:            "form",
			Message:         fmt.Sprintf("cordon: allow the agent to %s %s once (%s)? It is %s (%s).", a.verb, real, tool, why, d.Rule),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
		}}}}
	}
	s.askMu.Unlock()
	rule, action := "asked: deny", audit.ActionDenied
	if answer.Action == "accept" {
		rule, action = "asked: once", audit.ActionAllowed
	}
	_ = s.opts.Audit.Record(audit.Record{SessionID: s.opts.SessionID, Command: "mcp " + tool, Operation: string(kind),
		Path: real, Action: action, Rule: rule, Mode: string(s.p.Mode)})
	if action != audit.ActionAllowed {
		return err
	}
	one, e := s.oneRoot(root, a.op == policy.OpWrite)
	if e != nil {
		return err
	}
	defer one.Close()
	if answered, _ := ctx.Value(answeredKey{}).(*bool); answered != nil {
		*answered = true
	}
	return do(one, real)
}

// oneRoot is the file API of an accepted question: the policy's roots and
// root (writable for a write), which replaces a policy root of the same
// path; a write whose root is the read-only workspace gets it writable.
func (s *Server) oneRoot(root string, write bool) (*workspace.FS, error) {
	p := *s.p
	var roots []workspace.Root
	for _, r := range workspace.PolicyRoots(s.p) {
		if r.Path != root {
			roots = append(roots, r)
		}
	}
	roots = append(roots, workspace.Root{Path: root, Writable: write})
	if write {
		p.Write = append(slices.Clone(s.p.Write), root)
	}
	return workspace.New(&p, roots...)
}

// hostPath resolves path on the host: its real path, with every symbolic
// link resolved, and the directory to open as the root that serves it
// (the file's directory). A path that does not exist is refused (ok
// false), unless write: then its missing names follow the real path of
// its nearest existing ancestor, which is the root, and a dangling
// symbolic link on the way is refused rather than followed.
func hostPath(path string, write bool) (real, root string, ok bool) {
	path = filepath.Clean(path)
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r, filepath.Dir(r), true
	}
	if !write {
		return "", "", false
	}
	var missing []string
	cur := path
	for {
		_, err := os.Lstat(cur)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(cur) == cur {
			return "", "", false
		}
		missing = append([]string{filepath.Base(cur)}, missing...)
		cur = filepath.Dir(cur)
	}
	r, err := filepath.EvalSymlinks(cur) // a dangling link fails here
	if err != nil {
		return "", "", false
	}
	if fi, err := os.Stat(r); err != nil || !fi.IsDir() {
		return "", "", false
	}
	return filepath.Join(append([]string{r}, missing...)...), r, true
}

// elicitRequest is the tool call's request in ctx when its client can be
// asked by elicitation (it declared the capability, in form mode), or
// nil.
func elicitRequest(ctx context.Context) *mcp.CallToolRequest {
	req, _ := ctx.Value(requestKey{}).(*mcp.CallToolRequest)
	if req == nil || req.Session == nil || req.Params == nil {
		return nil
	}
	ip := req.Session.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return nil
	}
	if e := ip.Capabilities.Elicitation; e.Form == nil && e.URL != nil {
		return nil // url mode only: no form to answer
	}
	return req
}

// maxAsked bounds the questions a server keeps waiting for their answer.
const maxAsked = 64

// never are the trees no question is asked about: cordon's config, its
// state and every workspace's sandbox cache (its config is readable,
// never writable).
func (s *Server) never() []string {
	var out []string
	if c := s.userConfig(); filepath.IsAbs(c) {
		out = append(out, filepath.Dir(c))
	}
	if s.opts.Plan.StateDir != "" {
		out = append(out, s.opts.Plan.StateDir)
	}
	if s.p.SandboxCache != "" {
		out = append(out, filepath.Dir(filepath.Dir(s.p.SandboxCache)))
	}
	return out
}

// userConfig is the user config file: Options.UserConfig, or the one of
// the plan options' home and environment.
func (s *Server) userConfig() string {
	if s.opts.UserConfig != "" {
		return s.opts.UserConfig
	}
	return policy.UserConfigPath(policy.Host{Home: s.opts.Plan.Home, Getenv: s.opts.Plan.Getenv})
}
