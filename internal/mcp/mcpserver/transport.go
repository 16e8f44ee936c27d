package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StreamTransport is newline-delimited JSON-RPC over a reader and a writer
// (cordon mcp uses stdin and stdout): one message, or a JSON-RPC batch
// (protocol versions before 2025-06-18), per line, as the MCP stdio
// transport specifies. It replaces the SDK's IOTransport, which ends the
// session on the first line it cannot decode, and bounds a line at
// 16 MiB, below a write_file of the write limit.
//
// Reading: each line is decoded on its own, with the SDK's decoder
// (jsonrpc.DecodeMessage), after checks the SDK leaves out (see
// decodeOne). A line that is not a valid message is answered with the
// JSON-RPC error the specification names (-32700 for invalid JSON, -32600
// for valid JSON that is not a valid request, with the id when it can be
// read and null otherwise), or not at all when it is a notification or a
// response; a line longer than MaxFrameBytes is discarded as it arrives
// and answered with -32600. Either way the server goes on with the next
// line. Only the line being decoded is held in memory.
//
// Writing: a successful response whose result is large is framed around
// the result the SDK already encoded, instead of being encoded again. The
// SDK's encoder validates and compacts the result once more, byte by byte,
// which for a 2,000-line read_file is about a fifth of the server's time.
// (Server also encodes a large text result in one pass, with
// fastTextResults.) The replies to a batch are collected and written
// together as one array.
type StreamTransport struct {
	// Reader carries the client's messages.
	Reader io.ReadCloser
	// Writer receives the server's messages.
	Writer io.WriteCloser
	// MaxFrameBytes bounds one line; 0 means MaxFrameBytes.
	MaxFrameBytes int
}

// fastResultMin is the smallest result framed directly: below it, the
// SDK's second encoding costs too little to matter.
const fastResultMin = 4 << 10

// keepLineBuffer is the largest line buffer kept for the next line; a
// larger one, left by a large write_file, goes back to the heap.
const keepLineBuffer = 1 << 20

// Connect implements mcp.Transport.
func (t *StreamTransport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxFrameBytes
	if limit <= 0 {
		limit = MaxFrameBytes
	}
	c := &streamConn{
		r:        t.Reader,
		w:        &lockedWriter{w: t.Writer},
		limit:    limit,
		incoming: make(chan incoming),
		closed:   make(chan struct{}),
		open:     map[jsonrpc.ID]bool{},
		answered: make(chan struct{}, 1),
	}
	go c.readLoop()
	return c, nil
}

// streamConn is the connection of a StreamTransport.
type streamConn struct {
	r     io.ReadCloser
	w     *lockedWriter
	limit int

	// incoming carries the messages of each line from readLoop to Read,
	// then the error that ended reading.
	incoming chan incoming
	queue    []jsonrpc.Message // the rest of a batch; only Read touches it

	batchMu sync.Mutex
	batches map[jsonrpc.ID]batchSlot // requests of batches not yet answered

	// open are the requests read and not yet answered: at the end of the
	// input, the connection stays up until they are (a client that writes
	// its requests and closes its end still gets every answer).
	openMu   sync.Mutex
	open     map[jsonrpc.ID]bool
	answered chan struct{} // signalled when open shrinks

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

type incoming struct {
	msgs []jsonrpc.Message
	err  error
}

// batch collects the replies to one batch: an encoded reply per request
// (or per malformed element) in order, and how many are still missing.
type batch struct {
	replies [][]byte
	missing int
}

type batchSlot struct {
	b *batch
	i int
}

// SessionID implements mcp.Connection.
func (c *streamConn) SessionID() string { return "" }

// Read implements mcp.Connection.
func (c *streamConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case in := <-c.incoming:
		if in.err != nil {
			return nil, in.err
		}
		c.queue = in.msgs[1:]
		return in.msgs[0], nil
	case <-c.closed:
		return nil, io.EOF
	}
}

// Close implements mcp.Connection.
func (c *streamConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
		close(c.closed)
	})
	return c.closeErr
}

// readLoop reads the client's lines until the reader fails (io.EOF when
// the client closes it), handing the messages of each line to Read.
func (c *streamConn) readLoop() {
	br := bufio.NewReaderSize(c.r, 64<<10)
	var buf []byte
	for {
		line, over, err := readLine(br, buf[:0], c.limit)
		var msgs []jsonrpc.Message
		if over {
			c.reply(tooLarge(c.limit).encode())
		} else if line = trimSpace(line); len(line) > 0 {
			msgs = c.decodeLine(line)
		}
		if cap(line) <= keepLineBuffer {
			buf = line
		} else {
			buf = nil
		}
		if len(msgs) > 0 {
			c.track(msgs)
			select {
			case c.incoming <- incoming{msgs: msgs}:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			c.awaitAnswers(MaxTimeout + 10*time.Second)
			select {
			case c.incoming <- incoming{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// track records the requests among msgs as open, and forgets those a
// cancellation names (no answer is due for them).
func (c *streamConn) track(msgs []jsonrpc.Message) {
	c.openMu.Lock()
	defer c.openMu.Unlock()
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		if req.ID.IsValid() {
			c.open[req.ID] = true
			continue
		}
		if req.Method == "notifications/cancelled" {
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
					delete(c.open, id)
				}
			}
		}
	}
	c.signalAnswered()
}

// answer marks the request id answered.
func (c *streamConn) answer(id jsonrpc.ID) {
	c.openMu.Lock()
	delete(c.open, id)
	c.openMu.Unlock()
	c.signalAnswered()
}

func (c *streamConn) signalAnswered() {
	select {
	case c.answered <- struct{}{}:
	default:
	}
}

// awaitAnswers waits, at the end of the input, until every open request is
// answered, the connection is closed, or max has passed.
func (c *streamConn) awaitAnswers(max time.Duration) {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	for {
		c.openMu.Lock()
		n := len(c.open)
		c.openMu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-c.closed:
			return
		case <-deadline.C:
			return
		}
	}
}

// readLine appends the next line of br, without its newline, to buf. A
// line longer than limit is read to its end but not kept: over is set and
// line is empty. err is set, with the last line, at the end of br.
func readLine(br *bufio.Reader, buf []byte, limit int) (line []byte, over bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if n := len(chunk); err == nil && n > 0 {
			chunk = chunk[:n-1]
		}
		if !over && len(buf)+len(chunk) > limit {
			over, buf = true, buf[:0]
		}
		if !over {
			if need := len(buf) + len(chunk); need > cap(buf) {
				// Double, not append's 1.25 for large slices: a
				// 100 MB line leaves about 100 MB of smaller buffers
				// behind, not 400.
				nb := make([]byte, len(buf), min(max(2*cap(buf), need, 4<<10), limit))
				copy(nb, buf)
				buf = nb
			}
			buf = append(buf, chunk...)
		}
		if err != bufio.ErrBufferFull {
			return buf, over, err
		}
	}
}

// decodeLine returns the messages of one non-empty line, after answering
// the malformed ones.
func (c *streamConn) decodeLine(line []byte) []jsonrpc.Message {
	if line[0] != '[' {
		m, ferr := decodeOne(line, false)
		if ferr != nil {
			c.reply(ferr.encode())
		}
		if m == nil {
			return nil
		}
		if m.id.IsValid() && c.pendingInBatch(m.id) {
			c.reply((&frameError{id: idJSON(m.id), code: jsonrpc.CodeInvalidRequest,
				msg: "invalid request: the id is already in use by a request of a batch not yet answered"}).encode())
			return nil
		}
		return []jsonrpc.Message{m.msg}
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(line, &elems); err != nil {
		code, msg := int64(jsonrpc.CodeInvalidRequest), "invalid request: "+err.Error()
		if !json.Valid(line) {
			code, msg = jsonrpc.CodeParseError, "parse error: the line is not valid JSON"
		}
		c.reply((&frameError{code: code, msg: msg}).encode())
		return nil
	}
	if len(elems) == 0 {
		c.reply((&frameError{code: jsonrpc.CodeInvalidRequest, msg: "invalid request: an empty batch"}).encode())
		return nil
	}
	// Each element is a message of its own: the well-formed ones are
	// served, the malformed ones answered, and the replies to the batch go
	// out together, as one array.
	decoded := make([]*message, len(elems))
	errs := make([]*frameError, len(elems))
	for i, raw := range elems {
		decoded[i], errs[i] = decodeOne(raw, true)
	}
	b := &batch{}
	ids := make(map[jsonrpc.ID]int)
	var msgs []jsonrpc.Message
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	for i, m := range decoded {
		ferr := errs[i]
		if m != nil && m.id.IsValid() {
			if _, dup := ids[m.id]; dup || c.batches[m.id].b != nil {
				m, ferr = nil, &frameError{id: idJSON(m.id), code: jsonrpc.CodeInvalidRequest,
					msg: "invalid request: the id is already in use by another request of this batch or of a batch not yet answered"}
			}
		}
		switch {
		case ferr != nil:
			b.replies = append(b.replies, ferr.encode())
		case m != nil && m.id.IsValid():
			ids[m.id] = len(b.replies)
			b.replies = append(b.replies, nil)
			b.missing++
			msgs = append(msgs, m.msg)
		case m != nil:
			msgs = append(msgs, m.msg)
		}
	}
	if b.missing == 0 {
		if len(b.replies) > 0 {
			c.reply(joinBatch(b.replies))
		}
		return msgs
	}
	if c.batches == nil {
		c.batches = make(map[jsonrpc.ID]batchSlot)
	}
	for id, i := range ids {
		c.batches[id] = batchSlot{b, i}
	}
	return msgs
}

func (c *streamConn) pendingInBatch(id jsonrpc.ID) bool {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	_, ok := c.batches[id]
	return ok
}

// idJSON is a valid id as JSON.
func idJSON(id jsonrpc.ID) json.RawMessage {
	b, err := json.Marshal(id.Raw())
	if err != nil {
		return nil
	}
	return b
}

// joinBatch is the array of replies, with a newline.
func joinBatch(replies [][]byte) []byte {
	n := 2
	for _, r := range replies {
		n += len(r) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, r := range replies {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	return append(out, ']', '\n')
}

// reply writes one line (a newline is added when missing). A failed write
// is left to the next Write, which fails the same way and ends the session.
func (c *streamConn) reply(b []byte) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	_, _ = c.w.Write(b)
}

// Write implements mcp.Connection.
func (c *streamConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	resp, isResp := msg.(*jsonrpc.Response)
	var b []byte
	var err error
	if isResp {
		b, err = encodeResponse(resp)
	} else {
		b, err = jsonrpc.EncodeMessage(msg)
	}
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	if isResp && resp.ID.IsValid() {
		defer c.answer(resp.ID)
		c.batchMu.Lock()
		slot, inBatch := c.batches[resp.ID]
		if inBatch {
			delete(c.batches, resp.ID)
			slot.b.replies[slot.i] = b
			slot.b.missing--
			if slot.b.missing > 0 {
				c.batchMu.Unlock()
				return nil
			}
			b = joinBatch(slot.b.replies)
		}
		c.batchMu.Unlock()
		if inBatch {
			_, err = c.w.Write(b)
			return err
		}
	}
	_, err = c.w.Write(append(b, '\n'))
	return err
}

// encodeResponse encodes resp as the SDK does, framing a large successful
// result as it is, without encoding it again.
func encodeResponse(resp *jsonrpc.Response) ([]byte, error) {
	if resp.Error != nil || len(resp.Result) < fastResultMin || !resp.ID.IsValid() {
		return jsonrpc.EncodeMessage(resp)
	}
	id, err := json.Marshal(resp.ID.Raw())
	if err != nil {
		return nil, err
	}
	// resp.Result came from json.Marshal in the SDK: valid, compact JSON.
	const head, mid, tail = `{"jsonrpc":"2.0","id":`, `,"result":`, "}"
	b := make([]byte, 0, len(head)+len(id)+len(mid)+len(resp.Result)+len(tail)+1) // +1: Write's newline
	b = append(b, head...)
	b = append(b, id...)
	b = append(b, mid...)
	b = append(b, resp.Result...)
	b = append(b, tail...)
	return b, nil
}

// lockedWriter makes each Write atomic, so that replies written by the
// reading goroutine and by handlers never interleave.
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
