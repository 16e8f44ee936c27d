package mcpserver

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cordon-sandbox/cordon/internal/ask"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inputRequestsVersion is the first MCP protocol version on which a
// server sends no request of its own (elicitation/create) while it
// serves a call: it returns input requests in the call's result instead
// (multi round-trip requests), for which a running command cannot wait.
const inputRequestsVersion = "2026-07-28"

// netAsk is run_command's asker for the network proxy
// (launch.Stdio.NetAsk): a connection of the command to a target no rule
// names is held while the person behind the client is asked through
// elicitation, as cordon run --ask asks at the terminal (ask.Session:
// allow once, for this workspace, deny; deny on timeout; every answer
// an audit record of command). A "for this workspace" answer is saved in
// the user config, and holds for the rest of this server's commands. It
// is nil, and the proxy refuses as without asking, when the client did
// not declare elicitation or is of the input-request style (protocol
// inputRequestsVersion and later), whose person a running command cannot
// ask. warn says what went wrong saving or recording an answer.
func (s *Server) netAsk(ctx context.Context, command string, warn func(string)) func(context.Context, string, int) bool {
	req := elicitRequest(ctx)
	if req == nil || s.p.Mode == policy.ModeOff {
		return nil
	}
	if req.Session.InitializeParams().ProtocolVersion >= inputRequestsVersion {
		return nil
	}
	pr := &elicitPrompter{ss: req.Session}
	sess := &ask.Session{Prompter: pr, ConfigPath: s.userConfig(), Workspace: s.p.Workspace, Writable: s.p.HostWrites(),
		Audit: s.opts.Audit.Record, SessionID: s.opts.SessionID, Command: command, Mode: string(s.p.Mode), Warn: warn, Never: s.never()}
	var mu sync.Mutex // one question at a time, its key read after it
	return func(ctx context.Context, host string, port int) bool {
		target := net.JoinHostPort(host, strconv.Itoa(port))
		s.askMu.Lock()
		saved := s.netSaved[target]
		s.askMu.Unlock()
		if saved {
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		pr.key = 0
		ok := sess.Ask(ctx, ask.Question{Kind: ask.Net, Host: host, Port: port, Rule: netrule.RuleNoAllow})
		if ok && pr.key == 'w' {
			s.askMu.Lock()
			if s.netSaved == nil {
				s.netSaved = map[string]bool{}
			}
			s.netSaved[target] = true
			s.askMu.Unlock()
		}
		return ok
	}
}

// elicitPrompter is an ask.Prompter that asks through elicitation/create
// while a tool call is served: the question's line, and a choice of the
// answers its keys offer (o: once, w: for this workspace, d: deny).
type elicitPrompter struct {
	ss *mcp.ServerSession
	// key is the last answer's key (netAsk reads it after each question).
	key byte
}

// answers are the choices of a question, by key.
var answers = []struct {
	key         byte
	value, text string
}{
	{'o', "once", "Allow once"},
	{'w', "workspace", "Allow for this workspace (saved in cordon's user config)"},
	{'d', "deny", "Deny"},
}

// Prompt implements ask.Prompter: an accept with the choice "once" (or
// no choice: a client that shows no form) is 'o', "workspace" is 'w',
// "deny" and a decline are 'd'; a cancel, an error and no answer within
// timeout are no answer (deny).
func (p *elicitPrompter) Prompt(ctx context.Context, line, keys string, timeout time.Duration) (byte, bool) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The terminal's line without its keys: "cordon: allow network
	// connection to HOST:PORT?".
	msg := strings.TrimSpace(line)
	if q, _, ok := strings.Cut(msg, "? ["); ok {
		msg = q + "?"
	}
	msg += " The command run_command runs waits for your answer (deny in " + timeout.Round(time.Second).String() + ")."
	var choices []any
	for _, a := range answers {
		if strings.IndexByte(keys, a.key) >= 0 {
			choices = append(choices, map[string]any{"const": a.value, "title": a.text})
		}
	}
	res, err := p.ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: map[string]any{
		"type":       "object",
		"properties": map[string]any{"answer": map[string]any{"type": "string", "title": "Answer", "oneOf": choices}},
	}})
	switch {
	case err != nil || res == nil:
		return 0, false
	case res.Action == "decline" && strings.IndexByte(keys, 'd') >= 0:
		p.key = 'd'
		return 'd', true
	case res.Action != "accept":
		return 0, false // cancel: no answer
	}
	v, _ := res.Content["answer"].(string)
	if v == "" {
		v = "once"
	}
	for _, a := range answers {
		if a.value == v && strings.IndexByte(keys, a.key) >= 0 {
			p.key = a.key
			return a.key, true
		}
	}
	return 0, false
}
