//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpAsker is an MCP client of a cordon-mcp of its own, the person behind
// it answering each elicitation with answer.
type mcpAsker struct {
	cs     *mcp.ClientSession
	mu     sync.Mutex
	answer *mcp.ElicitResult
	asked  []string
}

// startMCPAsker starts bin (a cordon-mcp) with args in e's workspace and
// connects a Go SDK client to it: with an elicitation handler when elicit,
// of protocol version (the SDK's latest, of input requests, when "").
func startMCPAsker(t *testing.T, e *sandboxEnv, bin string, elicit bool, version string, args ...string) *mcpAsker {
	t.Helper()
	a := &mcpAsker{}
	var co *mcp.ClientOptions
	if elicit {
		co = &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.asked = append(a.asked, req.Params.Message)
			return a.answer, nil
		}}
	}
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Dir, cmd.Env = e.ws, e.environ()
	stderr := &lockedBuf{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ask-test", Version: "1"}, co).Connect(ctx, &mcp.CommandTransport{Command: cmd}, so)
	if err != nil {
		// Its stderr says why it ended (the copy ends with it: waited
		// for, bounded).
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
		}
		t.Fatalf("starting cordon mcp: %v\nits stderr: %s", err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	a.cs = cs
	return a
}

// run runs argv with run_command, answering a question with answer, and
// returns the result's text and the questions asked.
func (a *mcpAsker) run(t *testing.T, answer *mcp.ElicitResult, argv ...string) (string, []string) {
	t.Helper()
	a.mu.Lock()
	a.answer, a.asked = answer, nil
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"argv": argv}})
	if err != nil {
		t.Fatalf("run_command %q: %v", argv, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return b.String(), a.asked
}

// TestAskMCPNetwork: cordon mcp's run_command, under a filtered network,
// holds a connection of the command to a host no rule names (name.test,
// the test's server on 127.0.0.1, by a hosts file of its own) while it
// asks the person behind a client that declared elicitation (the Go
// SDK's, of a protocol version that takes elicitation/create during a
// call): "once" lets it through, "deny", decline and cancel refuse it as
// without asking (a later command is asked again), "workspace" lets it
// through and saves it in the user config (the server's later commands,
// and a new server's, go through unasked). Each answer is an audit
// record. A deny entry and a private address are never asked about; a
// client without elicitation, and one of the input-request style (which
// a running command cannot wait for), get the refusal unasked. On
// bubblewrap and the Landlock-only backend.
func TestAskMCPNetwork(t *testing.T) {
	t.Parallel()
	eachBackend(t, testAskMCPNetwork)
}

func testAskMCPNetwork(t *testing.T, e *sandboxEnv, backend string) {
	testenv.Tool(t, "curl", "apt-get install -y curl")
	bin := withHosts(e, "127.0.0.1 name.test denied.test\n", mcpName)
	ln := testenv.Listen(t)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, askBody)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	url := fmt.Sprintf("http://name.test:%d/", port)
	target := fmt.Sprintf("name.test:%d", port)
	flags := []string{"--backend", backend, "--allow-net", fmt.Sprintf("127.0.0.1:%d", port), "--deny-net", "denied.test"}
	userConfig := filepath.Join(e.home, ".config", "cordon", "config.yaml")
	writeFile(t, userConfig, "# my settings\nsandbox:\n  audit:\n    enabled: true  # keep\n")
	a := &askEnv{sandboxEnv: e}
	curl := []string{"curl", "-fsS", url}
	refused := "network: refused " + target + " (no allow rule)"

	asker := startMCPAsker(t, e, bin, true, "2025-11-25", flags...)
	choose := func(action, answer string) *mcp.ElicitResult {
		r := &mcp.ElicitResult{Action: action}
		if answer != "" {
			r.Content = map[string]any{"answer": answer}
		}
		return r
	}
	t.Run("never asked", func(t *testing.T) {
		for _, host := range []string{"denied.test", "10.1.2.3"} {
			out, asked := asker.run(t, choose("accept", "once"), "curl", "-fsS", fmt.Sprintf("http://%s:%d/", host, port))
			if len(asked) != 0 || strings.Contains(out, askBody) || !strings.Contains(out, "network: refused "+host) {
				t.Errorf("%s: %q, asked %q; want the refusal unasked", host, out, asked)
			}
		}
	})
	t.Run("clients that cannot be asked", func(t *testing.T) {
		for name, c := range map[string]*mcpAsker{
			"no elicitation": startMCPAsker(t, e, bin, false, "2025-11-25", flags...),
			"input requests": startMCPAsker(t, e, bin, true, "", flags...),
		} {
			before := len(a.audited("name.test"))
			out, asked := c.run(t, choose("accept", "once"), curl...)
			if len(asked) != 0 || strings.Contains(out, askBody) || !strings.Contains(out, refused) {
				t.Errorf("%s: %q, asked %q; want the refusal unasked", name, out, asked)
			}
			for _, r := range a.audited("name.test")[before:] {
				if strings.HasPrefix(r.Rule, "asked: ") {
					t.Errorf("%s: audit record of an answer %+v, but nobody was asked", name, r)
				}
			}
		}
	})
	for _, tc := range []struct {
		name   string
		answer *mcp.ElicitResult
		ok     bool
		rule   string
	}{
		{"once", choose("accept", "once"), true, "asked: once"},
		{"deny", choose("accept", "deny"), false, "asked: deny"},
		{"decline", choose("decline", ""), false, "asked: deny"},
		{"cancel", choose("cancel", ""), false, "asked: no answer"},
		{"workspace", choose("accept", "workspace"), true, "asked: for this workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(a.audited("name.test"))
			out, asked := asker.run(t, tc.answer, curl...)
			if len(asked) != 1 || !strings.Contains(asked[0], "cordon: allow network connection to "+target+"?") {
				t.Errorf("questions %q, want one about %s", asked, target)
			}
			if got := strings.Contains(out, askBody); got != tc.ok || strings.HasPrefix(out, "exit code: 0\n") != tc.ok {
				t.Errorf("run_command = %q; want it through: %v", out, tc.ok)
			}
			if !tc.ok && !strings.Contains(out, refused) {
				t.Errorf("run_command = %q; want the line %q", out, refused)
			}
			recs := a.audited("name.test")[before:]
			if len(recs) == 0 || recs[0].Rule != tc.rule || recs[0].Port != port || recs[0].Operation != "network-connect" ||
				!strings.HasPrefix(recs[0].Command, "mcp run_command: curl") {
				t.Errorf("audit records %+v, want first with rule %q", recs, tc.rule)
			}
			cfg := readFile(t, userConfig)
			if saved := strings.Contains(cfg, target); saved != (tc.name == "workspace") {
				t.Errorf("user config holds %s: %v:\n%s", target, saved, cfg)
			}
		})
	}
	t.Run("saved", func(t *testing.T) {
		cfg := readFile(t, userConfig)
		for _, want := range []string{"# my settings", "enabled: true # keep", e.ws + ":"} {
			if !strings.Contains(cfg, want) {
				t.Errorf("user config lost or lacks %q:\n%s", want, cfg)
			}
		}
		if out, asked := asker.run(t, choose("accept", "deny"), curl...); len(asked) != 0 || !strings.Contains(out, askBody) {
			t.Errorf("the same server, after a workspace answer: %q, asked %q; want it through unasked", out, asked)
		}
		fresh := startMCPAsker(t, e, bin, false, "", flags...)
		if out, _ := fresh.run(t, nil, curl...); !strings.Contains(out, askBody) {
			t.Errorf("a new server, after a workspace answer: %q; want it through", out)
		}
	})
	t.Run("not saved inside a writable root", func(t *testing.T) {
		// A user config in the workspace (XDG_CONFIG_HOME there) is not
		// written: the answer holds for this server, and the result says
		// so in one warning line. On bubblewrap: the Landlock-only backend
		// refuses to run with cordon's config in a writable root.
		if backend != "bwrap" {
			return
		}
		extra := e.extra
		e.extra = append(slices.Clone(extra), "XDG_CONFIG_HOME="+filepath.Join(e.ws, ".cfg"))
		c := startMCPAsker(t, e, bin, true, "2025-11-25", flags...)
		e.extra = extra
		out, asked := c.run(t, choose("accept", "workspace"), curl...)
		if len(asked) != 1 || !strings.Contains(out, askBody) || strings.Count(out, "warning: the answer for "+target+" was not saved") != 1 {
			t.Errorf("run_command = %q, asked %q; want it through with one warning line", out, asked)
		}
		if _, err := os.Stat(filepath.Join(e.ws, ".cfg", "cordon", "config.yaml")); err == nil {
			t.Errorf("a user config inside the workspace was written")
		}
		if out, asked := c.run(t, choose("accept", "deny"), curl...); len(asked) != 0 || !strings.Contains(out, askBody) {
			t.Errorf("the same server again: %q, asked %q; want it through unasked", out, asked)
		}
	})
}
