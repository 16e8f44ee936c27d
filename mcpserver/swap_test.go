//go:build linux

package mcpserver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// TestSwapRaceBinary is issue 9's attack through the real `cordon mcp`
// binary over stdio: while this process exchanges a directory a with
// symbolic links to .git, .git/hooks and secrets.d (denied by the default
// "**/secrets.*"), and a file f with a link to the protected .envrc, with
// renameat2(RENAME_EXCHANGE), the client calls write_file, edit_file,
// create_dir, read_file, grep, find_files and list_dir through them. No call
// may change .git/config, the hooks or .envrc, or return secret content.
func TestSwapRaceBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cordon: skipped with -short")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "cordon")
	build := exec.Command("go", "build", "-o", bin, "github.com/cordon-sandbox/cordon/cmd/cordon")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cordon: %v\n%s", err, out)
	}
	home := filepath.Join(base, "home")
	ws := filepath.Join(home, "proj")
	const secret = "TOPSECRET-91c2"
	files := map[string]string{
		".git/HEAD":                "ref: refs/heads/main\n",
		".git/config":              "[core]\n\trepositoryformatversion = 0\n",
		".git/hooks/pre-commit":    "#!/bin/sh\necho original\n",
		".git/objects/.keep":       "",
		"secrets.d/token":          secret + "\n",
		"secrets.d/secret-key.pem": secret + "\n",
		".envrc":                   "export ORIGINAL=1\n",
		"a/config":                 "[core]\n",
		"a/token":                  "public\n",
		"a/hooks/.keep":            "",
		"f":                        "public\n",
	}
	for p, c := range files {
		p = filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"l-git": ".git", "l-hooks": ".git/hooks", "l-secrets": "secrets.d", "l-envrc": ".envrc"} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	kept := []string{".git/config", ".git/hooks/pre-commit", ".envrc", "secrets.d/token"}
	hooksBefore, _ := os.ReadDir(filepath.Join(ws, ".git", "hooks"))
	secretsBefore, _ := os.ReadDir(filepath.Join(ws, "secrets.d"))

	cmd := exec.Command(bin, "mcp")
	cmd.Dir = ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state")}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "swap-race", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("starting cordon mcp: %v", err)
	}
	defer cs.Close()

	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	for _, pair := range [][2]string{{"a", "l-git"}, {"a", "l-hooks"}, {"a", "l-secrets"}, {"f", "l-envrc"}} {
		wg.Add(1)
		go func(x, y string) {
			defer wg.Done()
			for !stop.Load() {
				if unix.Renameat2(unix.AT_FDCWD, filepath.Join(ws, x), unix.AT_FDCWD, filepath.Join(ws, y), unix.RENAME_EXCHANGE) == nil {
					swaps.Add(1)
				}
			}
		}(pair[0], pair[1])
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()

	pwned := "[core]\n\tfsmonitor = touch pwned\n"
	calls := []struct {
		name string
		args map[string]any
	}{
		{ToolWriteFile, map[string]any{"path": "a/config", "content": pwned}},
		{ToolWriteFile, map[string]any{"path": "a/pre-commit", "content": "#!/bin/sh\ntouch pwned\n"}},
		{ToolWriteFile, map[string]any{"path": "f", "content": "export PWNED=1\n"}},
		{ToolEditFile, map[string]any{"path": "a/config", "old_string": "[core]\n", "new_string": pwned}},
		{ToolCreateDir, map[string]any{"path": "a/hooks/d"}},
		{ToolReadFile, map[string]any{"path": "a/token"}},
		{ToolGrep, map[string]any{"pattern": "TOPSECRET|public", "path": "a"}},
		{ToolGrep, map[string]any{"pattern": "TOPSECRET", "literal": true}},
		{ToolFindFiles, map[string]any{"pattern": "**", "path": "a"}},
		{ToolListDir, map[string]any{"path": "a"}},
		{ToolFileInfo, map[string]any{"path": "a/secret-key.pem"}},
	}
	const minCalls = 3000
	deadline := time.Now().Add(2 * time.Minute)
	n, refused := 0, 0
	for ; n < minCalls && time.Now().Before(deadline); n++ {
		c := calls[n%len(calls)]
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s %v: %v", c.name, c.args, err)
		}
		var out strings.Builder
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				out.WriteString(tc.Text)
			}
		}
		if strings.HasPrefix(out.String(), "sandbox violation:") {
			refused++
		}
		// A refusal names the path as given; a result must not name it.
		if strings.Contains(out.String(), secret) || (!res.IsError && strings.Contains(out.String(), "secret-key.pem")) {
			t.Errorf("%s %v returned denied content: %q", c.name, c.args, out.String())
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d calls, %d refused, %d exchanges", n, refused, swaps.Load())
	for _, k := range kept {
		b, err := os.ReadFile(filepath.Join(ws, k))
		if err != nil || string(b) != files[k] {
			t.Errorf("%s changed: %q (%v)", k, b, err)
		}
	}
	if hooks, _ := os.ReadDir(filepath.Join(ws, ".git", "hooks")); len(hooks) != len(hooksBefore) {
		t.Errorf(".git/hooks has %d entries, had %d", len(hooks), len(hooksBefore))
	}
	if s, _ := os.ReadDir(filepath.Join(ws, "secrets.d")); len(s) != len(secretsBefore) {
		t.Errorf("secrets.d has %d entries, had %d", len(s), len(secretsBefore))
	}
	if n < minCalls {
		t.Errorf("only %d calls ran, want %d", n, minCalls)
	}
	if refused == 0 {
		t.Error("the race did not happen: nothing was refused")
	}
}
