// Command benchhook measures what cordon hook claude-code costs each tool
// call of Claude Code: the wall time of one hook call (a process started
// with a real PreToolUse input on stdin) for a Bash call (the rewrite) and
// for a Read call (the workspace's policy loaded and the path decided),
// interleaved with `cordon version` (the same binary's start and nothing
// else), and prints the p50 and p99 of each and their ratios to cordon
// version's. Run it with:
//
//	go run ./internal/bench/hook [-n 500] [-cordon BIN]
//
// The home and the workspace are fake ones in a temporary directory.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

func main() {
	n := flag.Int("n", 500, "calls of each case")
	cordon := flag.String("cordon", "", "cordon binary (default: build ./cmd/cordon into a temporary directory)")
	flag.Parse()
	if err := run(*n, *cordon); err != nil {
		fmt.Fprintln(os.Stderr, "benchhook:", err)
		os.Exit(1)
	}
}

// bench is one timed case: cordon with args and stdin.
type bench struct {
	name  string
	args  []string
	stdin []byte
	times []time.Duration
}

func run(n int, cordon string) error {
	tmp, err := os.MkdirTemp("", "cordon-benchhook-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if cordon == "" {
		cordon = filepath.Join(tmp, "cordon")
		b := exec.Command("go", "build", "-o", cordon, "./cmd/cordon")
		b.Stderr = os.Stderr
		b.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := b.Run(); err != nil {
			return fmt.Errorf("building cordon: %w", err)
		}
	}
	home := filepath.Join(tmp, "home")
	ws := filepath.Join(home, "src", "proj")
	for _, f := range []string{"main.go", ".env", "pkg/a.go"} {
		p := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			return err
		}
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "CLAUDE_PROJECT_DIR=" + ws}
	call := func(tool string, input map[string]any) []byte {
		b, _ := json.Marshal(map[string]any{
			"session_id": "abc123", "transcript_path": filepath.Join(home, ".claude/projects/p/t.jsonl"),
			"cwd": ws, "permission_mode": "default", "hook_event_name": "PreToolUse",
			"tool_name": tool, "tool_input": input, "tool_use_id": "toolu_01",
		})
		return b
	}
	cases := []*bench{
		{name: "cordon version", args: []string{"version"}},
		{name: "hook claude-code Bash", args: []string{"hook", "claude-code"}, stdin: call("Bash", map[string]any{"command": "go test ./...", "description": "Run the tests"})},
		{name: "hook claude-code Read", args: []string{"hook", "claude-code"}, stdin: call("Read", map[string]any{"file_path": filepath.Join(ws, "main.go")})},
		{name: "hook claude-code Read .env (deny)", args: []string{"hook", "claude-code"}, stdin: call("Read", map[string]any{"file_path": filepath.Join(ws, ".env")})},
	}
	for _, c := range cases {
		if _, err := once(cordon, c, ws, env); err != nil {
			return err
		}
	}
	for range n {
		for _, c := range cases {
			d, err := once(cordon, c, ws, env)
			if err != nil {
				return err
			}
			c.times = append(c.times, d)
		}
	}
	base := cases[0]
	bp50, bp99 := pct(base.times, 50), pct(base.times, 99)
	fmt.Printf("%d calls each, interleaved\n", n)
	fmt.Printf("%-36s %9s %9s %10s %10s\n", "case", "p50 ms", "p99 ms", "p50 ratio", "p99 ratio")
	for _, c := range cases {
		p50, p99 := pct(c.times, 50), pct(c.times, 99)
		fmt.Printf("%-36s %9.2f %9.2f %9.2fx %9.2fx\n", c.name, ms(p50), ms(p99), float64(p50)/float64(bp50), float64(p99)/float64(bp99))
	}
	return nil
}

// once runs c once and returns its wall time; a failure is an error.
func once(cordon string, c *bench, dir string, env []string) (time.Duration, error) {
	cmd := exec.Command(cordon, c.args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = bytes.NewReader(c.stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s: %v: %s", c.name, err, out.String())
	}
	return d, nil
}

// pct is the p-th percentile of ds.
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
