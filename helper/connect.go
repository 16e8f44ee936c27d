package helper

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Connect runs "cordon __connect HOST PORT" (helperspec.ConnectCommand),
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
		return errors.New("usage: cordon __connect HOST PORT (ssh's ProxyCommand inside a filtered sandbox)")
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
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return fmt.Errorf("__connect: reading the proxy's answer for %s: %w", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		msg := string(body)
		if msg == "" {
			msg = resp.Status
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
