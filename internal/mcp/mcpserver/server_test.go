//go:build unix

package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/helpercmd"
	"github.com/cordon-sandbox/cordon/internal/launch"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain lets the test binary act as cordon's in-sandbox helper, since the
// bwrap backend re-executes /proc/self/exe.
func TestMain(m *testing.M) {
	if s, ok := helpercmd.Lookup(os.Args[1:]); ok {
		os.Exit(s.Run(os.Args[2:]))
	}
	code := m.Run()
	if cordonBuild.dir != "" {
		os.RemoveAll(cordonBuild.dir)
	}
	os.Exit(code)
}

// cordonBuild is the cordon binary the tests that drive the real
// `cordon mcp` share: built once per test binary.
var cordonBuild struct {
	once      sync.Once
	dir, path string
	err       error
}

// cordonBinary builds cordon and its sibling binaries once and returns
// cordon's path.
func cordonBinary(t testing.TB) string {
	t.Helper()
	cordonBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "cordon-mcp-test-")
		if err != nil {
			cordonBuild.err = err
			return
		}
		// The unprivileged user running a sandbox may need to execute it.
		if err := os.Chmod(dir, 0o755); err != nil {
			cordonBuild.err = err
			return
		}
		cordonBuild.dir = dir
		// Every binary, into one directory: cordon mcp runs cordon-mcp,
		// which runs cordon-helper, from beside it.
		bin := filepath.Join(dir, "cordon")
		build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "github.com/cordon-sandbox/cordon/cmd/...")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			cordonBuild.err = fmt.Errorf("%v\n%s", err, out)
			return
		}
		cordonBuild.path = bin
	})
	if cordonBuild.err != nil {
		t.Fatalf("building cordon: %v", cordonBuild.err)
	}
	return cordonBuild.path
}

type env struct {
	ws, base, auditPath string
	cs                  *mcp.ClientSession
	p                   *policy.Policy
}

// start builds a fake home and workspace under t.TempDir(), loads the
// default policy for them (mode as given) and connects a real SDK client to
// the server over the in-memory transport.
func start(t *testing.T, mode string) *env {
	t.Helper()
	return startWith(t, mode, nil)
}

// startWith is start with flags changed by flags (nil: none).
func startWith(t *testing.T, mode string, flags func(*config.Layer)) *env {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	ws := filepath.Join(home, "proj")
	for _, d := range []string{filepath.Join(ws, "src", "pkg"), filepath.Join(base, "outside"), filepath.Join(ws, "..", "proj2")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(ws, "a.txt"):               "alpha\nbeta\ngamma\n",
		filepath.Join(ws, "src", "main.go"):      "package main\n\nfunc main() {}\n",
		filepath.Join(ws, "src", "pkg", "x.go"):  "package pkg\n\n// Needle is here.\nvar Needle = 1\n",
		filepath.Join(ws, ".env"):                "TOKEN=secret\n",
		filepath.Join(base, "outside", "secret"): "outside\n",
		filepath.Join(ws, "..", "proj2", "x"):    "sibling\n",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	h := policy.Host{Home: home, Cwd: ws, Getenv: func(k string) (string, bool) {
		if k == "PATH" {
			return "/usr/local/bin:/usr/bin:/bin", true
		}
		return "", false
	}}
	fl := config.NewFlags()
	fl.Mode = config.Ptr(mode)
	if flags != nil {
		flags(fl)
	}
	p, err := policy.Load(policy.Options{Host: h, Workspace: ws, Flags: fl, SkipUserConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(home, ".local", "state", "cordon", "audit.jsonl")
	lg, err := audit.Open(auditPath, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	cs := connect(t, Options{Policy: p, Audit: lg, SessionID: "test-session", Version: "test",
		Plan: plan.Options{Home: home, Getenv: h.Getenv, StateDir: filepath.Join(home, ".local", "state", "cordon")}})
	return &env{ws: ws, base: base, auditPath: auditPath, cs: cs, p: p}
}

// call calls a tool and returns its text and isError.
func (e *env) call(t *testing.T, name string, args any) (string, bool) {
	t.Helper()
	return callTool(t, e.cs, name, args)
}

func (e *env) ok(t *testing.T, name string, args any) string {
	t.Helper()
	out, isErr := e.call(t, name, args)
	if isErr {
		t.Fatalf("%s %v: error %s", name, args, out)
	}
	return out
}

func (e *env) violation(t *testing.T, name string, args any) string {
	t.Helper()
	out, isErr := e.call(t, name, args)
	if !isErr || !strings.HasPrefix(out, "sandbox violation:") {
		t.Fatalf("%s %v: want a sandbox violation, got isError=%v %q", name, args, isErr, out)
	}
	return out
}

func (e *env) auditRecords(t *testing.T) []audit.Record {
	t.Helper()
	f, err := os.Open(e.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad audit line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

func TestListTools(t *testing.T) {
	e := start(t, "standard")
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if !strings.Contains(tl.Description, "Sandbox: confined by cordon to the workspace "+e.ws) {
			t.Errorf("%s: description does not mention the sandbox: %q", tl.Name, tl.Description)
		}
		sch, _ := json.Marshal(tl.InputSchema)
		if !strings.Contains(string(sch), `"type":"object"`) {
			t.Errorf("%s: input schema %s", tl.Name, sch)
		}
	}
	if strings.Join(names, ",") != strings.Join(sortedCopy(ToolNames), ",") {
		t.Errorf("tools = %v, want %v", names, ToolNames)
	}
	for _, tl := range res.Tools {
		if tl.Name == ToolReadFile {
			sch, _ := json.Marshal(tl.InputSchema)
			for _, want := range []string{`"path"`, `"start_line"`, `"end_line"`, `"required":["path"]`} {
				if !strings.Contains(string(sch), want) {
					t.Errorf("read_file schema %s lacks %s", sch, want)
				}
			}
		}
	}
}

func sortedCopy(ss []string) []string {
	out := append([]string(nil), ss...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestFileTools(t *testing.T) {
	e := start(t, "standard")
	out := e.ok(t, ToolReadFile, map[string]any{"path": "a.txt"})
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "1:") || !strings.HasSuffix(lines[1], "|beta") {
		t.Fatalf("read_file: %q", out)
	}
	out = e.ok(t, ToolReadFile, map[string]any{"path": "a.txt", "start_line": 2, "end_line": 2})
	if !strings.HasPrefix(out, "2:") || !strings.Contains(out, "|beta\n") || !strings.Contains(out, "[lines 2-2 of 3") {
		t.Errorf("read_file range: %q", out)
	}
	anchor := strings.SplitN(lines[1], "|", 2)[0]

	e.ok(t, ToolReplaceLines, map[string]any{"path": "a.txt", "start_anchor": anchor, "new_text": "BETA"})
	if b, _ := os.ReadFile(filepath.Join(e.ws, "a.txt")); string(b) != "alpha\nBETA\ngamma\n" {
		t.Errorf("after replace_lines: %q", b)
	}
	// The same anchor is now stale.
	if out, isErr := e.call(t, ToolReplaceLines, map[string]any{"path": "a.txt", "start_anchor": anchor, "new_text": "x"}); !isErr || !strings.Contains(out, "stale") && !strings.Contains(out, "changed") {
		t.Errorf("stale anchor: %v %q", isErr, out)
	}

	out = e.ok(t, ToolWriteFile, map[string]any{"path": "new/dir/n.txt", "content": "one\ntwo two\n"})
	if !strings.Contains(out, "created") {
		t.Errorf("write_file: %q", out)
	}
	e.ok(t, ToolEditFile, map[string]any{"path": "new/dir/n.txt", "old_string": "one", "new_string": "ONE"})
	if out, isErr := e.call(t, ToolEditFile, map[string]any{"path": "new/dir/n.txt", "old_string": "two", "new_string": "x"}); !isErr || !strings.Contains(out, "2 times") {
		t.Errorf("non-unique edit: %v %q", isErr, out)
	}
	if out, isErr := e.call(t, ToolEditFile, map[string]any{"path": "new/dir/n.txt", "old_string": "zzz", "new_string": "x"}); !isErr || !strings.Contains(out, "not found") {
		t.Errorf("missing edit: %v %q", isErr, out)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "new/dir/n.txt")); string(b) != "ONE\ntwo two\n" {
		t.Errorf("n.txt = %q", b)
	}

	out = e.ok(t, ToolListDir, map[string]any{})
	for _, want := range []string{"a.txt\n", "src/\n", "symlink"} {
		if !strings.Contains(out, want) {
			t.Errorf("list_dir lacks %q: %q", want, out)
		}
	}
	if strings.Contains(out, ".env") {
		t.Errorf("list_dir shows a denied file: %q", out)
	}
	out = e.ok(t, ToolFindFiles, map[string]any{"pattern": "**/*.go"})
	if out != "src/main.go\nsrc/pkg/x.go\n" {
		t.Errorf("find_files: %q", out)
	}
	out = e.ok(t, ToolGrep, map[string]any{"pattern": `Need+le\b`, "include": "*.go"})
	if !strings.Contains(out, "src/pkg/x.go:3:// Needle is here.\nsrc/pkg/x.go:4:var Needle = 1\n") {
		t.Errorf("grep: %q", out)
	}
	out = e.ok(t, ToolGrep, map[string]any{"pattern": "TOKEN", "literal": true})
	if !strings.Contains(out, "[no matches") {
		t.Errorf("grep found a denied file: %q", out)
	}
	out = e.ok(t, ToolFileInfo, map[string]any{"path": "src/main.go"})
	var info map[string]any
	if err := json.Unmarshal([]byte(out), &info); err != nil || info["type"] != "file" || info["name"] != filepath.Join(e.ws, "src/main.go") {
		t.Errorf("file_info: %q %v", out, err)
	}
	out = e.ok(t, ToolCreateDir, map[string]any{"path": "made/deep"})
	if fi, err := os.Stat(filepath.Join(e.ws, "made/deep")); err != nil || !fi.IsDir() || !strings.Contains(out, "made/deep") {
		t.Errorf("create_dir: %q %v", out, err)
	}
}

func TestViolations(t *testing.T) {
	e := start(t, "standard")
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{ToolReadFile, map[string]any{"path": "../outside"}, "is outside the workspace"},
		{ToolReadFile, map[string]any{"path": "../proj2/x"}, "is outside the workspace"},
		{ToolReadFile, map[string]any{"path": ".env"}, "denied by rule '**/.env'"},
		{ToolReadFile, map[string]any{"path": filepath.Join(e.base, "outside", "secret")}, "outside"},
		{ToolReadFile, map[string]any{"path": "escape/secret"}, "symbolic link"},
		{ToolReadFile, map[string]any{"path": "src/../../outside/secret"}, "outside"},
		{ToolWriteFile, map[string]any{"path": "../outside/new", "content": "x"}, "outside"},
		{ToolWriteFile, map[string]any{"path": ".git/hooks/pre-commit", "content": "x"}, "protected"},
		{ToolEditFile, map[string]any{"path": "escape/secret", "old_string": "outside", "new_string": "x"}, "symbolic link"},
		{ToolCreateDir, map[string]any{"path": "escape/newdir"}, "symbolic link"},
		{ToolListDir, map[string]any{"path": ".."}, "outside"},
		{ToolFindFiles, map[string]any{"path": "/", "pattern": "*"}, "outside"},
		{ToolGrep, map[string]any{"path": "..", "pattern": "x"}, "outside"},
		{ToolFileInfo, map[string]any{"path": "a\x00b"}, "NUL"},
		{ToolFileInfo, map[string]any{"path": strings.Repeat("a/", 2500)}, "longer than"},
		{ToolReplaceLines, map[string]any{"path": ".env", "start_anchor": "1:000000", "new_text": "x"}, "denied"},
		{ToolRunCommand, map[string]any{"argv": []string{"true"}, "dir": "../outside"}, "outside"},
	}
	for _, tc := range cases {
		out := e.violation(t, tc.tool, tc.args)
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s %v: %q lacks %q", tc.tool, tc.args, out, tc.want)
		}
		if strings.Contains(out, "--no-sandbox") {
			t.Errorf("%s %v: %q advises lifting the sandbox", tc.tool, tc.args, out)
		}
		// The server keeps serving.
		e.ok(t, ToolFileInfo, map[string]any{"path": "a.txt"})
	}
	if _, err := os.Stat(filepath.Join(e.base, "outside", "new")); !os.IsNotExist(err) {
		t.Error("a file was written outside")
	}
	if _, err := os.Stat(filepath.Join(e.base, "outside", "newdir")); !os.IsNotExist(err) {
		t.Error("a directory was created outside")
	}
	recs := e.auditRecords(t)
	if len(recs) != len(cases) {
		t.Fatalf("%d audit records, want %d", len(recs), len(cases))
	}
	r := recs[2]
	if r.Command != "mcp read_file" || r.Operation != "file-read" || r.Path != filepath.Join(e.ws, ".env") || r.Action != "denied" || r.Rule != "**/.env" || r.Mode != "standard" || r.SessionID != "test-session" || time.Since(r.Timestamp) > time.Minute {
		t.Errorf("audit record: %+v", r)
	}
	if recs[7].Operation != "file-write" {
		t.Errorf("write record: %+v", recs[7])
	}
}

func TestBadInputsDoNotCrash(t *testing.T) {
	e := start(t, "standard")
	for _, args := range []any{
		map[string]any{"path": 5},
		map[string]any{},
		map[string]any{"path": "\xff\xfe"},
		map[string]any{"path": "a.txt", "start_line": -5, "end_line": -1},
		map[string]any{"path": "a.txt", "start_line": 1 << 40},
		nil,
	} {
		_, _ = e.call(t, ToolReadFile, args)
	}
	for _, tool := range ToolNames {
		if tool == ToolRunCommand {
			continue
		}
		_, _ = e.call(t, tool, map[string]any{"path": "\x00", "pattern": "(", "start_anchor": "x", "old_string": ""})
	}
	if out, isErr := e.call(t, ToolGrep, map[string]any{"pattern": "("}); !isErr || !strings.Contains(out, "invalid pattern") {
		t.Errorf("bad regexp: %q", out)
	}
	if _, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Error("unknown tool: no error")
	}
	e.ok(t, ToolReadFile, map[string]any{"path": "a.txt"})
}

func TestModeOff(t *testing.T) {
	e := start(t, "off")
	out := e.ok(t, ToolReadFile, map[string]any{"path": "../../outside/secret"})
	if !strings.Contains(out, "|outside") {
		t.Errorf("mode off read: %q", out)
	}
	e.ok(t, ToolReadFile, map[string]any{"path": ".env"})
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Tools[0].Description, "Sandbox: OFF") {
		t.Errorf("description: %q", res.Tools[0].Description)
	}
	out = e.ok(t, ToolRunCommand, map[string]any{"argv": []string{"cat", filepath.Join(e.base, "outside", "secret")}})
	if !strings.HasPrefix(out, "exit code: 0\n") || !strings.Contains(out, "outside\n") {
		t.Errorf("run_command (off): %q", out)
	}
	var st Status
	if err := json.Unmarshal([]byte(e.ok(t, ToolSandboxStatus, map[string]any{})), &st); err != nil || st.Mode != "off" || st.Backend != "none" {
		t.Errorf("status: %+v %v", st, err)
	}
}

// runModes are the modes run_command is tested in: off always, standard
// when the OS sandbox can run here.
func runModes(t *testing.T) []string {
	e := start(t, "standard")
	var st Status
	if err := json.Unmarshal([]byte(e.ok(t, ToolSandboxStatus, nil)), &st); err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(st.Backend, "unavailable") {
		t.Logf("OS sandbox unavailable here (%s): testing run_command in mode off only", st.Backend)
		return []string{"off"}
	}
	if out, _ := e.call(t, ToolRunCommand, map[string]any{"argv": []string{"true"}}); !strings.HasPrefix(out, "exit code: 0") {
		t.Logf("OS sandbox cannot run here (%q): testing run_command in mode off only", out)
		return []string{"off"}
	}
	return []string{"off", "standard"}
}

// TestRunCommandSaysWhatHappened: run_command tells the agent what
// cordon run tells a user: the limit that killed the command, and why git
// init failed. Like cordon mcp on bwrap, the test process becomes a child
// subreaper (for the rest of its life), so that the command's CPU time is
// counted without a cgroup, as an unprivileged user.
func TestRunCommandSaysWhatHappened(t *testing.T) {
	if err := launch.BecomeSubreaper(); err != nil {
		t.Fatal(err)
	}
	e := startWith(t, "standard", func(l *config.Layer) { l.Resources.MaxCPUSeconds = config.Ptr(1) })
	out := e.ok(t, ToolRunCommand, map[string]any{"command": "while :; do :; done", "timeout_seconds": 30})
	if !strings.Contains(out, "killed: CPU time limit of 1 s reached (--max-cpu)\n") {
		t.Errorf("no line naming the CPU limit: %q", out)
	}
	out = e.ok(t, ToolRunCommand, map[string]any{"argv": []string{"git", "init"}})
	if strings.HasPrefix(out, "exit code: 0") || !strings.Contains(out, "git init: ") {
		t.Errorf("git init inside: no hint saying why it failed: %q", out)
	}
}

// TestRunCommandNetworkRefused: run_command tells the agent which host
// the network proxy refused and the flag that allows it (curl's own error
// for an https:// URL names neither). The name is refused before any
// lookup: no packet leaves the machine.
func TestRunCommandNetworkRefused(t *testing.T) {
	if !slices.Contains(runModes(t), "standard") {
		t.Skip("no OS sandbox here")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	e := startWith(t, "standard", func(l *config.Layer) { l.Network.Allow = []string{"allowed.test:443"} })
	out := e.ok(t, ToolRunCommand, map[string]any{"argv": []string{"curl", "-sS", "https://refused.test/"}})
	want := "network: refused refused.test:443 (no allow rule); allow it with --allow-net refused.test:443\n"
	if !strings.Contains(out, want) {
		t.Errorf("run_command output %q; want the line %q", out, want)
	}
}

func TestRunCommand(t *testing.T) {
	for _, mode := range runModes(t) {
		t.Run(mode, func(t *testing.T) {
			e := start(t, mode)
			out := e.ok(t, ToolRunCommand, map[string]any{"argv": []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
			if !strings.HasPrefix(out, "exit code: 3\n") || !strings.Contains(out, "out\n") || !strings.Contains(out, "err\n") {
				t.Errorf("argv: %q", out)
			}
			// Arguments are never given to a shell.
			out = e.ok(t, ToolRunCommand, map[string]any{"argv": []string{"echo", "a; touch pwned", "$(touch pwned2)"}})
			if !strings.Contains(out, "a; touch pwned $(touch pwned2)\n") {
				t.Errorf("argv literal: %q", out)
			}
			out = e.ok(t, ToolRunCommand, map[string]any{"command": "pwd; echo hi > made.txt", "dir": "src"})
			if !strings.Contains(out, filepath.Join(e.ws, "src")+"\n") {
				t.Errorf("dir: %q", out)
			}
			if b, err := os.ReadFile(filepath.Join(e.ws, "src", "made.txt")); err != nil || string(b) != "hi\n" {
				t.Errorf("made.txt: %q %v", b, err)
			}
			for _, f := range []string{"pwned", "pwned2"} {
				if _, err := os.Stat(filepath.Join(e.ws, f)); !os.IsNotExist(err) {
					t.Errorf("%s exists: an argument reached a shell", f)
				}
			}
			out = e.ok(t, ToolRunCommand, map[string]any{"command": "yes | head -c 100000", "max_output_bytes": 1000})
			if !strings.Contains(out, " lines (") || !strings.Contains(out, "cut here by cordon: the output was 50000 lines (100000 bytes)") || len(out) > 1400 {
				t.Errorf("cap: %d bytes, %q", len(out), out)
			}
			// The end of a long output, where a failing build says why,
			// is kept, and the exit code stays at the top.
			out = e.ok(t, ToolRunCommand, map[string]any{"command": "seq 1 100000; echo 'FAIL: the reason' >&2; exit 1", "max_output_bytes": 3000})
			if !strings.HasPrefix(out, "exit code: 1\n") || !strings.Contains(out, "\n1\n2\n3\n") || !strings.HasSuffix(out, "\n99999\n100000\nFAIL: the reason\n") ||
				!strings.Contains(out, " lines (") || !strings.Contains(out, "the output was 100001 lines") || len(out) > 3500 {
				t.Errorf("head and tail: %d bytes: %q", len(out), out)
			}
			start := time.Now()
			out = e.ok(t, ToolRunCommand, map[string]any{"command": "sleep 30", "timeout_seconds": 1})
			if !strings.HasPrefix(out, "exit code: 124 (timed out after 1s") || time.Since(start) > 10*time.Second {
				t.Errorf("timeout: %q after %s", out, time.Since(start))
			}
			out = e.ok(t, ToolRunCommand, map[string]any{"argv": []string{"no-such-command-xyz"}})
			if !strings.HasPrefix(out, "exit code: 127") {
				t.Errorf("not found: %q", out)
			}
			if out, isErr := e.call(t, ToolRunCommand, map[string]any{"argv": []string{"true"}, "command": "true"}); !isErr || !strings.Contains(out, "not both") {
				t.Errorf("both: %q", out)
			}
			if out, isErr := e.call(t, ToolRunCommand, map[string]any{}); !isErr {
				t.Errorf("neither: %q", out)
			}
			if mode == "standard" {
				// The OS sandbox: the denied .env is masked, outside is invisible.
				out = e.ok(t, ToolRunCommand, map[string]any{"command": "cat .env; cat " + filepath.Join(e.base, "outside", "secret") + "; echo done"})
				if strings.Contains(out, "TOKEN=secret") || strings.Contains(out, "outside\n") || !strings.Contains(out, "done") {
					t.Errorf("sandbox leaked: %q", out)
				}
			}
		})
	}
}

func TestSandboxStatus(t *testing.T) {
	e := start(t, "standard")
	var st Status
	out := e.ok(t, ToolSandboxStatus, map[string]any{})
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode != "standard" || st.Profile != "development" || st.Workspace != e.ws || st.Backend == "" || len(st.Enforced) == 0 || st.AuditLog != e.auditPath || st.Timeout != "2m0s" {
		t.Errorf("status: %s", out)
	}
}

// TestLogAllowed: with audit.log_allowed, an allowed file tool call is
// recorded too, with the policy entry that allows it; without it, only
// refusals are.
func TestLogAllowed(t *testing.T) {
	for _, on := range []bool{false, true} {
		e := startWith(t, "standard", func(l *config.Layer) { l.Audit.LogAllowed = config.Ptr(on) })
		e.ok(t, ToolReadFile, map[string]any{"path": "a.txt"})
		e.ok(t, ToolWriteFile, map[string]any{"path": "new.txt", "content": "x\n"})
		recs := e.auditRecords(t)
		if !on {
			if len(recs) != 0 {
				t.Errorf("log_allowed off: %+v", recs)
			}
			continue
		}
		if len(recs) != 2 || recs[0].Action != "allowed" || recs[0].Operation != "file-read" || recs[0].Path != filepath.Join(e.ws, "a.txt") ||
			recs[1].Operation != "file-write" || recs[1].Path != filepath.Join(e.ws, "new.txt") || !strings.HasPrefix(recs[1].Rule, "filesystem.write: ") {
			t.Errorf("log_allowed: %+v", recs)
		}
	}
}
