package helper

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Connect runs "cordon-helper __connect HOST PORT" (helperspec.ConnectCommand),
// ssh's ProxyCommand inside a filtered sandbox: it asks the HTTP proxy
// named by HTTPS_PROXY (https_proxy, HTTP_PROXY, http_proxy), with the
// credentials of its URL if any, for a CONNECT tunnel to HOST:PORT, then
// relays standard input to the tunnel and the tunnel to standard output.
// A refusal prints the proxy's answer on standard error and returns 1.
func Connect(args []string) int {
	if err := connect(args, os.Stdin, os.Stdout); err != nil {
		var re refusedError
		if errors.As(err, &re) && strings.HasPrefix(re.answer, "cordon: ") {
			fmt.Fprintln(os.Stderr, re.answer) // the proxy's own line
			return 1
		}
		fmt.Fprintln(os.Stderr, "cordon: "+err.Error())
		return 1
	}
	return 0
}

// connectTimeout bounds the connection to the proxy and its answer.
const connectTimeout = 60 * time.Second

func connect(args []string, in io.Reader, out io.Writer) error {
	if len(args) != 2 {
		return errors.New("usage: cordon-helper __connect HOST PORT (ssh's ProxyCommand inside a filtered sandbox)")
	}
	host, portArg := args[0], args[1]
	if port, err := strconv.Atoi(portArg); err != nil || port < 1 || port > 65535 {
		return fmt.Errorf("__connect: port %q is not a number from 1 to 65535", portArg)
	}
	proxy, err := proxyURL()
	if err != nil {
		return err
	}
	conn, err := net.DialTimeout("tcp", proxy.Host, connectTimeout)
	if err != nil {
		return fmt.Errorf("__connect: reaching the proxy %s: %w", proxy.Redacted(), err)
	}
	defer conn.Close()
	target := net.JoinHostPort(host, portArg)
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if u := proxy.User; u != nil {
		pw, _ := u.Password()
		req += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw)) + "\r\n"
	}
	_ = conn.SetDeadline(time.Now().Add(connectTimeout))
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		return fmt.Errorf("__connect: asking the proxy for %s: %w", target, err)
	}
	br := bufio.NewReader(conn)
	code, status, body, err := readAnswer(br)
	if err != nil {
		return fmt.Errorf("__connect: reading the proxy's answer for %s: %w", target, err)
	}
	if code/100 != 2 {
		msg := body
		if msg == "" {
			msg = status
		}
		return refusedError{target: target, answer: trimNL(msg)}
	}
	_ = conn.SetDeadline(time.Time{})
	up := make(chan error, 1)
	down := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, in)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		up <- err
	}()
	go func() {
		// What the proxy sent after its answer is the tunnel's.
		_, err := io.Copy(out, br)
		down <- err
	}()
	// The tunnel ends when the server closes it: returning closes
	// standard output, which is how ssh learns it (ssh keeps our standard
	// input open until then). ssh closing our standard input only
	// half-closes the tunnel.
	select {
	case err := <-down:
		return err
	case err := <-up:
		if err != nil {
			return err
		}
		return <-down
	}
}

// refusedError is the proxy's refusal of a tunnel, with its answer.
type refusedError struct{ target, answer string }

func (e refusedError) Error() string {
	return "__connect: the proxy refused " + e.target + ": " + e.answer
}

// proxyURL is the HTTP proxy of the environment.
func proxyURL() (*url.URL, error) {
	for _, name := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || u.Host == "" || u.Scheme != "http" {
			return nil, fmt.Errorf("__connect: %s=%q is not an http://HOST:PORT proxy URL", name, v)
		}
		return u, nil
	}
	return nil, errors.New("__connect: no proxy in the environment (HTTPS_PROXY): it runs inside a sandbox whose network is filtered")
}

func trimNL(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}

// maxAnswer bounds the proxy's answer to a CONNECT request: its status
// line and each header line, and the body of a refusal that is read.
const maxAnswer = 4096

// maxHeaders bounds the number of header lines of the proxy's answer.
const maxHeaders = 100

// readAnswer reads the proxy's answer to a CONNECT request from br (an
// HTTP/1.x status line and headers, without net/http, which the helper
// does not link): its status code, its status ("403 Forbidden") and, for
// an answer other than 2xx, up to maxAnswer bytes of its body (by
// Content-Length, chunked, or until the proxy closes). After a 2xx answer,
// what br holds next is the tunnel's.
func readAnswer(br *bufio.Reader) (code int, status, body string, err error) {
	line, err := readLine(br)
	if err != nil {
		return 0, "", "", err
	}
	proto, status, ok := strings.Cut(line, " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/1.") || len(status) < 3 {
		return 0, "", "", fmt.Errorf("malformed status line %q", line)
	}
	code, err = strconv.Atoi(status[:3])
	if err != nil || code < 100 || code > 999 || len(status) > 3 && status[3] != ' ' {
		return 0, "", "", fmt.Errorf("malformed status line %q", line)
	}
	length, chunked := -1, false
	for i := 0; ; i++ {
		if i > maxHeaders {
			return 0, "", "", fmt.Errorf("more than %d header lines", maxHeaders)
		}
		h, err := readLine(br)
		if err != nil {
			return 0, "", "", err
		}
		if h == "" {
			break
		}
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return 0, "", "", fmt.Errorf("malformed header line %q", h)
		}
		value = strings.TrimSpace(value)
		switch {
		case strings.EqualFold(name, "Content-Length"):
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 {
				return 0, "", "", fmt.Errorf("malformed Content-Length %q", value)
			}
			length = n
		case strings.EqualFold(name, "Transfer-Encoding"):
			chunked = strings.EqualFold(value, "chunked")
		}
	}
	if code/100 == 2 {
		return code, status, "", nil
	}
	switch {
	case chunked:
		body, err = readChunked(br)
	case length >= 0:
		body, err = readN(br, min(length, maxAnswer))
	default:
		b, rerr := io.ReadAll(io.LimitReader(br, maxAnswer))
		body, err = string(b), rerr
	}
	if err != nil {
		return 0, "", "", fmt.Errorf("reading the body of %q: %w", status, err)
	}
	return code, status, body, nil
}

// readLine reads one line of at most maxAnswer bytes, without its CRLF.
func readLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		frag, err := br.ReadSlice('\n')
		b = append(b, frag...)
		if len(b) > maxAnswer {
			return "", fmt.Errorf("a line longer than %d bytes", maxAnswer)
		}
		if err == nil {
			return strings.TrimRight(string(b), "\r\n"), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
	}
}

// readN reads exactly n bytes.
func readN(br *bufio.Reader, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// readChunked reads a chunked body, up to maxAnswer bytes of it.
func readChunked(br *bufio.Reader) (string, error) {
	var body strings.Builder
	for body.Len() < maxAnswer {
		line, err := readLine(br)
		if err != nil {
			return "", err
		}
		size, _, _ := strings.Cut(line, ";")
		n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 32)
		if err != nil || n < 0 {
			return "", fmt.Errorf("malformed chunk size %q", line)
		}
		if n == 0 {
			// The trailer, up to its empty line.
			for i := 0; i < maxHeaders; i++ {
				if t, err := readLine(br); err != nil || t == "" {
					return body.String(), err
				}
			}
			break
		}
		chunk, err := readN(br, int(min(n, int64(maxAnswer-body.Len()))))
		if err != nil {
			return "", err
		}
		body.WriteString(chunk)
		if int64(len(chunk)) < n {
			break
		}
		if _, err := readLine(br); err != nil {
			return "", err
		}
	}
	return body.String(), nil
}
