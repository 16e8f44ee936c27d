package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxFrameBytes is the default bound on one incoming message (one line,
// without its newline): 256 MiB. It holds a write_file of the whole write
// limit (workspace.DefaultLimits.MaxWriteBytes, 100 MiB) whose JSON
// encoding is up to 2.5 times the content (ordinary text, with its
// quotes, backslashes and newlines escaped, grows by a few percent; only
// content made mostly of control characters, escaped as \u00XX, grows
// more). A longer line is discarded as it arrives, never buffered, and
// answered with an invalid-request error.
const MaxFrameBytes = 256 << 20

// maxIDMagnitude bounds a numeric request id: 2^53, the integers a
// float64 (the SDK's decoding of ids, and JavaScript's numbers) holds
// exactly, so the reply carries the id the client sent.
const maxIDMagnitude = 1 << 53

// frameError is the reply to a malformed message: a JSON-RPC error
// response with the message's id, or null when it cannot be read.
type frameError struct {
	id   json.RawMessage // a valid id as sent, or nil for null
	code int64
	msg  string
}

// encode is the error response, without a newline.
func (e *frameError) encode() []byte {
	id := e.id
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, &jsonrpc.Error{Code: e.code, Message: e.msg}})
	if err != nil { // cannot happen: id is null, a JSON string or an integer
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":"invalid request"}}`, e.code)
	}
	return b
}

// tooLarge is the reply to a line longer than limit.
func tooLarge(limit int) *frameError {
	return &frameError{code: jsonrpc.CodeInvalidRequest,
		msg: fmt.Sprintf("invalid request: the message is longer than cordon's limit of %d bytes (%d MiB) per line; it was discarded", limit, limit>>20)}
}

// message is one decoded, well-formed message of a line, with the id as
// the client wrote it when the message is a request.
type message struct {
	msg jsonrpc.Message
	id  jsonrpc.ID // the request's id; invalid for a notification or response
}

// decodeOne decodes one message (a line, or one element of a batch) with
// the SDK's own decoder, after the checks the SDK leaves out: a numeric
// id must be an integer the reply can carry unchanged, a method must be a
// string, and a request's id must not be null. A malformed message gives
// a frameError to send back, or, for what the client sent as a
// notification or a response, which JSON-RPC never answers, neither.
// wellFormedJSON says whether raw is known to be valid JSON (an element of
// a batch that parsed); otherwise decodeOne checks it first.
func decodeOne(raw []byte, wellFormedJSON bool) (*message, *frameError) {
	// The SDK's decoder lets some invalid JSON through (text after the
	// message, for one), so the standard library's check comes first.
	if !wellFormedJSON && !json.Valid(raw) {
		return nil, &frameError{code: jsonrpc.CodeParseError, msg: "parse error: the line is not one valid JSON value"}
	}
	f, isObject := topLevel(raw)
	var why string
	switch {
	case !isObject:
		why = "a message must be a JSON object (or, before protocol version 2025-06-18, a non-empty array of them)"
	case f.id != nil && !validID(f.id):
		why = `"id" must be a string or an integer between -2^53 and 2^53`
	case f.method != nil && f.method[0] != '"':
		why = `"method" must be a string`
	case f.method != nil && f.id != nil && f.id[0] == 'n':
		why = `a request's "id" must not be null`
	}
	if why == "" {
		m, err := jsonrpc.DecodeMessage(raw)
		if err == nil {
			out := &message{msg: m}
			if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
				out.id = r.ID
			}
			return out, nil
		}
		why = err.Error()
		if f.version == nil || string(f.version) != `"2.0"` {
			why = `"jsonrpc" must be "2.0"`
		}
	}
	if isObject && f.method != nil && f.method[0] == '"' && f.id == nil {
		return nil, nil // a notification: never answered
	}
	if isObject && f.method == nil && (f.result || f.error) {
		return nil, nil // a response: never answered
	}
	e := &frameError{code: jsonrpc.CodeInvalidRequest, msg: "invalid request: " + why}
	if isObject && f.id != nil && validID(f.id) && f.id[0] != 'n' {
		e.id = json.RawMessage(f.id)
	}
	return nil, e
}

// validID reports whether raw, a JSON value, is null, a string, or an
// integer of at most 2^53 in magnitude written without fraction or
// exponent.
func validID(raw []byte) bool {
	switch {
	case len(raw) == 0:
		return false
	case raw[0] == '"' || string(raw) == "null":
		return true
	case bytes.ContainsAny(raw, ".eE"):
		return false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && n >= -maxIDMagnitude && n <= maxIDMagnitude
}

// fields are the raw values of the members of a message's top-level object
// that decide whether it is a valid JSON-RPC message (nil when absent).
type fields struct {
	version, id, method []byte
	result, error       bool
}

// topLevel reads the members of raw's top-level object, skipping over
// their values without decoding them (a 100 MB params costs one scan for
// quotes). ok is false when raw is not an object; raw need not be valid
// JSON, but then the fields are meaningless. A member given twice counts
// the last time, as in the SDK's decoder, which matches names exactly.
func topLevel(raw []byte) (f fields, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return f, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return f, true
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return f, false
		}
		end := skipString(raw, i)
		if end < 0 {
			return f, false
		}
		key := raw[i:end]
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return f, false
		}
		i = skipSpace(raw, i+1)
		vend := skipValue(raw, i)
		if vend < 0 {
			return f, false
		}
		val := raw[i:vend]
		switch name(key) {
		case "jsonrpc":
			f.version = val
		case "id":
			f.id = val
		case "method":
			f.method = val
		case "result":
			f.result = true
		case "error":
			f.error = true
		}
		i = skipSpace(raw, vend)
		if i >= len(raw) {
			return f, false
		}
		if raw[i] == '}' {
			return f, true
		}
		if raw[i] != ',' {
			return f, false
		}
		i = skipSpace(raw, i+1)
	}
	return f, false
}

// name is a member name, unescaped when it is short enough to be one of
// the names topLevel looks for.
func name(quoted []byte) string {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return string(quoted[1 : len(quoted)-1])
	}
	if len(quoted) > 64 {
		return ""
	}
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return ""
	}
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index after the JSON string starting at b[i], a
// quote, or -1 when it does not end.
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		// The quote ends the string unless an odd number of
		// backslashes precede it.
		n := 0
		for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// skipValue returns the index after the JSON value starting at b[i], or
// -1 when there is none.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	case ',', '}', ']', ':':
		return -1
	}
	start := i
loop:
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			break loop
		}
	}
	if i == start {
		return -1
	}
	return i
}

// trimSpace trims JSON's whitespace from both ends of b.
func trimSpace(b []byte) []byte {
	i := skipSpace(b, 0)
	j := len(b)
	for j > i && (b[j-1] == ' ' || b[j-1] == '\t' || b[j-1] == '\r' || b[j-1] == '\n') {
		j--
	}
	return b[i:j]
}
