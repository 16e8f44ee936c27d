package helper

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// fakeConnectProxy serves one CONNECT request on 127.0.0.1: a tunnel to
// an echo of what it reads, prefixed with "ECHO:", when the request
// carries the credentials want (none when ""), else a 403 whose body
// names the target. It returns the proxy's address and the request it saw.
func fakeConnectProxy(t *testing.T, want string) (string, chan *http.Request) {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	seen := make(chan *http.Request, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		seen <- req
		if req.Method != http.MethodConnect || req.Header.Get("Proxy-Authorization") != want {
			body := "cordon: refused " + req.Host + " (no allow rule)\n"
			io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: "+itoa(len(body))+"\r\n\r\n"+body)
			return
		}
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		data, _ := io.ReadAll(br)
		c.Write(append([]byte("ECHO:"), data...))
	}()
	return l.Addr().String(), seen
}

func itoa(n int) string {
	var b []byte
	for ; n > 0 || len(b) == 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestConnect: __connect asks the proxy of HTTPS_PROXY for a CONNECT
// tunnel to HOST:PORT (brackets for IPv6, the URL's credentials as Basic
// proxy authorisation), relays stdin and stdout through it, and on a
// refusal returns the proxy's answer as its error.
func TestConnect(t *testing.T) {
	for _, tc := range []struct {
		name, user, host, auth, target, err, out string
	}{
		{name: "tunnel", host: "example.com", target: "example.com:22", out: "ECHO:ssh-hello"},
		{name: "token", user: "cordon:s3cret@", host: "example.com", auth: "Basic Y29yZG9uOnMzY3JldA==", target: "example.com:22", out: "ECHO:ssh-hello"},
		{name: "ipv6", host: "::1", target: "[::1]:22", out: "ECHO:ssh-hello"},
		{name: "refused", host: "blocked.example", auth: "never", target: "blocked.example:22", err: "the proxy refused blocked.example:22: cordon: refused blocked.example:22 (no allow rule)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, seen := fakeConnectProxy(t, tc.auth)
			t.Setenv("HTTPS_PROXY", "http://"+tc.user+addr)
			var out bytes.Buffer
			err := connect([]string{tc.host, "22"}, strings.NewReader("ssh-hello"), &out)
			req := <-seen
			if req.Method != http.MethodConnect || req.RequestURI != tc.target {
				t.Errorf("request %s %s, want CONNECT %s", req.Method, req.RequestURI, tc.target)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || out.String() != tc.out {
				t.Fatalf("out %q err %v, want %q", out.String(), err, tc.out)
			}
		})
	}
	t.Setenv("HTTPS_PROXY", "")
	t.Setenv("https_proxy", "")
	t.Setenv("HTTP_PROXY", "")
	t.Setenv("http_proxy", "")
	if err := connect([]string{"example.com", "22"}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "no proxy in the environment") {
		t.Errorf("without a proxy: %v", err)
	}
	if err := connect([]string{"example.com", "99999"}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "1 to 65535") {
		t.Errorf("bad port: %v", err)
	}
}

// TestConnectServerCloses: when the server ends the tunnel first,
// __connect returns although its standard input stays open (ssh keeps
// the ProxyCommand's standard input open until it reads end-of-file on
// its standard output: waiting for both ends hangs ssh for ever).
func TestConnectServerCloses(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\nSSH-2.0-banner\r\n")
	}()
	t.Setenv("HTTPS_PROXY", "http://"+l.Addr().String())
	stdin, stdinW := io.Pipe() // never closed, as ssh's end
	t.Cleanup(func() { stdinW.Close() })
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- connect([]string{"example.com", "22"}, stdin, &out) }()
	select {
	case err := <-done:
		if err != nil || out.String() != "SSH-2.0-banner\r\n" {
			t.Fatalf("out %q err %v, want the banner and no error", out.String(), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("__connect still running 10 s after the server closed the tunnel")
	}
}

// TestReadAnswer: the proxy's answer to CONNECT is read without net/http:
// the status, the body of a refusal however it is framed (bounded), and
// after a 2xx answer nothing more, so what follows is the tunnel's; a
// malformed answer is an error.
func TestReadAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, in, status, body, rest, err string
	}{
		{name: "established", in: "HTTP/1.1 200 Connection established\r\nVia: x\r\n\r\nSSH-2.0", status: "200 Connection established", rest: "SSH-2.0"},
		{name: "bare 200", in: "HTTP/1.0 200\r\n\r\n", status: "200"},
		{name: "length", in: "HTTP/1.1 403 Forbidden\r\nContent-Length: 5\r\n\r\nnope\nmore", status: "403 Forbidden", body: "nope\n", rest: "more"},
		{name: "chunked", in: "HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nno a\r\n6;x=y\r\nnswer\n\r\n0\r\n\r\n", status: "403 Forbidden", body: "no answer\n"},
		{name: "until close", in: "HTTP/1.1 407 Proxy Authentication Required\r\n\r\nwho?", status: "407 Proxy Authentication Required", body: "who?"},
		{name: "long body bounded", in: "HTTP/1.1 403 Forbidden\r\n\r\n" + strings.Repeat("x", 5000), status: "403 Forbidden", body: strings.Repeat("x", 4096), rest: strings.Repeat("x", 5000-4096)},
		{name: "not http", in: "SSH-2.0-OpenSSH\r\n\r\n", err: "malformed status line"},
		{name: "bad code", in: "HTTP/1.1 2x0 OK\r\n\r\n", err: "malformed status line"},
		{name: "bad header", in: "HTTP/1.1 200 OK\r\nnocolon\r\n\r\n", err: "malformed header line"},
		{name: "bad length", in: "HTTP/1.1 403 Forbidden\r\nContent-Length: -1\r\n\r\n", err: "malformed Content-Length"},
		{name: "cut short", in: "HTTP/1.1 200 OK\r\n", err: "unexpected EOF"},
		{name: "long line", in: "HTTP/1.1 200 " + strings.Repeat("x", 5000) + "\r\n\r\n", err: "longer than 4096"},
		{name: "too many headers", in: "HTTP/1.1 200 OK\r\n" + strings.Repeat("A: b\r\n", 200) + "\r\n", err: "more than 100 header lines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tc.in), 16)
			_, status, body, err := readAnswer(br)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("readAnswer: err %v, want one with %q", err, tc.err)
				}
				return
			}
			rest, _ := io.ReadAll(br)
			if err != nil || status != tc.status || body != tc.body || string(rest) != tc.rest {
				t.Fatalf("readAnswer = %q, %q, %v, then %q; want %q, %q, then %q", status, body, err, rest, tc.status, tc.body, tc.rest)
			}
		})
	}
}
