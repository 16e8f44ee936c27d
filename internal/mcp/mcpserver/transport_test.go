//go:build unix

package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigWorkspace is a workspace with big.txt, a 2,000-line file.
func bigWorkspace(t testing.TB) string {
	t.Helper()
	ws := t.TempDir()
	var sb strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&sb, "line %d: <tag> & \"quotes\" \\ tab\t é %d\n", i, i*i)
	}
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

// serveStream runs a server for ws over a StreamTransport on pipes and
// returns the client's ends.
func serveStream(t testing.TB, ws string) (toServer io.WriteCloser, fromServer *bufio.Reader) {
	t.Helper()
	return serveStreamLimit(t, ws, 0)
}

// serveStreamLimit is serveStream with a StreamTransport's MaxFrameBytes.
func serveStreamLimit(t testing.TB, ws string, limit int) (toServer io.WriteCloser, fromServer *bufio.Reader) {
	t.Helper()
	srv, err := New(Options{Policy: &policy.Policy{Mode: policy.ModeStandard, Workspace: ws}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(ctx, &StreamTransport{Reader: inR, Writer: outW, MaxFrameBytes: limit})
		outW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("server did not stop")
		}
	})
	return inW, bufio.NewReaderSize(outR, 1<<20)
}

// TestStreamTransportSDKClient: every tool result through the fast path
// decodes in the official SDK client exactly as the SDK's own transport
// gives it.
func TestStreamTransportSDKClient(t *testing.T) {
	ws := bigWorkspace(t)
	call := func(t *testing.T, tr mcp.Transport, args map[string]any) string {
		ctx := context.Background()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolReadFile, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("read_file: %v %v", err, res)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	for _, args := range []map[string]any{{"path": "big.txt"}, {"path": "big.txt", "start_line": 5, "end_line": 6}} {
		w, r := serveStream(t, ws)
		fast := call(t, &mcp.IOTransport{Reader: io.NopCloser(r), Writer: w}, args)
		sdkSrv, err := New(Options{Policy: &policy.Policy{Mode: policy.ModeStandard, Workspace: ws}})
		if err != nil {
			t.Fatal(err)
		}
		st, ct := mcp.NewInMemoryTransports()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _ = sdkSrv.Run(ctx, st) }()
		slow := call(t, ct, args)
		cancel()
		sdkSrv.Close()
		if fast != slow {
			t.Errorf("%v: the fast path gave %d bytes, the SDK's transport %d; they differ", args, len(fast), len(slow))
		}
		if !strings.Contains(fast, `<tag> & "quotes" \ tab`+"\t é") {
			t.Errorf("%v: text not preserved: %.200q", args, fast)
		}
	}
}

// TestStreamTransportBatch: once a client sends a JSON-RPC batch (allowed
// before protocol 2025-06-18), the replies to it arrive together as one
// array, large results included; a request after it still works.
func TestStreamTransportBatch(t *testing.T) {
	w, r := serveStream(t, bigWorkspace(t))
	send := func(s string) {
		if _, err := io.WriteString(w, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() []byte {
		line := make(chan []byte, 1)
		go func() { b, _ := r.ReadBytes('\n'); line <- b }()
		select {
		case b := <-line:
			return b
		case <-time.After(10 * time.Second):
			t.Fatal("no reply within 10s")
			return nil
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	recv()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"big.txt"}}},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"file_info","arguments":{"path":"big.txt"}}}]`)
	var batch []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if b := recv(); json.Unmarshal(b, &batch) != nil || len(batch) != 2 {
		t.Fatalf("want one array with 2 replies, got %.300q", b)
	}
	if ids := []int{batch[0].ID, batch[1].ID}; !(ids[0] == 2 && ids[1] == 3 || ids[0] == 3 && ids[1] == 2) {
		t.Errorf("batch reply ids %v", ids)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"big.txt"}}}`)
	var one struct {
		ID     int `json:"id"`
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if b := recv(); json.Unmarshal(b, &one) != nil || one.ID != 4 || len(one.Result.Content) != 1 || !strings.HasPrefix(one.Result.Content[0].Text, "1:") {
		t.Errorf("reply after the batch: %.300q", b)
	}
}

// sdkEncode encodes v as the SDK's JSON-RPC layer does (json.Encoder
// without HTML escaping, trailing newline trimmed).
func sdkEncode(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// TestFastText: a large text-only result encodes, as a fastText, to the
// same JSON as the SDK's CallToolResult (byte for byte unless the text has
// characters the SDK escapes as \u003c and the like); any other result is
// left to the SDK.
func TestFastText(t *testing.T) {
	big := strings.Repeat("line: \"quoted\" \\ tab\t é \u2028 end\n", 200)
	withResultType := func(s string) *mcp.CallToolResult {
		var r mcp.CallToolResult
		if err := json.Unmarshal([]byte(`{"content":[{"type":"text","text":`+strconvQuote(t, s)+`}],"resultType":"complete"}`), &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	for _, tc := range []struct {
		name    string
		res     *mcp.CallToolResult
		fast    bool
		sameRaw bool
	}{
		{"large text", &mcp.CallToolResult{Content: text(big)}, true, true},
		{"large error", &mcp.CallToolResult{Content: text(big), IsError: true}, true, true},
		{"result type set by the SDK", withResultType(big), true, true},
		{"html characters", &mcp.CallToolResult{Content: text(big + "<a href='x'>&amp;</a>")}, true, false},
		{"invalid utf-8", &mcp.CallToolResult{Content: text(big + "\xff\xfe")}, true, true},
		{"small text", &mcp.CallToolResult{Content: text("short")}, false, false},
		{"two items", &mcp.CallToolResult{Content: append(text(big), text(big)...)}, false, false},
		{"meta", &mcp.CallToolResult{Content: text(big), Meta: mcp.Meta{"k": "v"}}, false, false},
		{"structured", &mcp.CallToolResult{Content: text(big), StructuredContent: map[string]any{"a": 1}}, false, false},
		{"annotated text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: big, Annotations: &mcp.Annotations{Priority: 1}}}}, false, false},
		{"image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte(big), MIMEType: "image/png"}}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := asFastText(tc.res)
			if (f != nil) != tc.fast {
				t.Fatalf("asFastText = %v, want fast path %v", f != nil, tc.fast)
			}
			if f == nil {
				return
			}
			want, got := sdkEncode(t, tc.res), sdkEncode(t, f)
			if tc.sameRaw && !bytes.Equal(got, want) {
				t.Errorf("encodings differ:\nfast %.300s\nsdk  %.300s", got, want)
			}
			var wv, gv any
			if err := json.Unmarshal(want, &wv); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got, &gv); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gv, wv) {
				t.Errorf("decoded results differ:\nfast %.300s\nsdk  %.300s", got, want)
			}
		})
	}
}

func strconvQuote(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
