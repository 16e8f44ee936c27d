package mcpserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkReadFileRoundTrip measures one read_file call of a 2,000-line
// file through a real SDK client over the in-memory transport.
func BenchmarkReadFileRoundTrip(b *testing.B) {
	e := startBench(b)
	args := map[string]any{"path": "big.txt"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := e.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolReadFile, Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

func startBench(b *testing.B) *mcp.ClientSession {
	ws := b.TempDir()
	var sb strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&sb, "line %d: the quick brown fox jumps over the lazy dog %d\n", i, i*i)
	}
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	srv, err := New(Options{Policy: &policy.Policy{Mode: policy.ModeStandard, Profile: "development", Workspace: ws, Deny: []string{"**/.env"}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = srv.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// TestBenchmarkReport prints the figures of the benchmark; it asserts
// nothing. Run it with CORDON_BENCH=1 go test -run BenchmarkReport -v ./mcpserver/
func TestBenchmarkReport(t *testing.T) {
	if os.Getenv("CORDON_BENCH") != "1" {
		t.Skip("set CORDON_BENCH=1 to run the benchmark report")
	}
	const runs = 5
	goroot := strings.TrimSpace(string(must(exec.Command("go", "env", "GOROOT").Output())))
	src := filepath.Join(goroot, "src")
	fsys, err := workspace.New(&policy.Policy{Mode: policy.ModeStandard, Workspace: src, Deny: []string{"**/.env"}})
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	fsys.Limits.MaxResults = 1 << 30
	fsys.Limits.MaxOutputBytes = 1 << 40
	for _, q := range []struct {
		name, pattern string
		literal       bool
	}{
		{"literal", "func NewReader(", true},
		{"regex", `func \(\w+ \*\w+\) Close\(\) error`, false},
	} {
		var cordon, rg, grep []time.Duration
		var n int
		for i := 0; i < runs; i++ {
			start := time.Now()
			res, err := fsys.Grep(q.pattern, ".", workspace.GrepOptions{Literal: q.literal})
			if err != nil {
				t.Fatal(err)
			}
			cordon = append(cordon, time.Since(start))
			n = len(res.Matches)
			if res.Truncated {
				t.Fatal("truncated")
			}
		}
		rgArgs := []string{"-n", "--no-heading", "-e", q.pattern, src}
		grepArgs := []string{"-rnI", "-E", "-e", q.pattern, src}
		if q.literal {
			rgArgs = append([]string{"-F"}, rgArgs...)
			grepArgs = []string{"-rnIF", "-e", q.pattern, src}
		}
		rgN, grepN := 0, 0
		if _, err := exec.LookPath("rg"); err == nil {
			for i := 0; i < runs; i++ {
				start := time.Now()
				out, _ := exec.Command("rg", rgArgs...).Output()
				rg = append(rg, time.Since(start))
				rgN = strings.Count(string(out), "\n")
			}
		}
		for i := 0; i < runs; i++ {
			start := time.Now()
			out, _ := exec.Command("grep", grepArgs...).Output()
			grep = append(grep, time.Since(start))
			grepN = strings.Count(string(out), "\n")
		}
		line := fmt.Sprintf("grep %-7s %q over %s: cordon %v (%d matches)", q.name, q.pattern, src, median(cordon), n)
		if len(rg) > 0 {
			line += fmt.Sprintf(", ripgrep %v (%d), ratio cordon/rg %.2fx", median(rg), rgN, float64(median(cordon))/float64(median(rg)))
		}
		line += fmt.Sprintf(", grep -r %v (%d), ratio cordon/grep %.2fx", median(grep), grepN, float64(median(cordon))/float64(median(grep)))
		fmt.Println(line)
	}
	r := testing.Benchmark(BenchmarkReadFileRoundTrip)
	fmt.Printf("read_file MCP round trip (in-memory transport, 2000-line file): %v per call over %d calls\n", time.Duration(r.NsPerOp()), r.N)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
