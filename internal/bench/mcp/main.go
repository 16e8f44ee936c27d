//go:build unix

// Command benchmcp prints the figures of the file tools' benchmark: grep for
// a literal and for a regex over the Go source tree ($(go env GOROOT)/src)
// with cordon's workspace.Grep, ripgrep (when installed: apt-get install
// ripgrep, for the benchmark only) and GNU grep -r, medians of one
// interleaved run each with the ratios; find_files of "**/*_test.go" there
// against find -name; and the median of a read_file MCP
// round trip on a 2,000-line file, three ways (see readFileReport). It
// asserts nothing. Run it from the module root with:
//
//	go run ./internal/bench/mcp [-runs 5]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/internal/mcp/mcpserver"
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
	// find_files: cordon's walk applies the deny rules and every
	// .gitignore on the way; find(1) only matches names.
	var cordon, find []time.Duration
	var n, findN int
	for i := 0; i < runs; i++ {
		d, err := timed(func() error {
			res, err := fsys.Find(".", "**/*_test.go", workspace.FindOptions{})
			if err == nil {
				n = len(res.Paths)
			}
			return err
		})
		if err != nil {
			return err
		}
		cordon = append(cordon, d)
		d, _ = timed(func() error {
			out, err := exec.Command("find", src, "-name", "*_test.go").Output()
			findN = strings.Count(string(out), "\n")
			return err
		})
		find = append(find, d)
	}
	fmt.Printf("find_files \"**/*_test.go\": cordon %v (%d paths), find -name %v (%d): %.2fx\n", median(cordon), n, median(find), findN, float64(median(cordon))/float64(median(find)))
	return nil
}

// roundTrip is one way of making a read_file call; it returns the call's
// result text length, so a broken setup cannot pass unnoticed.
type roundTrip struct {
	name string
	call func() (int, error)
}

// readFileReport measures a read_file MCP round trip on a 2,000-line file
// three ways, interleaved: the SDK client and server in one process over the
// in-memory transport; the SDK client driving the real `cordon mcp`
// subprocess over stdio; and a minimal JSON-RPC client that writes the
// request line to the same subprocess and reads the response line (the
// server's own latency; the SDK client's decoding is its own cost).
func readFileReport(calls int) error {
	tmp, err := os.MkdirTemp("", "cordon-benchmcp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ws := filepath.Join(tmp, "ws")
	home := filepath.Join(tmp, "home")
	for _, d := range []string{ws, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	var sb strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&sb, "line %d: the quick brown fox jumps over the lazy dog %d\n", i, i*i)
	}
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(sb.String()), 0o644); err != nil {
		return err
	}
	cordon := filepath.Join(tmp, "cordon")
	b := exec.Command("go", "build", "-o", tmp+string(filepath.Separator), "./cmd/...")
	b.Stderr = os.Stderr
	b.Env = append(os.Environ(), "CGO_ENABLED=0")
	if err := b.Run(); err != nil {
		return fmt.Errorf("building cordon: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := map[string]any{"path": "big.txt"}
	sdkCall := func(cs *mcp.ClientSession) func() (int, error) {
		return func() (int, error) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolReadFile, Arguments: args})
			if err != nil {
				return 0, err
			}
			if res.IsError || len(res.Content) != 1 {
				return 0, fmt.Errorf("read_file failed: %v", res.Content)
			}
			return len(res.Content[0].(*mcp.TextContent).Text), nil
		}
	}

	// 1. In one process, in-memory transport.
	srv, err := mcpserver.New(mcpserver.Options{Policy: &policy.Policy{Mode: policy.ModeStandard, Workspace: ws, Deny: []string{"**/.env"}}})
	if err != nil {
		return err
	}
	defer srv.Close()
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = srv.Run(ctx, st) }()
	inMem, err := mcp.NewClient(&mcp.Implementation{Name: "benchmcp", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return err
	}
	defer inMem.Close()

	// 2. and 3. The real binary over stdio.
	mcpCmd := func() *exec.Cmd {
		c := exec.Command(cordon, "mcp")
		c.Dir = ws
		c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".state")}
		c.Stderr = os.Stderr
		return c
	}
	stdio, err := mcp.NewClient(&mcp.Implementation{Name: "benchmcp", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: mcpCmd()}, nil)
	if err != nil {
		return fmt.Errorf("starting cordon mcp: %w", err)
	}
	defer stdio.Close()
	raw, err := startRaw(mcpCmd())
	if err != nil {
		return err
	}
	defer raw.close()

	setups := []roundTrip{
		{"SDK client, in-process, in-memory transport", sdkCall(inMem)},
		{"SDK client, cordon mcp over stdio", sdkCall(stdio)},
		{"minimal client, cordon mcp over stdio", raw.readFile},
	}
	// One setup after the other, not interleaved: on two cores a setup's
	// garbage collection would land in the next one's timing.
	times := make([][]time.Duration, len(setups))
	for j, su := range setups {
		runtime.GC()
		time.Sleep(100 * time.Millisecond)
		for i := 0; i < calls+10; i++ {
			start := time.Now()
			n, err := su.call()
			d := time.Since(start)
			if err != nil {
				return fmt.Errorf("%s: %w", su.name, err)
			}
			if n < 100_000 {
				return fmt.Errorf("%s: read_file returned only %d bytes", su.name, n)
			}
			if i >= 10 {
				times[j] = append(times[j], d)
			}
		}
	}
	for j, su := range setups {
		fmt.Printf("read_file round trip (2,000 lines), %-44s median %v over %d calls (target < 2ms)\n", su.name+":", median(times[j]), calls)
	}
	return nodeReport(cordon, ws, home, calls)
}

// nodeReport runs the same round trip with the official TypeScript SDK
// client, the one Node-based agents use, when node and the test client's
// node_modules (npm ci in internal/mcp/mcpserver/testdata/client) are there.
func nodeReport(cordon, ws, home string, calls int) error {
	dir := filepath.Join("internal", "mcp", "mcpserver", "testdata", "client")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil || serr != nil {
		fmt.Println("read_file round trip, TypeScript SDK client: skipped (needs node and `npm ci` in " + dir + ")")
		return nil
	}
	cmd := exec.Command(node, filepath.Join(dir, "bench.mjs"), cordon, ws, "big.txt", fmt.Sprint(calls))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".state")}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("node bench.mjs: %w", err)
	}
	var r struct {
		MedianMS float64 `json:"median_ms"`
		Bytes    int     `json:"bytes"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.Bytes < 100_000 {
		return fmt.Errorf("node bench.mjs printed %q (%v)", out, err)
	}
	fmt.Printf("read_file round trip (2,000 lines), %-44s median %.3fms over %d calls (target < 2ms)\n", "TypeScript SDK client, cordon mcp over stdio:", r.MedianMS, calls)
	return nil
}

// rawClient speaks newline-delimited JSON-RPC to cordon mcp directly.
type rawClient struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

func startRaw(cmd *exec.Cmd) (*rawClient, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting cordon mcp: %w", err)
	}
	c := &rawClient{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	if _, err := c.roundTrip(`"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`); err != nil {
		c.close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// roundTrip sends one request (the members after "id") and returns the
// response line.
func (c *rawClient) roundTrip(members string) ([]byte, error) {
	c.id++
	if _, err := fmt.Fprintf(c.in, `{"jsonrpc":"2.0","id":%d,%s}`+"\n", c.id, members); err != nil {
		return nil, err
	}
	return c.out.ReadSlice('\n') // no copy: the reply is checked before the next call
}

func (c *rawClient) readFile() (int, error) {
	line, err := c.roundTrip(`"method":"tools/call","params":{"name":"read_file","arguments":{"path":"big.txt"}}`)
	if err != nil {
		return 0, err
	}
	if !bytes.HasPrefix(line, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"1:`, c.id))) {
		return 0, fmt.Errorf("unexpected reply %.200q", line)
	}
	return len(line), nil
}

func (c *rawClient) close() {
	c.in.Close()
	_ = c.cmd.Wait()
}
