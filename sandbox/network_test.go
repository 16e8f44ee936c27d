package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// TestNetworkLoopback: WithNetwork(NetworkLoopback) gives the command a
// loopback of its own (a server and a client inside work), with the
// host's forwarded port reachable at the same number (Run serves it), and
// Wrap refuses a sandbox with forwarded ports it could not serve.
func TestNetworkLoopback(t *testing.T) {
	_, ws := fakeHost(t)
	// The system's python, which the sandbox's system directories hold.
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.SkipOrFail(t, "python3 not installed")
	}
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "FROM-HOST-6d") }))
	defer host.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(host.URL, "http://"))
	sb, err := New(WithWorkspace(ws), WithNetwork(NetworkLoopback))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	script := `
import socket, sys, urllib.request
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.send(b"own"); print(a.recv(3).decode())
if len(sys.argv) > 1:
    print(urllib.request.urlopen("http://127.0.0.1:" + sys.argv[1] + "/", timeout=5).read().decode())
`
	var out, errb bytes.Buffer
	cmd := exec.Command(py, "-c", script)
	cmd.Stdout, cmd.Stderr = &out, &errb
	res, err := sb.Run(context.Background(), cmd)
	if err != nil || res.ExitCode != 0 || out.String() != "own\n" {
		t.Fatalf("loopback: %v %+v stdout %q stderr %q", err, res, out.String(), errb.String())
	}
	p, _ := strconv.Atoi(port)
	fw, err := New(WithWorkspace(ws), WithNetwork(NetworkLoopback), WithForwardPorts(p))
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	out.Reset()
	errb.Reset()
	cmd = exec.Command(py, "-c", script, port)
	cmd.Stdout, cmd.Stderr = &out, &errb
	res, err = fw.Run(context.Background(), cmd)
	if err != nil || res.ExitCode != 0 || out.String() != "own\nFROM-HOST-6d\n" {
		t.Fatalf("forwarded port: %v %+v stdout %q stderr %q", err, res, out.String(), errb.String())
	}
	if err := fw.Wrap(exec.Command("true")); err == nil || !strings.Contains(err.Error(), "Wrap cannot serve") {
		t.Errorf("Wrap of a sandbox with a forwarded port: %v", err)
	}
}

// TestNetworkFiltered: WithAllowNet filters the network through cordon's
// proxy, which Run serves: curl reaches the allowed server on the host's
// 127.0.0.1 through HTTP_PROXY (--noproxy "" lifts NO_PROXY's loopback
// exemption), is refused another host with the rule named, and the
// Result lists the refusal; Wrap refuses the sandbox.
func TestNetworkFiltered(t *testing.T) {
	_, ws := fakeHost(t)
	const curl = "/usr/bin/curl"
	if _, err := os.Stat(curl); err != nil {
		testenv.SkipOrFail(t, "curl not installed")
	}
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "THROUGH-PROXY-3c") }))
	defer host.Close()
	addr := strings.TrimPrefix(host.URL, "http://")
	sb, err := New(WithWorkspace(ws), WithAllowNet(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	var out, errb bytes.Buffer
	cmd := exec.Command("sh", "-c", `curl -sS --noproxy "" `+host.URL+`/; echo; curl -sS http://blocked.example/`)
	cmd.Stdout, cmd.Stderr = &out, &errb
	res, err := sb.Run(context.Background(), cmd)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %+v stderr %q", err, res, errb.String())
	}
	if !strings.HasPrefix(out.String(), "THROUGH-PROXY-3c\n") || !strings.Contains(out.String(), "blocked.example:80 (no allow rule)") {
		t.Errorf("stdout %q stderr %q", out.String(), errb.String())
	}
	if len(res.NetRefused) != 1 || res.NetRefused[0].Host != "blocked.example" || res.NetRefused[0].Allow != "blocked.example:80" {
		t.Errorf("refusals %+v", res.NetRefused)
	}
	if err := sb.Wrap(exec.Command("true")); err == nil || !strings.Contains(err.Error(), "Wrap cannot serve") {
		t.Errorf("Wrap of a filtered sandbox: %v", err)
	}
}

// TestNetworkFilteredSSHProxyCommand: inside a filtered sandbox of a
// library host, ssh's ProxyCommand (/run/cordon/cordon-helper __connect
// HOST PORT, which is the host's own executable there) tunnels through
// cordon's proxy to the allowed server: Init serves every subcommand of
// the helper, not only the helper itself (it ran the host's main before).
func TestNetworkFilteredSSHProxyCommand(t *testing.T) {
	_, ws := fakeHost(t)
	ln := testenv.Listen(t)
	defer ln.Close()
	go func() {
		for range 2 { // bounded: the test connects once
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, "SSH-2.0-cordon-test\r\n")
			line, _ := bufio.NewReader(c).ReadString('\n')
			io.WriteString(c, "echo:"+line)
			c.Close()
		}
	}()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	sb, err := New(WithWorkspace(ws), WithAllowNet(ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	var out, errb bytes.Buffer
	cmd := exec.Command(helperspec.HelperPath, helperspec.ConnectCommand, host, port)
	cmd.Stdin = strings.NewReader("hello-7f\n")
	cmd.Stdout, cmd.Stderr = &out, &errb
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := sb.Run(ctx, cmd)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %+v stdout %q stderr %q", err, res, out.String(), errb.String())
	}
	if want := "SSH-2.0-cordon-test\r\necho:hello-7f\n"; out.String() != want {
		t.Errorf("stdout %q, want %q (stderr %q)", out.String(), want, errb.String())
	}
}
