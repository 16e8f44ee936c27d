//go:build unix

package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// rawClient speaks JSON-RPC lines to a server.
type rawClient struct {
	t     testing.TB
	w     io.Writer
	lines chan []byte
}

func newRawClient(t testing.TB, w io.Writer, r *bufio.Reader) *rawClient {
	c := &rawClient{t: t, w: w, lines: make(chan []byte, 1024)}
	go func() {
		defer close(c.lines)
		for {
			b, err := r.ReadBytes('\n')
			if len(b) > 0 {
				c.lines <- b
			}
			if err != nil {
				return
			}
		}
	}()
	return c
}

func (c *rawClient) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, s+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// recv is the next line from the server, or nil when none comes within
// the wait (or the server closed its output).
func (c *rawClient) recv(wait time.Duration) []byte {
	select {
	case b := <-c.lines:
		return b
	case <-time.After(wait):
		return nil
	}
}

func (c *rawClient) initialize(version string) {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if b := c.recv(10 * time.Second); !bytes.Contains(b, []byte(`"id":"init","result"`)) {
		c.t.Fatalf("initialize: %q", b)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// untilID sends a ping with id and returns the lines that came before its
// reply; it fails the test when the reply does not come.
func (c *rawClient) untilID(id int, wait time.Duration) [][]byte {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, id)
	var before [][]byte
	for {
		b := c.recv(wait)
		if b == nil {
			c.t.Fatalf("no reply to ping %d within %s (the server stopped serving?); before it: %q", id, wait, before)
		}
		if string(bytes.TrimSpace(b)) == want {
			return before
		}
		before = append(before, b)
	}
}

// wireReply is a JSON-RPC response as sent.
type wireReply struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// replyKind summarises a reply as "CODE ID" ("ok ID" for a result), or a
// batch reply as its elements' kinds joined by " + ".
func replyKind(t testing.TB, b []byte) string {
	t.Helper()
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var elems []json.RawMessage
		if err := json.Unmarshal(b, &elems); err != nil {
			t.Fatalf("reply %q: %v", b, err)
		}
		var kinds []string
		for _, e := range elems {
			kinds = append(kinds, replyKind(t, e))
		}
		return "[" + strings.Join(kinds, " + ") + "]"
	}
	var r wireReply
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil || json.Unmarshal(b, &r) != nil || r.JSONRPC != "2.0" || members["id"] == nil || (r.Error == nil) == (r.Result == nil) {
		t.Fatalf("reply %q is not a JSON-RPC response with an id and a result or an error: %v", b, err)
	}
	if r.Error != nil {
		return fmt.Sprintf("%d %s", r.Error.Code, members["id"])
	}
	return "ok " + string(members["id"])
}

// malformedLines are lines a client may send by mistake, each with the
// reply it gets ("" for none): an error with the JSON-RPC code and the
// id, null when it cannot be read.
var malformedLines = []struct {
	line, want string
}{
	{`not json`, "-32700 null"},
	{`{"jsonrpc":"2.0","id":1,"method":"ping"`, "-32700 null"},
	{`{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, "-32700 null"},
	{"\xff\xfe", "-32700 null"},
	{`{"jsonrpc":"2.0","id":1,"method":"ping",}`, "-32700 null"},
	{`[{"jsonrpc":"2.0","id":1,"method":"ping"}`, "-32700 null"},
	{`{"jsonrpc":"1.0","id":7,"method":"ping"}`, "-32600 7"},
	{`{"id":8,"method":"ping"}`, "-32600 8"},
	{`{"jsonrpc":2,"id":"a","method":"ping"}`, `-32600 "a"`},
	{`{"JSONRPC":"2.0","id":"b","method":"ping"}`, `-32600 "b"`},
	{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, "-32600 null"},
	{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, "-32600 null"},
	{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, "-32600 null"},
	{`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, "-32600 null"},
	{`{"jsonrpc":"2.0","id":1e2,"method":"ping"}`, "-32600 null"},
	{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, "-32600 null"},
	{`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, "-32600 null"},
	{`{"jsonrpc":"2.0","id":-99999999999999999999,"method":"ping"}`, "-32600 null"},
	{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, "-32600 null"},
	{`{"jsonrpc":"2.0","id":9,"method":5}`, "-32600 9"},
	{`{"jsonrpc":"2.0","id":9,"method":null}`, "-32600 9"},
	{`{"jsonrpc":"2.0","id":10,"method":"ping","error":5}`, "-32600 10"},
	{`{"jsonrpc":"2.0","id":13,"method":"ping","params":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`, "-32600 13"},
	{`{}`, "-32600 null"},
	{`[]`, "-32600 null"},
	{`null`, "-32600 null"},
	{`42`, "-32600 null"},
	{`"x"`, "-32600 null"},
	{`true`, "-32600 null"},
	{`[1,2]`, "[-32600 null + -32600 null]"},
	{`[{"jsonrpc":"2.0","id":15,"method":"ping"},{"foo":1},{"jsonrpc":"2.0","id":15,"method":"ping"}]`, "[ok 15 + -32600 null + -32600 15]"},
	{`[{"jsonrpc":"2.0","method":"notifications/x"},{"method":"notifications/y"}]`, ""},
	{`{"jsonrpc":"2.0","id":"s","method":"no/such/method"}`, `-32601 "s"`},
	{`{"jsonrpc":"2.0","method":"notifications/x","params":5}`, ""},
	{`{"method":"notifications/initialized"}`, ""},
	{`{"jsonrpc":"1.0","method":"notifications/initialized"}`, ""},
	{`{"jsonrpc":"2.0","id":11,"result":{}}`, ""},
	{`{"jsonrpc":"2.0","id":{},"result":{}}`, ""},
	{`{"jsonrpc":"1.0","id":12,"error":{"code":1,"message":"x"}}`, ""},
	{`{"jsonrpc":"2.0","id":12,"error":5}`, ""},
	{`{"jsonrpc":"2.0","id":01,"method":"ping"}`, "-32700 null"},
	{`{"jsonrpc":"2.0","jsonrpc":"1.0","id":16,"method":"ping"}`, "-32600 16"},
	{`{"jsonrpc":"1.0","jsonrpc":"2.0","id":17,"method":"ping"}`, "ok 17"},
	{`{"\u006asonrpc":"2.0","id":18,"method":"ping"}`, "ok 18"},
	{`{"jsonrpc":"2.0","id":-9007199254740992,"method":"ping"}`, "ok -9007199254740992"},
	{`{"jsonrpc":"2.0","id":"` + strings.Repeat("\\\"", 100) + `","method":"ping"}`, `ok "` + strings.Repeat("\\\"", 100) + `"`},
	{"   \t\r", ""},
	{"", ""},
}

// TestMalformedLines: every malformed line gets the JSON-RPC error the
// specification names (or no reply, for a notification or a response),
// and the server answers the next request.
func TestMalformedLines(t *testing.T) {
	w, r := serveStream(t, t.TempDir())
	c := newRawClient(t, w, r)
	c.initialize("2025-03-26")
	expectMalformedLines(t, c)
}

// expectMalformedLines sends each of malformedLines on c, each followed by
// a ping, and checks the replies before the ping's: the error each line
// gets (or none), and that the server goes on serving.
func expectMalformedLines(t *testing.T, c *rawClient) {
	t.Helper()
	for i, tc := range malformedLines {
		c.send(tc.line)
		before := c.untilID(1000+i, 10*time.Second)
		if tc.want != "" && len(before) == 0 {
			// A valid request's reply may come after the ping's.
			if b := c.recv(5 * time.Second); b != nil {
				before = append(before, b)
			}
		}
		var got []string
		for _, b := range before {
			got = append(got, replyKind(t, b))
		}
		if tc.want == "" && len(got) != 0 || tc.want != "" && (len(got) != 1 || got[0] != tc.want) {
			t.Errorf("%.80q: replies %q, want [%q]", tc.line, got, tc.want)
		}
	}
}

// TestFrameLimit: a line longer than the limit is answered with an error
// naming the limit and the server goes on; a line at the limit is served.
func TestFrameLimit(t *testing.T) {
	const limit = 4 << 10
	ws := t.TempDir()
	w, r := serveStreamLimit(t, ws, limit)
	c := newRawClient(t, w, r)
	c.initialize("2025-06-18")
	write := func(id int, n int) string {
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"f.txt","content":"`, id)
		const tail = `"}}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	for _, tc := range []struct {
		line string
		want string
	}{
		{write(1, limit), "ok 1"},
		{"  " + write(2, limit) + "  ", "-32600 null"}, // spaces count
		{write(3, limit+1), "-32600 null"},
		{write(4, 10*limit), "-32600 null"},
		{write(5, 300), "ok 5"},
	} {
		c.send(tc.line)
		b := c.recv(10 * time.Second)
		if got := replyKind(t, b); got != tc.want {
			t.Errorf("%d-byte line: reply %s, want %s", len(tc.line), got, tc.want)
		}
		if strings.HasPrefix(tc.want, "-32600") && !bytes.Contains(b, []byte("limit of 4096 bytes")) {
			t.Errorf("%d-byte line: the error does not name the limit: %q", len(tc.line), b)
		}
		c.untilID(99, 10*time.Second)
	}
}

// TestReadLine: a line over the limit is read to its end without being
// kept, and the next line is read whole.
func TestReadLine(t *testing.T) {
	long := strings.Repeat("y", 1<<20)
	for _, tc := range []struct {
		in    string
		limit int
		want  []string // "!" for a line over the limit
	}{
		{"a\nbb\n\nccc", 2, []string{"a", "bb", "", "!"}},
		{"a\r\nbb\n", 2, []string{"a\r", "bb", ""}},
		{long + "\nok\n" + long, 100, []string{"!", "ok", "!"}},
		{long + "\n", 1 << 20, []string{long, ""}},
		{"", 10, []string{""}},
	} {
		br := bufio.NewReaderSize(strings.NewReader(tc.in), 16)
		var got []string
		var buf []byte
		for {
			line, over, err := readLine(br, buf[:0], tc.limit)
			if over {
				got = append(got, "!")
				if cap(line) > 2*tc.limit+64 {
					t.Errorf("%.20q: a line over the limit of %d grew the buffer to %d", tc.in, tc.limit, cap(line))
				}
			} else {
				got = append(got, string(line))
			}
			buf = line
			if err != nil {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%.20q, limit %d: lines %.60q, want %.60q", tc.in, tc.limit, got, tc.want)
		}
	}
}

// TestAnswersAfterEndOfInput: a client that writes its requests and closes
// its end at once (printf ... | cordon mcp) still gets every answer: the
// server stays up until the requests it read are answered.
func TestAnswersAfterEndOfInput(t *testing.T) {
	w, r := serveStream(t, t.TempDir())
	c := newRawClient(t, w, r)
	c.initialize("2025-06-18")
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_dir","arguments":{"path":"."}}}`)
	c.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for range 2 {
		b := c.recv(10 * time.Second)
		if b == nil {
			break
		}
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(b, &m); err == nil {
			got[string(m.ID)] = true
		}
	}
	if !got["7"] || !got["8"] {
		t.Errorf("answers after the end of the input: %v, want ids 7 and 8", got)
	}
}
