//go:build unix

package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
)

// FuzzFrames sends arbitrary bytes to a server as lines, each followed by
// a ping. Property: the server never stops serving (every ping is
// answered), every line it writes is a JSON-RPC response (or a batch of
// them) or a message of its own, and it writes at most one response line
// per line it was sent. run_command is removed, so no input runs a
// command.
func FuzzFrames(f *testing.F) {
	for _, tc := range malformedLines {
		f.Add([]byte(tc.line))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a.txt","content":"x\n"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt","start_line":-1}}}`,
		`[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"tools/list"}]`,
		"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}",
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
	} {
		f.Add([]byte(s))
	}
	srv, err := New(Options{Policy: &policy.Policy{Mode: policy.ModeStandard, Workspace: f.TempDir()}})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Close()
	srv.MCP().RemoveTools(ToolRunCommand)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(ctx, &StreamTransport{Reader: inR, Writer: outW})
		outW.Close()
	}()
	defer func() {
		cancel()
		inW.Close()
		<-done
	}()
	c := newRawClient(f, inW, bufio.NewReaderSize(outR, 1<<20))
	c.initialize("2025-03-26")
	nonce := time.Now().UnixNano()
	var pings, sent, replies int
	f.Fuzz(func(t *testing.T, in []byte) {
		c.t = t
		sent += bytes.Count(in, []byte{'\n'}) + 1
		wrote := make(chan error, 1)
		go func() { _, err := inW.Write(append(in, '\n')); wrote <- err }()
		select {
		case err := <-wrote:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			buf := make([]byte, 1<<20)
			t.Fatalf("%q: the server stopped reading\n%s", in, buf[:runtime.Stack(buf, true)])
		}
		pings++
		id := fmt.Sprintf("ping-%d-%d", nonce, pings)
		c.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"ping"}`)
		for {
			b := c.recv(10 * time.Second)
			if b == nil {
				t.Fatalf("%q: no reply to the ping that followed (the server stopped serving?)", in)
			}
			var r struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if bytes.HasPrefix(b, []byte("[")) {
				var elems []wireReply
				if err := json.Unmarshal(b, &elems); err != nil || len(elems) == 0 {
					t.Fatalf("%q: reply %q is not a batch of responses", in, b)
				}
			} else if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("%q: reply %q is not JSON: %v", in, b, err)
			}
			if string(r.ID) == `"`+id+`"` {
				break
			}
			if r.Method != "" {
				continue // a message of the server's own
			}
			replyKind(t, b) // a response with an id and a result or an error
			if replies++; replies > sent {
				t.Fatalf("%q: %d response lines to %d lines", in, replies, sent)
			}
		}
	})
}
