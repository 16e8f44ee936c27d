//go:build unix

package mcpserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
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
