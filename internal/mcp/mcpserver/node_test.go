//go:build unix

package mcpserver

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testenv"
	"github.com/cordon-sandbox/cordon/workspace"
)

// needTool skips the test when a program is missing, unless CI=true, where
// a missing program fails it.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testenv.SkipOrFail(t, "%s not found: skipping the real MCP client test (install Node.js and npm to run it)", name)
	}
	return p
}

// TestNodeClient drives `cordon mcp` as a subprocess with the official MCP
// TypeScript SDK client (@modelcontextprotocol/sdk, testdata/client).
func TestNodeClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cordon and runs npm: skipped with -short")
	}
	node := needTool(t, "node")
	npm := needTool(t, "npm")
	clientDir, err := filepath.Abs(filepath.Join("testdata", "client"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(clientDir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
		cmd.Dir = clientDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", clientDir, err, out)
		}
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin := cordonBinary(t)
	home := filepath.Join(base, "home")
	ws := filepath.Join(home, "proj")
	if err := os.MkdirAll(filepath.Join(base, "outside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{"a.txt": "alpha\nbeta\ngamma\n", ".env": "TOKEN=secret\n", "x.bin": "x\x00y",
		".gitignore": "build/\n", "build/a.o": "obj\n", "src/b.o": "obj\n", "src/.gitignore": "*.o\n!keep.o\n", "src/keep.o": "obj\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "outside"), []byte("home secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A repository nested in the workspace, whose configuration the
	// client tries to write.
	nestedRepo(t, filepath.Join(ws, "sub"), home)
	nestedConfig, err := os.ReadFile(filepath.Join(ws, "sub", ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	// A large read goes out through StreamTransport's fast path.
	var big, bigWant strings.Builder
	for i := 1; i <= 2000; i++ {
		line := fmt.Sprintf("line %d: <tag> & \"quotes\" \\ tab\t é \u2028 %d", i, i*i)
		big.WriteString(line + "\n")
		fmt.Fprintf(&bigWant, "%d:%s|%s\n", i, workspace.LineHash(line), line)
	}
	if err := os.WriteFile(filepath.Join(ws, "big.dat"), []byte(big.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(node, filepath.Join(clientDir, "client.mjs"), bin, ws)
	cmd.Dir = ws
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state")}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	timer := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client: %v\nstderr:\n%s", err, stderr.String())
	}
	var got struct {
		Server struct{ Name string }
		Tools  []struct {
			Name        string
			Description string
			InputSchema map[string]any
		}
		Calls []struct {
			Label, Name, Text string
			IsError           bool
		}
		MalformedReply string
		ClientErrors   []string
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("client output is not JSON: %v\n%s\nstderr:\n%s", err, stdout, stderr.String())
	}
	if got.Server.Name != "cordon" {
		t.Errorf("server name %q", got.Server.Name)
	}
	names := map[string]bool{}
	for _, tl := range got.Tools {
		names[tl.Name] = true
		if !strings.Contains(tl.Description, "Sandbox:") || tl.InputSchema["type"] != "object" {
			t.Errorf("tool %s: description %q schema %v", tl.Name, tl.Description, tl.InputSchema)
		}
	}
	called := map[string]bool{}
	for _, n := range ToolNames {
		if !names[n] {
			t.Errorf("tool %s not listed", n)
		}
	}
	calls := map[string]struct {
		text    string
		isError bool
	}{}
	for _, c := range got.Calls {
		called[c.Name] = true
		calls[c.Label] = struct {
			text    string
			isError bool
		}{c.Text, c.IsError}
		t.Logf("%-22s isError=%-5v %q", c.Label, c.IsError, c.Text)
	}
	for _, n := range ToolNames {
		if !called[n] {
			t.Errorf("tool %s not called", n)
		}
	}
	wantErr := map[string]string{
		"read-outside":            "sandbox violation: path '../outside' is outside the workspace '" + ws + "'",
		"read-env":                "sandbox violation: path '.env' is denied by rule '**/.env'",
		"replace-stale":           "",
		"write-protected":         "sandbox violation: path '.git/hooks/pre-commit' is protected by rule '**/.git/hooks/'",
		"write-nested-git-config": "sandbox violation: path 'sub/.git/config' is protected by rule '**/.git/config'",
		"read-reversed":           "read_file: start_line 9 is after end_line 3",
		"read-missing":            "read 'missing.txt': no such file or directory",
		"info-missing":            "read 'missing.txt': no such file or directory",
		"read-binary":             "'x.bin' is a binary file (3 bytes;",
	}
	for label, c := range calls {
		prefix, ok := wantErr[label]
		if c.isError != ok {
			t.Errorf("%s: isError=%v: %q", label, c.isError, c.text)
		}
		if ok && !strings.HasPrefix(c.text, prefix) {
			t.Errorf("%s: %q does not start with %q", label, c.text, prefix)
		}
		if strings.Contains(c.text, "--no-sandbox") {
			t.Errorf("%s: %q advises lifting the sandbox", label, c.text)
		}
	}
	for _, tl := range got.Tools {
		if strings.Contains(tl.Description, "--no-sandbox") {
			t.Errorf("tool %s: description mentions --no-sandbox: %q", tl.Name, tl.Description)
		}
	}
	checks := map[string]string{
		"read":                  "|alpha\n",
		"read-after-violations": "|beta\n",
		"replace":               "edited " + filepath.Join(ws, "new", "n.txt"),
		"list":                  "a.txt\n",
		"find":                  "a.txt\nnew/n.txt\n",
		"grep":                  "a.txt:3:gamma\n",
		"info":                  `"type":"file"`,
		"mkdir":                 "created directory " + filepath.Join(ws, "made", "deep"),
		"run-argv":              "exit code: 0\n",
		"run-command":           "exit code: 7\n",
		"status":                `"mode": "standard"`,
		"still-serving":         `"type":"file"`,
		"grep-count":            "a.txt:1:alpha\na.txt:3:gamma\n[2 matches in 1 file; ",
		"find-ignoring":         "src/keep.o\n[1 path found; 2 paths ignored by .gitignore skipped (include_ignored lists them)]\n",
		"find-ignored":          "build/a.o\nsrc/b.o\nsrc/keep.o\n",
		"run-long":              "\n99999\n100000\nFAIL: the reason\n",
		"after-malformed":       `"type":"file"`,
	}
	for label, want := range checks {
		if !strings.Contains(calls[label].text, want) {
			t.Errorf("%s: %q lacks %q", label, calls[label].text, want)
		}
	}
	if rl := calls["run-long"].text; !strings.HasPrefix(rl, "exit code: 1\n") || !strings.Contains(rl, "\n1\n2\n3\n") ||
		!strings.Contains(rl, " lines (") || !strings.Contains(rl, "cut here by cordon: the output was 100001 lines") {
		t.Errorf("run-long: %q", rl)
	}
	for _, label := range []string{"read-missing", "info-missing", "read-binary", "grep-count", "find-ignoring"} {
		if txt := calls[label].text; strings.Contains(txt, "statat") || strings.Contains(txt, "openat") || strings.Contains(txt, "\uFFFD") {
			t.Errorf("%s: %q", label, txt)
		}
	}
	if !strings.Contains(got.MalformedReply, `"code":-32700`) || !strings.Contains(got.MalformedReply, `"id":null`) {
		t.Errorf("the malformed line got %q, want a -32700 parse error with id null (client errors: %q)", got.MalformedReply, got.ClientErrors)
	}
	t.Logf("malformed line: reply %s (the TypeScript client, which cannot match a reply with id null, reported %d error(s) on it and went on)", got.MalformedReply, len(got.ClientErrors))
	if calls["read-big"].text != bigWant.String() {
		t.Errorf("read-big: got %d bytes, want %d: %.200q", len(calls["read-big"].text), bigWant.Len(), calls["read-big"].text)
	}
	if !strings.Contains(calls["run-argv"].text, "hello; not a shell\n") || !strings.Contains(calls["run-command"].text, "from-sh\n") {
		t.Errorf("run_command output: %q %q", calls["run-argv"].text, calls["run-command"].text)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "new", "n.txt")); err != nil || string(b) != "ONE\nTWO\n" {
		t.Errorf("new/n.txt = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); !os.IsNotExist(err) {
		t.Error("the protected hook was written")
	}
	if b, err := os.ReadFile(filepath.Join(ws, "sub", ".git", "config")); err != nil || string(b) != string(nestedConfig) {
		t.Errorf("the nested repository's config changed: %q (%v)", b, err)
	}
	audit, err := os.ReadFile(filepath.Join(home, ".local", "state", "cordon", "audit.jsonl"))
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	if n := strings.Count(string(audit), `"action":"denied"`); n != 4 || !strings.Contains(string(audit), `"rule":"**/.env"`) || !strings.Contains(string(audit), `"rule":"**/.git/config"`) {
		t.Errorf("audit log (%d denials):\n%s", n, audit)
	}
}
