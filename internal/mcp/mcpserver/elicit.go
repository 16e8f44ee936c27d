package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cordon-sandbox/cordon/internal/ask"
	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// requestKey keys the tool call's request in a tool handler's context.
type requestKey struct{}

// needInput is a tool result that asks the client for input (an
// elicitation) instead of answering: the call is made again with the
// answer (MCP's multi round-trip requests, which the Go SDK turns into
// elicitation/create for a client of an earlier protocol version).
type needInput struct{ res *mcp.CallToolResult }

func (n *needInput) Error() string { return "input required" }

// askRead is read_file's question, through MCP elicitation, to the
// person behind a client that declared the elicitation capability: may
// it read, once, a file outside every root that err refused? It returns
// the file's text on an accepted answer to a question this server asked
// for this path; a *needInput error that asks it; or nil and nil (the
// refusal stands, as without asking) when the client cannot be asked,
// when the file is not askable (policy.Decision.Askable on its real path,
// never cordon's own files: ask.Session.Askable, as cordon run --ask), or
// on any other answer. Every answer is an audit record.
func (s *Server) askRead(ctx context.Context, err error, in ReadFileInput) (*workspace.ReadTextResult, error) {
	var v *workspace.Violation
	if !errors.As(err, &v) || v.Kind != workspace.KindOutside {
		return nil, nil
	}
	req, _ := ctx.Value(requestKey{}).(*mcp.CallToolRequest)
	if req == nil || req.Session == nil || req.Params == nil {
		return nil, nil
	}
	if ip := req.Session.InitializeParams(); ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return nil, nil
	}
	path := v.Resolved
	if path == "" {
		path = v.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(s.fs.Workspace(), path)
		}
	}
	real, e := filepath.EvalSymlinks(filepath.Clean(path))
	if e != nil {
		return nil, nil
	}
	s.deciderOnce.Do(func() { s.decider = s.p.Decider(s.opts.Plan.Home) })
	d := s.decider.DecideHost(policy.OpRead, real)
	sess := &ask.Session{Never: s.never()}
	if !sess.Askable(ask.Question{Kind: ask.FileRead, Path: real, Program: "mcp read_file", Rule: d.Rule, Decision: d}) {
		return nil, nil
	}
	// An answer counts only to a question this server asked, for this
	// path, once.
	s.askMu.Lock()
	var answer *mcp.ElicitResult
	for id, r := range req.Params.InputResponses {
		if s.asked[id] == real {
			delete(s.asked, id)
			answer, _ = r.(*mcp.ElicitResult)
			break
		}
	}
	if answer == nil {
		var b [12]byte
		_, _ = rand.Read(b[:])
		id := "cordon-read-" + hex.EncodeToString(b[:])
		if s.asked == nil {
			s.asked = map[string]string{}
		}
		if len(s.asked) >= maxAsked {
			clear(s.asked)
		}
		s.asked[id] = real
		s.askMu.Unlock()
		return nil, &needInput{res: &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{id: &mcp.ElicitParams{
			Mode:            "form",
			Message:         fmt.Sprintf("cordon: allow the agent to read %s once? It is outside the sandbox's policy (%s).", real, d.Rule),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
		}}}}
	}
	s.askMu.Unlock()
	rule, action := "asked: deny", audit.ActionDenied
	if answer.Action == "accept" {
		rule, action = "asked: once", audit.ActionAllowed
	}
	_ = s.opts.Audit.Record(audit.Record{SessionID: s.opts.SessionID, Command: "mcp " + ToolReadFile, Operation: string(ask.FileRead),
		Path: real, Action: action, Rule: rule, Mode: string(s.p.Mode)})
	if action != audit.ActionAllowed {
		return nil, nil
	}
	// Read as any other file, through a file API with its directory as
	// one more root: walked by descriptor, the deny rules still applied.
	one, e := workspace.New(s.p, append(workspace.PolicyRoots(s.p), workspace.Root{Path: filepath.Dir(real)})...)
	if e != nil {
		return nil, nil
	}
	r, e := one.ReadText(real, in.StartLine, in.EndLine)
	if e != nil {
		return nil, nil
	}
	return r, nil
}

// maxAsked bounds the questions a server keeps waiting for their answer.
const maxAsked = 64

// never are the trees no question is asked about: cordon's state and
// every workspace's sandbox cache (its config is readable, never
// writable).
func (s *Server) never() []string {
	var out []string
	if s.opts.Plan.StateDir != "" {
		out = append(out, s.opts.Plan.StateDir)
	}
	if s.p.SandboxCache != "" {
		out = append(out, filepath.Dir(filepath.Dir(s.p.SandboxCache)))
	}
	return out
}
