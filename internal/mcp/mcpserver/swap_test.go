//go:build linux

package mcpserver

import (
	"context"
	"fmt"
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

// TestSwapRaceBinary is the symlink-swap attack through the real `cordon mcp`
// binary over stdio: while a swapper exchanges a directory a with
// symbolic links to .git, .git/hooks and secrets.d (denied by the default
// "**/secrets.*"), and a file f with a link to the protected .envrc, with
// renameat2(RENAME_EXCHANGE), the client calls write_file, edit_file,
// create_dir, read_file, grep, find_files and list_dir through them. No call
// may change .git/config, the hooks or .envrc, or return secret content.
// The swapper runs in this process, and as an agent would start it: through
// run_command, inside the sandbox, on each backend.
func TestSwapRaceBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cordon: skipped with -short")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin := cordonBinary(t)
	swapper := filepath.Join(base, "swapper")
	if err := os.WriteFile(swapper+".go", []byte(swapperSource), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", swapper, swapper+".go")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the swapper: %v\n%s", err, out)
	}
	for _, mode := range []string{"host", "bwrap", "landlock"} {
		t.Run(mode, func(t *testing.T) {
			swapRace(t, bin, swapper, filepath.Join(base, mode), mode)
		})
	}
}

// swapperSource exchanges each pair of paths given after the duration in
// seconds, as fast as it can, until the duration is up or a file named
// stop-swapper appears, and prints how many exchanges succeeded.
const swapperSource = `package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

func main() {
	secs, _ := strconv.Atoi(os.Args[1])
	end := time.Now().Add(time.Duration(secs) * time.Second)
	nr := uintptr(316) // renameat2 on amd64
	if runtime.GOARCH == "arm64" {
		nr = 276
	}
	cwd := -100 // AT_FDCWD
	var n atomic.Int64
	var wg sync.WaitGroup
	for i := 2; i+1 < len(os.Args); i += 2 {
		a, _ := syscall.BytePtrFromString(os.Args[i])
		b, _ := syscall.BytePtrFromString(os.Args[i+1])
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(end); i++ {
				if i%4096 == 0 {
					if _, err := os.Lstat("stop-swapper"); err == nil {
						return
					}
				}
				_, _, e := syscall.Syscall6(nr, uintptr(cwd), uintptr(unsafe.Pointer(a)), uintptr(cwd), uintptr(unsafe.Pointer(b)), 2, 0)
				if e == 0 {
					n.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("swaps: %d\n", n.Load())
}
`

// swapRace runs the attack in the directory base with the swapper in this
// process (mode "host") or through run_command on backend mode.
func swapRace(t *testing.T, bin, swapper, base, mode string) {
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

	args := []string{"mcp"}
	if mode != "host" {
		args = append(args, "--backend", mode)
		sw, err := os.ReadFile(swapper)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "swapper"), sw, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, args...)
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
	pairs := [][2]string{{"a", "l-git"}, {"a", "l-hooks"}, {"a", "l-secrets"}, {"f", "l-envrc"}}
	if mode == "host" {
		for _, pair := range pairs {
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
	} else {
		// The agent's own swapper, confined like any command it runs.
		argv := []any{"./swapper", "40"}
		for _, p := range pairs {
			argv = append(argv, p[0], p[1])
		}
		started := time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolRunCommand, Arguments: map[string]any{"argv": argv}})
			if err != nil {
				t.Errorf("run_command swapper: %v", err)
				return
			}
			for _, ct := range res.Content {
				if tc, ok := ct.(*mcp.TextContent); ok {
					var n int64
					if i := strings.Index(tc.Text, "swaps: "); i >= 0 {
						fmt.Sscan(tc.Text[i+len("swaps: "):], &n)
					}
					swaps.Add(n)
					if n == 0 {
						t.Errorf("run_command swapper (%s) did not swap: %q", time.Since(started), tc.Text)
					}
				}
			}
		}()
		// Let it start before the calls race it.
		time.Sleep(500 * time.Millisecond)
	}
	defer func() {
		stop.Store(true)
		cs.Close()
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
	if err := os.WriteFile(filepath.Join(ws, "stop-swapper"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	t.Logf("%s: %d calls, %d refused, %d exchanges", mode, n, refused, swaps.Load())
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
