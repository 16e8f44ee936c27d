// Package gocacheprog is the Go build cache cordon gives a sandboxed go
// command: a GOCACHEPROG program (the go command's documented hook for an
// external build cache) that reads the sandbox's own cache and then the
// host's GOCACHE, and writes only the sandbox's own.
//
// The host's build cache stays read-only inside the sandbox (a sandbox that
// could write it could plant compiled code in the user's next build), so a
// new workspace's sandbox used to start with an empty cache and compile the
// standard library and every dependency again. With this program a
// sandboxed build finds what the host already compiled, and puts what it
// compiles itself in the sandbox's cache only.
//
// It is hand-written rather than taken from a library: the protocol is
// small (a capabilities message, then get, put and close requests as JSON
// lines, a put's body as a following base64 JSON string; see
// cmd/go/internal/cacheprog in the Go source), both directories use the go
// command's own on-disk layout (DIR/xx/ACTIONID-a holds "v1 ACTIONID
// OUTPUTID SIZE TIME", DIR/xx/OUTPUTID-d the output), and it must never
// write outside the sandbox's directory, which is easiest to see in a few
// hundred lines of our own.
//
// cordon runs it as the hidden subcommand Command of its own binary:
//
//	GOCACHEPROG='/run/cordon/cordon-helper __gocacheprog OWN HOST'
package gocacheprog

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Command is the hidden subcommand of the cordon binary that runs Main.
const Command = "__gocacheprog"

// Protocol commands (cmd/go/internal/cacheprog).
const (
	cmdGet   = "get"
	cmdPut   = "put"
	cmdClose = "close"
)

// request is the go command's message (cacheprog.Request).
type request struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

// response is the answer (cacheprog.Response).
type response struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// Main runs the program with args OWN [HOST]: OWN is the sandbox's build
// cache (written), HOST the host's (only read; absent or "" means none).
// It serves standard input and output until the go command closes, and
// returns the exit status.
func Main(args []string) int {
	if len(args) < 1 || len(args) > 2 || args[0] == "" {
		fmt.Fprintf(os.Stderr, "cordon %s: usage: cordon %s OWN-CACHE [HOST-CACHE]\n", Command, Command)
		return 2
	}
	c := &Cache{Own: args[0]}
	if len(args) == 2 {
		c.Host = args[1]
	}
	if err := Serve(os.Stdin, os.Stdout, c); err != nil {
		fmt.Fprintf(os.Stderr, "cordon %s: %v\n", Command, err)
		return 1
	}
	return 0
}

// Serve speaks the GOCACHEPROG protocol on in and out for c until a close
// request (nil) or the end of in (nil: the go command quit), or until in
// or out fail.
func Serve(in io.Reader, out io.Writer, c *Cache) error {
	br := bufio.NewReaderSize(in, 64<<10)
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	send := func(r *response) error {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("writing a response: %w", err)
		}
		return bw.Flush()
	}
	if err := send(&response{KnownCommands: []string{cmdGet, cmdPut, cmdClose}}); err != nil {
		return err
	}
	for {
		req, err := readRequest(br)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		res := &response{ID: req.ID}
		switch req.Command {
		case cmdGet:
			if e, ok := c.Get(req.ActionID); ok {
				t := e.Time
				res.OutputID, res.Size, res.Time, res.DiskPath = e.OutputID, e.Size, &t, e.DiskPath
			} else {
				res.Miss = true
			}
		case cmdPut:
			body, err := bodyReader(br, req.BodySize)
			if err != nil {
				return err
			}
			path, err := c.Put(req.ActionID, req.OutputID, body, req.BodySize)
			// The body must be consumed whatever happened, or the next
			// request would be read from its middle.
			if _, derr := io.Copy(io.Discard, body); derr != nil {
				return fmt.Errorf("reading a put body: %w", derr)
			}
			if err := endBody(br, req.BodySize); err != nil {
				return err
			}
			if err != nil {
				res.Err = err.Error()
			} else {
				res.DiskPath = path
			}
		case cmdClose:
			c.Trim()
			return send(res)
		default:
			res.Err = fmt.Sprintf("unknown command %q", req.Command)
		}
		if err := send(res); err != nil {
			return err
		}
	}
}

// readRequest reads one request: a JSON object on one line, after any
// blank lines (the go command writes one after each object).
func readRequest(br *bufio.Reader) (*request, error) {
	if err := skipSpace(br); err != nil {
		return nil, err
	}
	line, err := br.ReadBytes('\n')
	if err != nil && !(errors.Is(err, io.EOF) && len(bytes.TrimSpace(line)) > 0) {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("reading a request: %w", io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("reading a request: %w", err)
	}
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, fmt.Errorf("decoding a request: %w", err)
	}
	if req.BodySize < 0 {
		return nil, fmt.Errorf("request %d: negative body size %d", req.ID, req.BodySize)
	}
	return &req, nil
}

// bodyReader returns a reader of a put's body of size bytes: a JSON string
// of its standard base64 encoding follows the request (nothing follows
// when size is 0). It is read as it is copied, never held whole in memory.
func bodyReader(br *bufio.Reader, size int64) (io.Reader, error) {
	if size == 0 {
		return bytes.NewReader(nil), nil
	}
	if err := skipSpace(br); err != nil {
		return nil, fmt.Errorf("reading a put body: %w", err)
	}
	if b, err := br.ReadByte(); err != nil || b != '"' {
		return nil, fmt.Errorf("reading a put body: no opening quote (%v)", err)
	}
	n := int64(base64.StdEncoding.EncodedLen(int(size)))
	return base64.NewDecoder(base64.StdEncoding, io.LimitReader(br, n)), nil
}

// endBody reads the closing quote of a put's body.
func endBody(br *bufio.Reader, size int64) error {
	if size == 0 {
		return nil
	}
	if b, err := br.ReadByte(); err != nil || b != '"' {
		return fmt.Errorf("reading a put body: no closing quote after %d bytes (%v)", size, err)
	}
	return nil
}

func skipSpace(br *bufio.Reader) error {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return err
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return br.UnreadByte()
	}
}
