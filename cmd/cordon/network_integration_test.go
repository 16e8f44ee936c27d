//go:build linux

package main

// Network integration tests: real clients (curl, wget, git, python's
// urllib, a Go program) inside a filtered or loopback sandbox, against
// servers the test starts on 127.0.0.1 only. No test sends a packet to
// any other address: refused hosts are names decided before any DNS
// lookup, and the sandbox's own network namespace has nothing but
// loopback.

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// netBody is what the test's HTTP servers answer on /hello.
const netBody = "HELLO-NET-4e1"

// requireTool returns the path of a client program, skipping the test
// without it (failing under CI=true).
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testenv.SkipOrFail(t, "%s not installed", name)
	}
	return p
}

// netServers are the test's servers on the host's 127.0.0.1: plain HTTP
// (/hello and a bare git repository for git's dumb HTTP protocol at
// /repo.git) and HTTPS (/hello), whose certificate is in the workspace.
type netServers struct {
	httpPort, tlsPort int
	caFile            string // the TLS server's certificate, PEM, in the workspace
}

// startNetServers starts the servers; they stop with the test.
func startNetServers(t *testing.T, e *sandboxEnv) *netServers {
	t.Helper()
	repo := gitDumbRepo(t, e)
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, netBody) })
	mux.Handle("/repo.git/", http.StripPrefix("/repo.git/", http.FileServer(http.Dir(repo))))
	plain := httptest.NewServer(mux)
	t.Cleanup(plain.Close)
	secure := httptest.NewTLSServer(mux)
	t.Cleanup(secure.Close)
	ca := filepath.Join(e.ws, "ca.pem")
	writeFile(t, ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw})))
	return &netServers{httpPort: portOf(t, plain.URL), tlsPort: portOf(t, secure.URL), caFile: ca}
}

func portOf(t *testing.T, rawURL string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(rawURL, "https://"), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// gitDumbRepo makes a bare repository with one commit, ready for git's
// dumb HTTP protocol (git update-server-info), outside the workspace.
func gitDumbRepo(t *testing.T, e *sandboxEnv) string {
	t.Helper()
	requireTool(t, "git")
	src := filepath.Join(e.root, "gitsrc")
	bare := filepath.Join(e.root, "repo.git")
	writeFile(t, filepath.Join(src, "README"), "DUMB-GIT-CONTENT-9a2\n")
	env := append(e.environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	for _, args := range [][]string{
		{"-C", src, "init", "-q", "-b", "main"},
		{"-C", src, "add", "README"},
		{"-C", src, "commit", "-q", "-m", "one"},
		{"clone", "-q", "--bare", src, bare},
		{"-C", bare, "update-server-info"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	return bare
}

// auditRecords reads the network-connect records of an audit log.
func auditRecords(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the audit log: %v", err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if m["operation"] == "network-connect" {
			out = append(out, m)
		}
	}
	return out
}

// marked returns what a script printed after "@@name:" on its lines.
func marked(out, name string) string {
	var vals []string
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "@@"+name+":"); ok {
			vals = append(vals, v)
		}
	}
	return strings.Join(vals, "\n")
}

// netAllow are the flags that let a filtered sandbox reach the test's
// servers through the proxy: their addresses by IP (a loopback address
// needs an IP rule) and no NO_PROXY exemption for 127.0.0.1.
func (s *netServers) netAllow() []string {
	return []string{"--allow-net", "127.0.0.1:" + strconv.Itoa(s.httpPort), "--allow-net", "127.0.0.1:" + strconv.Itoa(s.tlsPort),
		"--env", "NO_PROXY=", "--env", "no_proxy="}
}

// TestNetFilteredClients: in filtered mode, on each backend, curl (HTTP
// through the HTTP proxy, HTTPS through CONNECT, socks5h through
// ALL_PROXY), wget, git over dumb HTTP, python's urllib and ssh's
// ProxyCommand (cordon-helper __connect) reach the allowed servers on the host's
// 127.0.0.1; a host no rule allows is refused with an answer naming it and
// the rule, one end-of-run line, and audit records of both decisions.
func TestNetFilteredClients(t *testing.T) {
	t.Parallel()
	for _, be := range []string{"bwrap", "landlock"} {
		t.Run(be, func(t *testing.T) {
			e := newEnv(t)
			if be == "landlock" {
				requireLandlock(t)
			}
			requireTool(t, "curl")
			requireTool(t, "python3")
			wget := requireTool(t, "wget")
			s := startNetServers(t, e)
			helper := "/run/cordon/cordon-helper"
			if be == "landlock" {
				helper = filepath.Join(filepath.Dir(cordonBin), "cordon-helper")
			}
			hello := fmt.Sprintf("http://127.0.0.1:%d/hello", s.httpPort)
			shello := fmt.Sprintf("https://127.0.0.1:%d/hello", s.tlsPort)
			script := strings.Join([]string{
				`echo "@@env:$HTTPS_PROXY $ALL_PROXY"`,
				`echo "@@curl:$(curl -sS ` + hello + `)"`,
				`echo "@@curltls:$(curl -sS --cacert ca.pem ` + shello + `)"`,
				// curl takes ALL_PROXY when no http_proxy names a proxy.
				`echo "@@socks:$(env -u http_proxy -u HTTP_PROXY curl -sS ` + hello + `)"`,
				`echo "@@wget:$(` + wget + ` -q -O- ` + hello + `)"`,
				`echo "@@wgettls:$(` + wget + ` -q -O- --ca-certificate=ca.pem ` + shello + `)"`,
				`echo "@@python:$(python3 -c 'import ssl,sys,urllib.request as u; print(u.urlopen(sys.argv[1]).read().decode(), u.urlopen(sys.argv[2], context=ssl.create_default_context(cafile="ca.pem")).read().decode())' ` + hello + " " + shello + `)"`,
				fmt.Sprintf(`git clone -q http://127.0.0.1:%d/repo.git cloned && echo "@@git:$(cat cloned/README)"`, s.httpPort),
				fmt.Sprintf(`echo "@@connect:$(printf 'GET /hello HTTP/1.0\r\n\r\n' | %s __connect 127.0.0.1 %d | tail -n1)"`, helper, s.httpPort),
				`echo "@@refused:$(curl -sS http://blocked.example/x)"`,
				helper + ` __connect blocked.example 22 </dev/null; echo "@@connectrc:$?"`,
			}, "\n")
			audit := filepath.Join(e.root, "audit.jsonl")
			args := append([]string{"--backend", be, "--audit-log", audit}, s.netAllow()...)
			r := e.sh(script, args...)
			t.Logf("%s", r)
			for name, want := range map[string]string{
				"curl": netBody, "curltls": netBody, "socks": netBody, "wget": netBody, "wgettls": netBody,
				"python": netBody + " " + netBody, "git": "DUMB-GIT-CONTENT-9a2", "connect": netBody, "connectrc": "1",
			} {
				if got := marked(r.stdout, name); got != want {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
			env := marked(r.stdout, "env")
			if be == "bwrap" && env != "http://127.0.0.1:3128 socks5h://127.0.0.1:1081" {
				t.Errorf("proxy variables inside: %q", env)
			}
			if be == "landlock" && !strings.HasPrefix(env, "http://cordon:") {
				t.Errorf("proxy variables inside: %q, want the token as userinfo", env)
			}
			if got := marked(r.stdout, "refused"); !strings.Contains(got, "blocked.example") || !strings.Contains(got, "no allow rule") {
				t.Errorf("the refused request's answer %q does not name the host and the rule", got)
			}
			for _, want := range []string{
				"cordon: network: refused blocked.example:80 (no allow rule); allow it with --allow-net blocked.example:80",
				"cordon: network: refused blocked.example:22 (no allow rule); allow it with --allow-net blocked.example:22",
			} {
				if strings.Count(r.stderr, want) != 1 {
					t.Errorf("stderr lacks (once) %q", want)
				}
			}
			var allowed, denied bool
			for _, rec := range auditRecords(t, audit) {
				switch {
				case rec["action"] == "allowed" && rec["host"] == "127.0.0.1" && rec["port"] == float64(s.httpPort) && rec["address"] == "127.0.0.1":
					allowed = true
				case rec["action"] == "denied" && rec["host"] == "blocked.example" && rec["port"] == float64(80) && rec["rule"] == "no allow rule":
					denied = true
				}
			}
			if !allowed || !denied {
				t.Errorf("audit log: allowed record %v, denied record %v\n%s", allowed, denied, readFile(t, audit))
			}
		})
	}
}

// TestNetGoClient: a Go program built by the test reaches the HTTPS
// server through the proxy named by HTTPS_PROXY (Go's
// ProxyFromEnvironment never proxies 127.0.0.1, so the program takes the
// variable itself), and its refusal names the host and the rule.
func TestNetGoClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	goBin := requireTool(t, "go")
	s := startNetServers(t, e)
	src := filepath.Join(e.root, "goclient")
	writeFile(t, filepath.Join(src, "go.mod"), "module goclient\n\ngo 1.21\n")
	writeFile(t, filepath.Join(src, "main.go"), `package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
)

func main() {
	pem, err := os.ReadFile("ca.pem")
	if err != nil {
		panic(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	proxy, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil {
		panic(err)
	}
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, u := range os.Args[1:] {
		resp, err := c.Get(u)
		if err != nil {
			fmt.Println("@@go:error", err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("@@go:%d %s\n", resp.StatusCode, b)
	}
}
`)
	bin := filepath.Join(e.ws, "goclient")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the Go client: %v\n%s", err, out)
	}
	r := e.run(append(append([]string{"run"}, s.netAllow()...), "--", "./goclient",
		fmt.Sprintf("https://127.0.0.1:%d/hello", s.tlsPort), "http://blocked.example/")...)
	got := marked(r.stdout, "go")
	if !strings.Contains(got, "200 "+netBody) || !strings.Contains(got, "403 ") || !strings.Contains(got, "blocked.example") {
		t.Errorf("Go client: %q\n%s", got, r)
	}
}

// TestNetRawAndUDPBlocked: in the loopback and filtered modes a raw TCP
// connection to a server on the host's 127.0.0.1 finds nothing (the
// sandbox's loopback is its own), and a UDP datagram to the host's
// 127.0.0.1 never arrives; on the Landlock-only backend TCP to a port
// that is not the proxy's is refused by Landlock and UDP sockets by
// seccomp.
func TestNetRawAndUDPBlocked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"bwrap loopback", []string{"--net", "loopback"}},
		{"bwrap filtered", []string{"--allow-net", "*:443"}},
		{"landlock filtered", []string{"--backend", "landlock", "--allow-net", "*:443"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if strings.HasPrefix(tc.name, "landlock") {
				requireLandlock(t)
			}
			requireTool(t, "python3")
			tcp, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer tcp.Close()
			accepted := make(chan struct{}, 1)
			go func() {
				if c, err := tcp.Accept(); err == nil {
					accepted <- struct{}{}
					c.Close()
				}
			}()
			udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer udp.Close()
			tport, uport := tcp.Addr().(*net.TCPAddr).Port, udp.LocalAddr().(*net.UDPAddr).Port
			r := e.sh(fmt.Sprintf(`python3 - <<'EOF'
import socket
try:
    socket.create_connection(("127.0.0.1", %d), timeout=3).close()
    print("@@tcp:connected")
except OSError as e:
    print("@@tcp:refused", e.errno)
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"UDP-LEAK", ("127.0.0.1", %d))
    print("@@udp:sent")
except OSError as e:
    print("@@udp:refused", e.errno)
EOF`, tport, uport), tc.flags...)
			if got := marked(r.stdout, "tcp"); !strings.HasPrefix(got, "refused") {
				t.Errorf("raw TCP to the host's 127.0.0.1:%d: %q\n%s", tport, got, r)
			}
			if !strings.HasPrefix(marked(r.stdout, "udp"), "refused") && !strings.HasPrefix(tc.name, "bwrap") {
				t.Errorf("a UDP socket was created: %s", r)
			}
			_ = udp.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			if n, _, err := udp.ReadFrom(make([]byte, 64)); err == nil {
				t.Errorf("a UDP datagram of %d bytes reached the host's 127.0.0.1", n)
			}
			select {
			case <-accepted:
				t.Error("the host's TCP server accepted a connection from the sandbox")
			default:
			}
		})
	}
}

// TestNetForwardPort: a forwarded port reaches the host's 127.0.0.1 at
// the same number in the loopback and filtered modes (and on the
// Landlock-only backend, directly); a forwarded port nothing listens on
// refuses to run.
func TestNetForwardPort(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	requireTool(t, "curl")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, netBody) }))
	defer srv.Close()
	port := strconv.Itoa(portOf(t, srv.URL))
	for _, flags := range [][]string{
		{"--net", "loopback"},
		{"--allow-net", "*:443"},
		{"--backend", "landlock", "--allow-net", "*:443"},
	} {
		if flags[0] == "--backend" {
			requireLandlock(t)
		}
		args := append(append([]string{"run"}, flags...), "--forward-port", port, "--", "curl", "-sS", "--noproxy", "*", "http://127.0.0.1:"+port+"/hello")
		if r := e.run(args...); r.code != 0 || r.stdout != netBody {
			t.Errorf("%q: %s", flags, r)
		}
	}
	// A port nobody listens on: take one, then free it.
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	r := e.run("run", "--net", "loopback", "--forward-port", free, "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "cordon: --forward-port "+free+": nothing listens") {
		t.Errorf("forwarded port with nothing listening: %s", r)
	}
}

// TestNetLoopbackOwn: the loopback mode's own loopback works for servers
// and clients inside (python's http.server and curl), as does the
// filtered mode's, directly (NO_PROXY).
func TestNetLoopbackOwn(t *testing.T) {
	e := newEnv(t)
	requireTool(t, "curl")
	requireTool(t, "python3")
	writeFile(t, filepath.Join(e.ws, "served.txt"), "SERVED-INSIDE-2b")
	script := `python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 &
i=0; until curl -s http://127.0.0.1:8765/served.txt; do i=$((i+1)); [ $i -gt 50 ] && exit 9; sleep 0.1; done
kill $!`
	for _, flags := range [][]string{{"--net", "loopback"}, {"--allow-net", "*:443"}} {
		if r := e.sh(script, flags...); r.code != 0 || r.stdout != "SERVED-INSIDE-2b" {
			t.Errorf("%q: %s", flags, r)
		}
	}
	if r := e.run("run", "--backend", "landlock", "--net", "loopback", "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "cordon: --net loopback needs a network namespace") {
		t.Errorf("loopback on the Landlock-only backend: %s", r)
	}
}

// TestNetLandlockToken: on the Landlock-only backend the proxy listens on
// the host's loopback, where any local user could reach it: without the
// run's token it answers 407, and the degraded line says what Landlock's
// port rules cannot stop.
func TestNetLandlockToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	requireLandlock(t)
	s := startNetServers(t, e)
	done := filepath.Join(e.ws, "done")
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	script := `echo "$HTTP_PROXY" > proxy.txt; i=0; while [ ! -e done ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done`
	cmd := e.command(ctx, append(append([]string{"run", "--backend", "landlock"}, s.netAllow()...), "--", "sh", "-c", script)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	defer os.WriteFile(done, nil, 0o644)
	var proxy string
	for i := 0; i < 100 && proxy == ""; i++ {
		b, _ := os.ReadFile(filepath.Join(e.ws, "proxy.txt"))
		proxy = strings.TrimSpace(string(b))
		time.Sleep(50 * time.Millisecond)
	}
	at := strings.LastIndex(proxy, "@")
	if !strings.HasPrefix(proxy, "http://cordon:") || at < 0 {
		t.Fatalf("HTTP_PROXY inside: %q", proxy)
	}
	addr := proxy[at+1:]
	for _, auth := range []string{"", "Proxy-Authorization: Basic Y29yZG9uOndyb25n\r\n"} { // cordon:wrong
		c, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "GET http://127.0.0.1:%d/hello HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", s.httpPort, auth)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil || resp.StatusCode != http.StatusProxyAuthRequired {
			t.Errorf("a request without the token (%q): %v %v, want 407", auth, resp, err)
		}
	}
	_ = os.WriteFile(done, nil, 0o644)
	if err := cmd.Wait(); err != nil {
		t.Errorf("the run: %v\n%s", err, stderr.String())
	}
	// The run sums its degraded rules up in one line; --explain says each.
	if !strings.Contains(stderr.String(), "cordon: degraded: ") || !strings.Contains(stderr.String(), "; filtered network without a network namespace") {
		t.Errorf("no degraded line for the filtered network: %s", stderr.String())
	}
	if r := e.run("policy", "--explain", "--backend", "landlock", "--allow-net", "*:443", "--", "true"); !strings.Contains(r.stdout, "filtered network without a network namespace: Landlock confines TCP connect by port number only") {
		t.Errorf("--explain does not say the filtered network's degraded rule:\n%s", r)
	}
	if r := e.run("run", "--backend", "landlock", "--mode", "strict", "--allow-net", "*:443", "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "strict mode refuses") {
		t.Errorf("strict mode on the Landlock-only backend with a filtered network: %s", r)
	}
}

// TestNetSSHProxyCommand: the real ssh client, run as git runs it
// ($GIT_SSH_COMMAND), reaches an SSH server on the host's 127.0.0.1
// through cordon's ProxyCommand (it reads the server's identification
// line), and a refused host ends ssh at once with the proxy's reason.
func TestNetSSHProxyCommand(t *testing.T) {
	t.Parallel()
	requireTool(t, "ssh")
	e := newEnv(t)
	l := testenv.Listen(t)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			// An SSH server's first line, then the end (no key exchange).
			_, _ = io.WriteString(c, "SSH-2.0-cordontest_9c1\r\n")
			_ = c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	// As git runs it: sh -c "$GIT_SSH_COMMAND ARGS".
	script := fmt.Sprintf(`eval "$GIT_SSH_COMMAND -v -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -p %d 127.0.0.1 true"; echo "@@ssh:$?"
git ls-remote ssh://blocked.example/repo.git; echo "@@refused:$?"`, port)
	r := e.sh(script, "--allow-net", fmt.Sprintf("127.0.0.1:%d", port), "--timeout", "60s")
	if !strings.Contains(r.stderr, "remote software version cordontest_9c1") {
		t.Errorf("ssh did not reach the server through the ProxyCommand:\n%s", r)
	}
	if got := marked(r.stdout, "refused"); got == "0" || got == "" {
		t.Errorf("ssh to a refused host: exit %q\n%s", got, r)
	}
	if !strings.Contains(r.stderr, "blocked.example") || !strings.Contains(r.stderr, "no allow rule") {
		t.Errorf("the refusal does not name the host and the rule:\n%s", r)
	}
}
