package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StreamTransport is newline-delimited JSON-RPC over a reader and a writer
// (cordon mcp uses stdin and stdout), the SDK's IOTransport with one
// difference: a successful response whose result is large is framed around
// the result the SDK already encoded, instead of being encoded again. The
// SDK's encoder validates and compacts the result once more, byte by byte,
// which for a 2,000-line read_file is about a fifth of the server's time.
//
// Everything else (reading, requests, notifications, errors, small
// results) goes through the SDK's own connection. (Server also encodes a
// large text result in one pass, with fastTextResults.) So do all responses once
// the client has sent a JSON-RPC batch (protocol versions before
// 2025-06-18), because the SDK must collect the replies to a batch.
type StreamTransport struct {
	// Reader carries the client's messages.
	Reader io.ReadCloser
	// Writer receives the server's messages.
	Writer io.WriteCloser
}

// fastResultMin is the smallest result framed directly: below it, the
// SDK's second encoding costs too little to matter.
const fastResultMin = 4 << 10

// Connect implements mcp.Transport.
func (t *StreamTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	spy := &batchSpy{r: t.Reader, lineStart: true}
	w := &lockedWriter{w: t.Writer}
	inner, err := (&mcp.IOTransport{Reader: spy, Writer: w}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &streamConn{Connection: inner, w: w, spy: spy}, nil
}

// streamConn is the SDK's connection with the fast path for large results.
type streamConn struct {
	mcp.Connection
	w   *lockedWriter
	spy *batchSpy
}

// Write implements mcp.Connection.
func (c *streamConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || len(resp.Result) < fastResultMin || !resp.ID.IsValid() || c.spy.batched.Load() {
		return c.Connection.Write(ctx, msg)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	id, err := json.Marshal(resp.ID.Raw())
	if err != nil {
		return fmt.Errorf("marshaling response id: %w", err)
	}
	// resp.Result came from json.Marshal in the SDK: valid, compact JSON.
	const head, mid, tail = `{"jsonrpc":"2.0","id":`, `,"result":`, "}\n"
	b := make([]byte, 0, len(head)+len(id)+len(mid)+len(resp.Result)+len(tail))
	b = append(b, head...)
	b = append(b, id...)
	b = append(b, mid...)
	b = append(b, resp.Result...)
	b = append(b, tail...)
	_, err = c.w.Write(b)
	return err
}

// lockedWriter makes each Write atomic, so that the fast path and the
// SDK's connection (one Write per message) never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

// batchSpy passes the client's bytes through and notes whether a line ever
// began with '[', a JSON-RPC batch. A false alarm (a pretty-printed message
// with a line starting with '[') only turns the fast path off.
type batchSpy struct {
	r         io.ReadCloser
	lineStart bool // only touched by Read, which the SDK calls from one goroutine
	batched   atomic.Bool
}

func (s *batchSpy) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	for _, b := range p[:n] {
		switch {
		case b == '\n':
			s.lineStart = true
		case s.lineStart && (b == ' ' || b == '\t' || b == '\r'):
		case s.lineStart && b == '[':
			s.batched.Store(true)
			s.lineStart = false
		default:
			s.lineStart = false
		}
	}
	return n, err
}

func (s *batchSpy) Close() error { return s.r.Close() }

// fastText is a tools/call result made of one text item, in the same JSON
// as the SDK's CallToolResult: as a plain struct, encoding/json writes it
// in one pass over the text. The SDK's CallToolResult and TextContent
// marshal themselves, and encoding/json validates and compacts what a
// marshaler returns, so the SDK passes over the text three times.
type fastText struct {
	mcp.ResultBase
	Content    []fastTextItem `json:"content"`
	IsError    bool           `json:"isError,omitempty"`
	ResultType string         `json:"resultType,omitempty"`
}

type fastTextItem struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// fastTextResults is receiving middleware that replaces a large text-only
// tools/call result with the same result as a fastText.
func fastTextResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil && method == "tools/call" {
			if f := asFastText(res); f != nil {
				return f, nil
			}
		}
		return res, err
	}
}

// asFastText returns r as a fastText, or nil when r is anything but one
// large plain text item, or when the SDK would write a field that fastText
// does not have (it checks by encoding r without its content both ways).
func asFastText(r mcp.Result) *fastText {
	res, ok := r.(*mcp.CallToolResult)
	if !ok || res == nil || len(res.Content) != 1 || res.Meta != nil || res.StructuredContent != nil ||
		res.InputRequests != nil || res.RequestState != "" {
		return nil
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok || tc.Meta != nil || tc.Annotations != nil || len(tc.Text) < fastResultMin {
		return nil
	}
	bare := *res
	bare.Content = nil
	want, err := json.Marshal(&bare)
	if err != nil {
		return nil
	}
	var f fastText
	if err := json.Unmarshal(want, &f); err != nil {
		return nil
	}
	f.Content = nil
	if got, err := json.Marshal(&f); err != nil || !bytes.Equal(got, want) {
		return nil
	}
	f.Content = []fastTextItem{{Type: "text", Text: tc.Text}}
	return &f
}
