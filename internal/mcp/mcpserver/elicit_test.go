// Elicitation's code is the same on Windows; under Wine in CI this test's
// temporary home could not be removed ("Invalid function" on .config), so
// it runs on Linux and macOS only.

//go:build !windows

package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/testenv"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestElicitRead: read_file of a file outside every root asks the person
// behind a client that declared elicitation (the Go SDK's client with an
// elicitation handler): accept reads it once, decline leaves today's
// refusal; a client without elicitation gets the refusal unasked; a
// secret (~/.ssh) and cordon's own state are never asked about. Each
// answer is an audit record.
func TestElicitRead(t *testing.T) {
	h := testenv.FakeHome(t)
	notes := filepath.Join(h.Dir, "notes.txt")
	key := filepath.Join(h.Dir, ".ssh", "id_rsa")
	state := filepath.Join(h.Dir, ".local", "state", "cordon")
	for p, c := range map[string]string{notes: "NOTE-LINE-4e2\n", key: "KEY-9\n", filepath.Join(state, "x.txt"): "STATE\n"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	host := policy.Host{Home: h.Dir, Cwd: h.Workspace, Getenv: func(string) (string, bool) { return "", false }}
	fl := config.NewFlags()
	p, err := policy.Load(policy.Options{Host: host, Workspace: h.Workspace, Flags: fl, SkipUserConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(state, "audit.jsonl")
	lg, err := audit.Open(auditPath, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	opts := Options{Policy: p, Audit: lg, SessionID: "elicit", Version: "test", Plan: plan.Options{Home: h.Dir, StateDir: state}}
	var asked atomic.Int32
	var answer atomic.Value
	client := func(elicit bool) *mcp.ClientSession {
		srv, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		st, ct := mcp.NewInMemoryTransports()
		go func() { _ = srv.Run(ctx, st) }()
		var co *mcp.ClientOptions
		if elicit {
			co = &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				if !strings.Contains(req.Params.Message, notes) {
					t.Errorf("elicitation message %q does not name %s", req.Params.Message, notes)
				}
				return &mcp.ElicitResult{Action: answer.Load().(string)}, nil
			}}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, co).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	withElicit, without := client(true), client(false)
	for _, tc := range []struct {
		name  string
		cs    *mcp.ClientSession
		path  string
		reply string
		asked bool
		read  bool
	}{
		{"accept", withElicit, notes, "accept", true, true},
		{"decline", withElicit, notes, "decline", true, false},
		{"cancel", withElicit, notes, "cancel", true, false},
		{"no elicitation", without, notes, "accept", false, false},
		{"secret", withElicit, key, "accept", false, false},
		{"cordon's state", withElicit, filepath.Join(state, "x.txt"), "accept", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer.Store(tc.reply)
			n := asked.Load()
			out, isErr := callTool(t, tc.cs, ToolReadFile, map[string]any{"path": tc.path})
			if got := asked.Load() > n; got != tc.asked {
				t.Errorf("asked %v, want %v", got, tc.asked)
			}
			if tc.read {
				if isErr || !strings.Contains(out, "NOTE-LINE-4e2") || !strings.HasPrefix(out, "1:") {
					t.Errorf("read_file = %q (error %v), want the file's anchored lines", out, isErr)
				}
				return
			}
			if !isErr || !strings.HasPrefix(out, "sandbox violation:") || strings.Contains(out, "KEY-9") || strings.Contains(out, "STATE") {
				t.Errorf("read_file = %q (error %v), want the structured refusal", out, isErr)
			}
		})
	}
	t.Run("forged answer", func(t *testing.T) {
		// An answer to no question this server asked is not one.
		answer.Store("decline")
		res, err := withElicit.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolReadFile, Arguments: map[string]any{"path": notes},
			InputResponses: mcp.InputResponseMap{"cordon-read-000000000000000000000000": &mcp.ElicitResult{Action: "accept"}}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			t.Errorf("a forged accept read the file: %+v", res.Content)
		}
	})
	recs, _, _ := audit.Read(auditPath, audit.Filter{})
	var rules []string
	for _, r := range recs {
		if (r.Path == notes || r.Path == filepath.ToSlash(notes)) && strings.HasPrefix(r.Rule, "asked: ") {
			rules = append(rules, r.Action+" "+r.Rule)
		}
	}
	if want := "allowed asked: once,denied asked: deny,denied asked: deny,denied asked: deny"; strings.Join(rules, ",") != want {
		t.Errorf("audit records of the answers %q, want %q", rules, want)
	}
}
