// Command benchmcp prints the figures of the file tools' benchmark: grep for
// a literal and for a regex over the Go source tree ($(go env GOROOT)/src)
// with cordon's workspace.Grep, ripgrep (when installed: apt-get install
// ripgrep, for the benchmark only) and GNU grep -r, medians of one
// interleaved run each with the ratios; and the median of a read_file MCP
// round trip on a 2,000-line file through the official SDK client over the
// in-memory transport. It asserts nothing. Run it with:
//
//	go run ./internal/benchmcp [-runs 5]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/mcpserver"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	runs := flag.Int("runs", 5, "runs of each grep")
	calls := flag.Int("calls", 200, "read_file round trips")
	flag.Parse()
	if err := grepReport(*runs); err != nil {
		fmt.Fprintln(os.Stderr, "benchmcp:", err)
		os.Exit(1)
	}
	if err := readFileReport(*calls); err != nil {
		fmt.Fprintln(os.Stderr, "benchmcp:", err)
		os.Exit(1)
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// timed runs f and returns how long it took.
func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

func grepReport(runs int) error {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env GOROOT: %w", err)
	}
	src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	fsys, err := workspace.New(&policy.Policy{Mode: policy.ModeStandard, Workspace: src, Deny: []string{"**/.env"}})
	if err != nil {
		return err
	}
	defer fsys.Close()
	fsys.Limits.MaxResults = 1 << 30
	fsys.Limits.MaxOutputBytes = 1 << 40
	_, haveRg := exec.LookPath("rg")
	for _, q := range []struct {
		name, pattern string
		literal       bool
	}{
		{"literal", "func NewReader(", true},
		{"regex", `func \(\w+ \*\w+\) Close\(\) error`, false},
	} {
		rgArgs := []string{"-n", "--no-heading", "-e", q.pattern, src}
		grepArgs := []string{"-rnI", "-E", "-e", q.pattern, src}
		if q.literal {
			rgArgs = append([]string{"-F"}, rgArgs...)
			grepArgs = []string{"-rnIF", "-e", q.pattern, src}
		}
		var cordon, rg, grep []time.Duration
		var n, rgN, grepN int
		for i := 0; i < runs; i++ {
			d, err := timed(func() error {
				res, err := fsys.Grep(q.pattern, ".", workspace.GrepOptions{Literal: q.literal})
				if err == nil {
					n = len(res.Matches)
				}
				return err
			})
			if err != nil {
				return err
			}
			cordon = append(cordon, d)
			if haveRg == nil {
				d, _ = timed(func() error {
					out, err := exec.Command("rg", rgArgs...).Output()
					rgN = strings.Count(string(out), "\n")
					return err
				})
				rg = append(rg, d)
			}
			d, _ = timed(func() error {
				out, err := exec.Command("grep", grepArgs...).Output()
				grepN = strings.Count(string(out), "\n")
				return err
			})
			grep = append(grep, d)
		}
		line := fmt.Sprintf("grep %-7s %q: cordon %v (%d matches)", q.name, q.pattern, median(cordon), n)
		if len(rg) > 0 {
			line += fmt.Sprintf(", ripgrep %v (%d): %.2fx (target <= 2x)", median(rg), rgN, float64(median(cordon))/float64(median(rg)))
		} else {
			line += ", ripgrep not installed"
		}
		line += fmt.Sprintf(", grep -r %v (%d): %.2fx (target < 1x)", median(grep), grepN, float64(median(cordon))/float64(median(grep)))
		fmt.Println(line)
	}
	return nil
}

func readFileReport(calls int) error {
	ws, err := os.MkdirTemp("", "cordon-benchmcp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	var sb strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&sb, "line %d: the quick brown fox jumps over the lazy dog %d\n", i, i*i)
	}
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(sb.String()), 0o644); err != nil {
		return err
	}
	srv, err := mcpserver.New(mcpserver.Options{Policy: &policy.Policy{Mode: policy.ModeStandard, Workspace: ws, Deny: []string{"**/.env"}}})
	if err != nil {
		return err
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = srv.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "benchmcp", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	args := map[string]any{"path": "big.txt"}
	var ds []time.Duration
	for i := 0; i < calls+10; i++ {
		d, err := timed(func() error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolReadFile, Arguments: args})
			if err == nil && res.IsError {
				err = fmt.Errorf("read_file failed: %v", res.Content)
			}
			return err
		})
		if err != nil {
			return err
		}
		if i >= 10 {
			ds = append(ds, d)
		}
	}
	fmt.Printf("read_file MCP round trip (2,000 lines, in-memory transport): median %v over %d calls (target < 2ms)\n", median(ds), calls)
	return nil
}
