//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// TestHostProcessesInvisible: the sandbox has its own pid namespace: a
// host process cannot be seen or signalled.
func TestHostProcessesInvisible(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	arg := uniqueSleep(30)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	host := exec.CommandContext(ctx, "sleep", arg)
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	pid := host.Process.Pid

	r := e.sh(fmt.Sprintf(`
		if test -e /proc/%[1]d; then echo SEES""-PID; fi
		if kill -0 %[1]d 2>/dev/null; then echo CAN""-SIGNAL; fi
		kill -KILL %[1]d 2>/dev/null
		cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' '; echo
		echo PIDS $(ls -d /proc/[0-9]* | wc -l)
		echo SELF $$`, pid))
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	if pid > 10 && (strings.Contains(r.stdout, "SEES-PID") || strings.Contains(r.stdout, "CAN-SIGNAL")) {
		t.Errorf("host pid %d is visible inside:\n%s", pid, r)
	}
	if strings.Contains(r.stdout, "sleep "+arg) {
		t.Errorf("the host's sleep %s is visible in /proc inside:\n%s", arg, r)
	}
	if strings.Contains(r.stdout, "go test") || strings.Contains(r.stdout, ".test") {
		t.Errorf("the test process is visible inside:\n%s", r)
	}
	var n int
	for _, l := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(l, "PIDS "); ok {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if n == 0 || n > 6 {
		t.Errorf("%d processes visible inside, want a handful:\n%s", n, r)
	}
	if host.ProcessState != nil || syscallKill0(pid) != nil {
		t.Errorf("the host's sleep was killed from inside the sandbox")
	}
}

func syscallKill0(pid int) error { return syscall.Kill(pid, 0) }

// TestEnvironmentScrubbed: the environment is an allowlist; --env passes
// or sets one variable.
func TestEnvironmentScrubbed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.extra = []string{
		"SECRET_TOKEN=xyz-token-3141",
		"AWS_SECRET_ACCESS_KEY=aws-key-2718",
		"GITHUB_TOKEN=gh-token-1618",
		"LC_TIME=C.UTF-8",
		"TERM=dumb",
	}
	has := func(env, kv string) bool {
		for _, l := range strings.Split(env, "\n") {
			if l == kv {
				return true
			}
		}
		return false
	}
	r := e.run("run", "--", "env")
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	for _, s := range []string{"xyz-token-3141", "aws-key-2718", "gh-token-1618", "SECRET_TOKEN", "AWS_SECRET", "XDG_STATE_HOME"} {
		if strings.Contains(r.stdout, s) {
			t.Errorf("%s leaked into the sandbox:\n%s", s, r.stdout)
		}
	}
	for _, kv := range []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + e.home, "TMPDIR=/tmp", "LC_TIME=C.UTF-8", "TERM=dumb", "USER=cordontest"} {
		if !has(r.stdout, kv) {
			t.Errorf("%s missing inside:\n%s", kv, r.stdout)
		}
	}

	r = e.run("run", "--env", "SECRET_TOKEN", "--env", "FOO=bar", "--env", "HOME_TOO=a=b", "--", "env")
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	for _, kv := range []string{"SECRET_TOKEN=xyz-token-3141", "FOO=bar", "HOME_TOO=a=b"} {
		if !has(r.stdout, kv) {
			t.Errorf("--env: %s missing inside:\n%s", kv, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "aws-key-2718") {
		t.Errorf("--env SECRET_TOKEN also passed AWS_SECRET_ACCESS_KEY")
	}
	// The environment of other processes is not readable either.
	r = e.sh(`cat /proc/1/environ /proc/2/environ 2>/dev/null | tr '\0' '\n'`)
	if strings.Contains(r.stdout, "xyz-token-3141") || strings.Contains(r.stdout, "aws-key-2718") {
		t.Errorf("a secret is readable from /proc/*/environ inside:\n%s", r)
	}
}

// tcpCounter is a TCP server on 127.0.0.1 that counts connections.
type tcpCounter struct {
	ln net.Listener
	n  atomic.Int64
}

func newTCPCounter(t *testing.T) *tcpCounter {
	t.Helper()
	ln := testenv.Listen(t)
	c := &tcpCounter{ln: ln}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.n.Add(1)
			_, _ = conn.Write([]byte("hello-from-host\n"))
			conn.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return c
}

func (c *tcpCounter) port() int { return c.ln.Addr().(*net.TCPAddr).Port }

// TestNetwork: --net deny (and the profiles that deny) cannot reach a
// server on the host's 127.0.0.1; --net open can.
func TestNetwork(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tcp := newTCPCounter(t)
	var httpHits atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpHits.Add(1)
		fmt.Fprint(w, "http-from-host")
	}))
	t.Cleanup(hs.Close)
	if !strings.HasPrefix(hs.URL, "http://127.0.0.1:") {
		t.Fatalf("test server not on 127.0.0.1: %s", hs.URL)
	}

	type client struct {
		name, script, okText string
		hits                 func() int64
	}
	var clients []client
	if _, err := os.Stat("/bin/bash"); err == nil {
		clients = append(clients, client{"bash-dev-tcp",
			fmt.Sprintf(`exec bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && head -n1 <&3'`, tcp.port()),
			"hello-from-host", tcp.n.Load})
	}
	if _, err := os.Stat("/usr/bin/curl"); err == nil {
		clients = append(clients, client{"curl",
			fmt.Sprintf(`exec /usr/bin/curl -sS --max-time 3 %s/`, hs.URL),
			"http-from-host", httpHits.Load})
	}
	if len(clients) == 0 {
		t.Skip("neither bash nor curl is installed: no way to open a TCP connection from a shell")
	}
	cases := []struct {
		name  string
		flags []string
		open  bool
	}{
		{"net-deny", []string{"--net", "deny"}, false},
		{"profile-ci", []string{"--profile", "ci"}, false},
		{"profile-minimal", []string{"--profile", "minimal"}, false},
		{"profile-untrusted", []string{"--profile", "untrusted"}, false},
		{"net-open", []string{"--net", "open"}, true},
		{"default-development", nil, true},
	}
	for _, c := range cases {
		for _, cl := range clients {
			t.Run(c.name+"/"+cl.name, func(t *testing.T) {
				before := cl.hits()
				r := e.sh(cl.script, c.flags...)
				if c.open {
					deadline := time.Now().Add(2 * time.Second)
					for cl.hits() == before && time.Now().Before(deadline) {
						time.Sleep(20 * time.Millisecond)
					}
					if r.code != 0 || !strings.Contains(r.stdout, cl.okText) || cl.hits() == before {
						t.Errorf("connecting with %v failed (server saw %d connections):\n%s", c.flags, cl.hits()-before, r)
					}
					return
				}
				time.Sleep(100 * time.Millisecond)
				if r.code == 0 || strings.Contains(r.stdout, cl.okText) {
					t.Errorf("connecting with %v succeeded:\n%s", c.flags, r)
				}
				if n := cl.hits() - before; n != 0 {
					t.Errorf("the server on 127.0.0.1 saw %d connections from a sandbox with %v", n, c.flags)
				}
			})
		}
	}
	t.Run("net-deny-interfaces", func(t *testing.T) {
		r := e.sh(`cat /proc/net/dev`, "--net", "deny")
		lines := strings.Split(r.stdout, "\n")
		if r.code != 0 || len(lines) < 3 {
			t.Fatalf("reading /proc/net/dev:\n%s", r)
		}
		for _, l := range lines[2:] {
			name, _, _ := strings.Cut(strings.TrimSpace(l), ":")
			if name != "" && name != "lo" {
				t.Errorf("interface %q visible with --net deny:\n%s", name, r.stdout)
			}
		}
	})
}

// TestNoPrivileges: no capabilities, no_new_privs, a sane uid map, also
// when the test runs as root.
func TestNoPrivileges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.sh(`cat /proc/self/status; echo UIDMAP; cat /proc/self/uid_map; echo GIDMAP; cat /proc/self/gid_map; echo ID $(id -u) $(id -g)`)
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	section := ""
	var uidMap, gidMap []string
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "UIDMAP" || l == "GIDMAP":
			section = l
		case strings.HasPrefix(l, "ID "):
			fields["ID"] = strings.TrimPrefix(l, "ID ")
		case section == "UIDMAP":
			uidMap = append(uidMap, strings.Join(strings.Fields(l), " "))
		case section == "GIDMAP":
			gidMap = append(gidMap, strings.Join(strings.Fields(l), " "))
		default:
			k, v, ok := strings.Cut(l, ":")
			if ok {
				fields[k] = strings.TrimSpace(v)
			}
		}
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if fields[k] != "0000000000000000" {
			t.Errorf("%s = %q inside, want 0000000000000000", k, fields[k])
		}
	}
	if fields["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs = %q, want 1", fields["NoNewPrivs"])
	}
	uid, gid := os.Getuid(), os.Getgid()
	// One id mapped, the caller's own. (The middle field is relative to
	// the parent namespace: as a normal user bwrap nests two namespaces,
	// so it reads "UID 0 1" there.)
	oneID := func(name string, m []string, id int) {
		f := []string{}
		if len(m) == 1 {
			f = strings.Fields(m[0])
		}
		if len(f) != 3 || f[0] != strconv.Itoa(id) || f[2] != "1" {
			t.Errorf("%s = %q, want one line mapping only %d", name, m, id)
		}
	}
	oneID("uid_map", uidMap, uid)
	oneID("gid_map", gidMap, gid)
	if want := fmt.Sprintf("%d %d", uid, gid); fields["ID"] != want {
		t.Errorf("id inside = %q, want %q", fields["ID"], want)
	}
	// Root inside (when the test runs as root) still cannot do root things.
	r = e.sh(`mount -t tmpfs none /mnt 2>&1 && echo MOUNTED; chown 1:1 . 2>&1 && echo CHOWNED; cat /etc/shadow 2>&1 | head -c 200; echo`)
	if strings.Contains(r.stdout, "MOUNTED") || strings.Contains(r.stdout, "CHOWNED") || strings.Contains(r.stdout, "root:") {
		t.Errorf("privileged operation succeeded inside:\n%s", r)
	}
	if isRoot() {
		t.Logf("ran as root; capabilities inside: %s", fields["CapEff"])
	}
}

// TestStatusAndPolicy: cordon status (text and JSON) and cordon policy
// (YAML and --explain).
func TestStatusAndPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run("status")
	if r.code != 0 || !strings.Contains(r.stdout, "bubblewrap") || !strings.Contains(r.stdout, "bwrap") {
		t.Errorf("cordon status:\n%s", r)
	}
	r = e.run("status", "--json")
	if r.code != 0 {
		t.Fatalf("cordon status --json:\n%s", r)
	}
	var st struct {
		AutoBackend string `json:"auto_backend"`
		Kernel      string `json:"kernel"`
		Root        bool   `json:"root"`
		Userns      struct {
			Available bool `json:"available"`
		} `json:"userns"`
		Bwrap struct {
			Path  string `json:"path"`
			Found bool   `json:"found"`
			Works bool   `json:"works"`
		} `json:"bwrap"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json is not JSON: %v\n%s", err, r.stdout)
	}
	if st.AutoBackend != "bwrap" || !st.Bwrap.Found || !st.Bwrap.Works || st.Bwrap.Path != bwrapPath || !st.Userns.Available || st.Kernel == "" {
		t.Errorf("status --json: %+v", st)
	}
	if st.Root != isRoot() {
		t.Errorf("status --json says root=%v, but euid is %d", st.Root, os.Geteuid())
	}

	r = e.run("policy")
	if r.code != 0 {
		t.Fatalf("cordon policy:\n%s", r)
	}
	for _, want := range []string{"workspace: " + e.ws, "profile: development", "mode: standard", e.home + "/.ssh", "**/.env"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("cordon policy lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "--unshare-user") {
		t.Errorf("cordon policy without --explain printed the plan")
	}

	r = e.run("policy", "--explain", "--net", "deny")
	if r.code != 0 {
		t.Fatalf("cordon policy --explain:\n%s", r)
	}
	for _, want := range []string{bwrapPath, "--unshare-user", "--unshare-pid", "--die-with-parent", "--unshare-net", "--new-session", "--cap-drop ALL", "--bind " + e.ws + " " + e.ws} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("cordon policy --explain --net deny lacks %q:\n%s", want, r.stdout)
		}
	}
	r = e.run("policy", "--explain", "--net", "open")
	if r.code != 0 || strings.Contains(r.stdout, "--unshare-net") {
		t.Errorf("cordon policy --explain --net open:\n%s", r)
	}
	r = e.run("policy", "--profile", "nope")
	if r.code != 125 {
		t.Errorf("cordon policy --profile nope: exit %d", r.code)
	}
	checkOneCordonLine(t, r)

	r = e.run("version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "cordon ") {
		t.Errorf("cordon version:\n%s", r)
	}
}
