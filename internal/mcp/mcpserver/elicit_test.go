// Elicitation's code is the same on Windows; under Wine in CI this test's
// temporary home could not be removed ("Invalid function" on .config), so
// it runs on Linux and macOS only.

//go:build !windows

package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/testenv"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// elicitClient is a client of a server of its own under opts: with an
// elicitation handler that answers what answer holds and records each
// question (nil answer: no elicitation capability), of the protocol
// version given ("" for the SDK's latest, the input-request style).
type elicitClient struct {
	cs *mcp.ClientSession
	mu sync.Mutex
	// answer is the next answer's action ("accept", "decline", "cancel")
	// and, for a choice, its content.
	answer  *mcp.ElicitResult
	asked   []string // the questions' messages
	answers bool     // the client declared elicitation
}

func newElicitClient(t *testing.T, opts Options, elicit bool, version string) *elicitClient {
	t.Helper()
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = srv.Run(ctx, st) }()
	c := &elicitClient{answers: elicit}
	var co *mcp.ClientOptions
	if elicit {
		co = &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.asked = append(c.asked, req.Params.Message)
			return c.answer, nil
		}}
	}
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, co).Connect(ctx, ct, so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

// call calls tool with args, c answering a question with action, and
// returns the result's text, whether it is an error and the questions
// asked.
func (c *elicitClient) call(t *testing.T, tool string, args map[string]any, action string) (string, bool, []string) {
	t.Helper()
	c.mu.Lock()
	c.answer, c.asked = &mcp.ElicitResult{Action: action}, nil
	c.mu.Unlock()
	out, isErr := callTool(t, c.cs, tool, args)
	c.mu.Lock()
	defer c.mu.Unlock()
	return out, isErr, c.asked
}

// TestElicitFiles: every file tool that the policy refuses a path for
// lying outside every root (a write: or in a read-only one) asks the
// person behind a client that declared elicitation (the Go SDK's client,
// of the input-request style and of an earlier protocol version, which
// the server asks with elicitation/create): accept serves that one call
// through the file API, decline and cancel leave today's refusal and
// change nothing; a client without elicitation gets the refusal unasked.
// A secret (~/.ssh), cordon's own config and state, a protected path
// (~/.bashrc, also through a link planted beside the asked path), a git
// directory's config, a deny_write path, a dangling link on the way and
// a search of a tree holding cordon's state are never asked about. Each
// answer is an audit record of its tool, operation and path.
func TestElicitFiles(t *testing.T) {
	h := testenv.FakeHome(t)
	home := h.Dir
	at := func(rel string) string { return filepath.Join(home, rel) }
	// cordon's state where a search of its parent would be askable but
	// for it (XDG_STATE_HOME=~/appstate).
	state := at("appstate/cordon")
	for rel, c := range map[string]string{
		"notes.txt": "NOTE-LINE-4e2\n", "info.txt": "INFO\n", "list/one.txt": "ONE\n", "find/sub/two.txt": "TWO\n",
		"grep/three.txt": "GREP-THREE-81\n", "edit.txt": "EDIT-OLD-3a\n", "lines.txt": "LINE-A\nLINE-B\n",
		".ssh/id_rsa": "KEY-9\n", "appstate/cordon/x.txt": "STATE\n", "appstate/other.txt": "OTHER\n", ".config/cordon/config.yaml": "sandbox: {}\n",
		".bashrc": "RC-ORIGINAL\n", "repo/.git/HEAD": "ref: refs/heads/main\n", "repo/.git/config": "[core]\n",
		".local/bin/tool": "#!/bin/sh\n",
	} {
		if err := os.MkdirAll(filepath.Dir(at(rel)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(at(rel), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// made and dirs exist: a new path directly in the home is never
	// asked about (no --allow-write would name the home).
	for _, d := range []string{"repo/.git/objects", "planted", "made", "dirs", "ro"} {
		if err := os.MkdirAll(at(d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"planted/rc": at(".bashrc"), "planted/gone": at("nowhere")} {
		if err := os.Symlink(target, at(link)); err != nil {
			t.Fatal(err)
		}
	}
	host := policy.Host{Home: home, Cwd: h.Workspace, Getenv: func(string) (string, bool) { return "", false }}
	// ~/ro is a read-only root (--allow-read): a write there is asked
	// about too.
	fl := config.NewFlags()
	fl.Filesystem.Read = []string{at("ro")}
	p, err := policy.Load(policy.Options{Host: host, Workspace: h.Workspace, Flags: fl, SkipUserConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	// With audit.log_allowed, a call served after an answer has the
	// answer's record only.
	p.Audit.LogAllowed = true
	auditPath := filepath.Join(state, "audit.jsonl")
	lg, err := audit.Open(auditPath, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	opts := Options{Policy: p, Audit: lg, SessionID: "elicit", Version: "test", Plan: plan.Options{Home: home, StateDir: state}}
	clients := map[string]*elicitClient{
		"input requests": newElicitClient(t, opts, true, ""),
		"elicitation":    newElicitClient(t, opts, true, "2025-11-25"),
		"no elicitation": newElicitClient(t, opts, false, ""),
	}
	read := func(rel string) string { b, _ := os.ReadFile(at(rel)); return string(b) }
	exists := func(rel string) bool { _, err := os.Lstat(at(rel)); return err == nil }
	anchor := regexp.MustCompile(`(?m)^2:[0-9a-f]+`)
	lineAnchor := func(t *testing.T) string {
		// The anchor of lines.txt's line 2, as read_file (asked, allowed)
		// gives it.
		out, isErr, _ := clients["input requests"].call(t, ToolReadFile, map[string]any{"path": at("lines.txt")}, "accept")
		a := anchor.FindString(out)
		if isErr || a == "" {
			t.Fatalf("read_file lines.txt = %q", out)
		}
		return a
	}

	type tool struct {
		name string
		path string // the path asked about
		args func(t *testing.T) map[string]any
		op   string
		// served says the call's result (after accept) or the host (for a
		// write) shows it was served; for a refused write, that it was not.
		served func(out string) bool
	}
	tools := []tool{
		{ToolReadFile, at("notes.txt"), func(*testing.T) map[string]any { return map[string]any{"path": at("notes.txt")} }, "file-read",
			func(out string) bool { return strings.HasPrefix(out, "1:") && strings.Contains(out, "NOTE-LINE-4e2") }},
		{ToolFileInfo, at("info.txt"), func(*testing.T) map[string]any { return map[string]any{"path": at("info.txt")} }, "file-read",
			func(out string) bool { return strings.Contains(out, `"size":5`) }},
		{ToolListDir, at("list"), func(*testing.T) map[string]any { return map[string]any{"path": at("list")} }, "file-read",
			func(out string) bool { return strings.Contains(out, "one.txt") }},
		{ToolFindFiles, at("find"), func(*testing.T) map[string]any { return map[string]any{"path": at("find"), "pattern": "**/*.txt"} }, "file-read",
			func(out string) bool { return strings.Contains(out, at("find/sub/two.txt")) }},
		{ToolGrep, at("grep"), func(*testing.T) map[string]any { return map[string]any{"path": at("grep"), "pattern": "GREP-THREE"} }, "file-read",
			func(out string) bool { return strings.Contains(out, "GREP-THREE-81") }},
		{ToolWriteFile, at("made/new/w.txt"), func(*testing.T) map[string]any {
			return map[string]any{"path": at("made/new/w.txt"), "content": "WRITTEN-5c\n"}
		}, "file-write", func(string) bool { return read("made/new/w.txt") == "WRITTEN-5c\n" }},
		{ToolWriteFile, at("ro/w.txt"), func(*testing.T) map[string]any {
			return map[string]any{"path": at("ro/w.txt"), "content": "READ-ONLY-ROOT\n"}
		}, "file-write", func(string) bool { return read("ro/w.txt") == "READ-ONLY-ROOT\n" }},
		{ToolEditFile, at("edit.txt"), func(*testing.T) map[string]any {
			return map[string]any{"path": at("edit.txt"), "old_string": "EDIT-OLD-3a", "new_string": "EDIT-NEW-3a"}
		}, "file-write", func(string) bool { return read("edit.txt") == "EDIT-NEW-3a\n" }},
		{ToolReplaceLines, at("lines.txt"), func(t *testing.T) map[string]any {
			return map[string]any{"path": at("lines.txt"), "start_anchor": lineAnchor(t), "new_text": "LINE-NEW"}
		}, "file-write", func(string) bool { return read("lines.txt") == "LINE-A\nLINE-NEW\n" }},
		{ToolCreateDir, at("dirs/a/b"), func(*testing.T) map[string]any { return map[string]any{"path": at("dirs/a/b")} }, "file-write",
			func(string) bool { return exists("dirs/a/b") }},
	}
	lastRecord := func(path string) *audit.Record {
		recs, _, _ := audit.Read(auditPath, audit.Filter{})
		for i := len(recs) - 1; i >= 0; i-- {
			if (recs[i].Path == path || recs[i].Path == filepath.ToSlash(path)) && strings.HasPrefix(recs[i].Rule, "asked: ") {
				return &recs[i]
			}
		}
		return nil
	}
	for _, tl := range tools {
		// The refusals first, so that a write's effect is the accept's.
		for _, tc := range []struct{ client, action string }{
			{"no elicitation", "accept"}, {"input requests", "decline"}, {"input requests", "cancel"},
			{"elicitation", "decline"}, {"elicitation", "accept"}, {"input requests", "accept"},
		} {
			if tc.client == "elicitation" && tc.action == "accept" && tl.op == "file-write" {
				continue // a write is served once, by the next case
			}
			t.Run(tl.name+"/"+tc.client+"/"+tc.action, func(t *testing.T) {
				c := clients[tc.client]
				out, isErr, asked := c.call(t, tl.name, tl.args(t), tc.action)
				wantAsked := c.answers
				if got := len(asked) > 0; got != wantAsked {
					t.Fatalf("asked %q, want a question: %v", asked, wantAsked)
				}
				if wantAsked && (len(asked) != 1 || !strings.Contains(asked[0], tl.path) || !strings.Contains(asked[0], tl.name)) {
					t.Errorf("questions %q, want one naming %s and %s", asked, tl.path, tl.name)
				}
				served := tl.served(out)
				if tc.action == "accept" && c.answers {
					if isErr || !served {
						t.Errorf("%s = %q (error %v), want it served", tl.name, out, isErr)
					}
				} else if !isErr || !strings.HasPrefix(out, "sandbox violation:") || served {
					t.Errorf("%s = %q (error %v, served %v), want the structured refusal", tl.name, out, isErr, served)
				}
				if !wantAsked {
					return
				}
				rule, action := "asked: deny", "denied"
				if tc.action == "accept" {
					rule, action = "asked: once", "allowed"
				}
				recs, _, _ := audit.Read(auditPath, audit.Filter{})
				for _, r := range recs {
					if r.Path == tl.path && r.Action == "allowed" && !strings.HasPrefix(r.Rule, "asked: ") {
						t.Errorf("an allowed record of an asked path with the rule that refused it: %+v", r)
					}
				}
				if r := lastRecord(tl.path); r == nil || r.Rule != rule || r.Action != action || r.Operation != tl.op || r.Command != "mcp "+tl.name {
					t.Errorf("last audit record of the answer %+v, want %s %s %s by mcp %s", r, tl.op, action, rule, tl.name)
				}
			})
		}
	}

	// Never asked, whatever the answer would be; nothing is read or
	// written.
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
	}{
		{"secret", ToolReadFile, map[string]any{"path": at(".ssh/id_rsa")}},
		{"cordon's state", ToolReadFile, map[string]any{"path": filepath.Join(state, "x.txt")}},
		{"cordon's config written", ToolWriteFile, map[string]any{"path": at(".config/cordon/config.yaml"), "content": "sandbox: {mode: off}\n"}},
		{"protected", ToolWriteFile, map[string]any{"path": at(".bashrc"), "content": "PLANTED\n"}},
		{"protected through a planted link", ToolWriteFile, map[string]any{"path": at("planted/rc"), "content": "PLANTED\n"}},
		{"edit protected through a planted link", ToolEditFile, map[string]any{"path": at("planted/rc"), "old_string": "RC-ORIGINAL", "new_string": "PLANTED"}},
		{"dangling link on the way", ToolWriteFile, map[string]any{"path": at("planted/gone/x.txt"), "content": "PLANTED\n"}},
		{"git directory config", ToolWriteFile, map[string]any{"path": at("repo/.git/config"), "content": "[core]\n\thooksPath = /tmp\n"}},
		{"git hooks", ToolCreateDir, map[string]any{"path": at("repo/.git/hooks")}},
		{"deny_write", ToolWriteFile, map[string]any{"path": at(".local/bin/tool"), "content": "PLANTED\n"}},
		{"search of a tree with cordon's state", ToolGrep, map[string]any{"path": filepath.Dir(state), "pattern": "STATE"}},
		{"find in a tree with cordon's state", ToolFindFiles, map[string]any{"path": filepath.Dir(state), "pattern": "**"}},
		{"search of the home", ToolGrep, map[string]any{"path": home, "pattern": "NOTE"}},
	} {
		t.Run("never/"+tc.name, func(t *testing.T) {
			for _, cl := range []string{"input requests", "elicitation"} {
				out, isErr, asked := clients[cl].call(t, tc.tool, tc.args, "accept")
				if len(asked) > 0 || !isErr || !strings.HasPrefix(out, "sandbox violation:") || strings.Contains(out, "KEY-9") || strings.Contains(out, "STATE\n") {
					t.Errorf("%s (%s) = %q (error %v), asked %q; want the refusal unasked", tc.tool, cl, out, isErr, asked)
				}
			}
		})
	}
	if read(".bashrc") != "RC-ORIGINAL\n" || read(".config/cordon/config.yaml") != "sandbox: {}\n" || read("repo/.git/config") != "[core]\n" ||
		read(".local/bin/tool") != "#!/bin/sh\n" || exists("nowhere") || exists("repo/.git/hooks") {
		t.Errorf("a refused write changed the host")
	}

	t.Run("read-only workspace", func(t *testing.T) {
		// The minimal profile's workspace is read-only: a write there,
		// accepted, is served with the workspace as its root.
		fl := config.NewFlags()
		fl.Profile = config.Ptr("minimal")
		mp, err := policy.Load(policy.Options{Host: host, Workspace: h.Workspace, Flags: fl, SkipUserConfig: true})
		if err != nil {
			t.Fatal(err)
		}
		mo := opts
		mo.Policy = mp
		c := newElicitClient(t, mo, true, "")
		path := filepath.Join(h.Workspace, "new.txt")
		out, isErr, asked := c.call(t, ToolWriteFile, map[string]any{"path": "new.txt", "content": "MINIMAL\n"}, "accept")
		if b, _ := os.ReadFile(path); isErr || len(asked) != 1 || !strings.Contains(asked[0], path) || string(b) != "MINIMAL\n" {
			t.Errorf("write_file new.txt = %q (error %v), asked %q, file %q; want it asked and written", out, isErr, asked, b)
		}
	})
	t.Run("forged answer", func(t *testing.T) {
		// An answer to no question this server asked is not one, nor one
		// to a question about another tool or path.
		c := clients["input requests"]
		c.mu.Lock()
		c.answer = &mcp.ElicitResult{Action: "decline"}
		c.mu.Unlock()
		for _, id := range []string{"cordon-file-000000000000000000000000", "cordon-read-000000000000000000000000"} {
			res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolReadFile, Arguments: map[string]any{"path": at("notes.txt")},
				InputResponses: mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept"}}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError {
				t.Errorf("a forged accept read the file: %+v", res.Content)
			}
		}
	})
}
