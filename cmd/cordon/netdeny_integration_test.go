//go:build linux

package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// goBuild builds the Go program src (package main, no dependencies) into
// the workspace as name, statically (CGO_ENABLED=0: Go's own resolver and
// dialer), with the host's go.
func goBuild(t *testing.T, e *sandboxEnv, name, src string) string {
	t.Helper()
	goBin := requireTool(t, "go")
	dir := filepath.Join(e.root, name+"-src")
	writeFile(t, filepath.Join(dir, "go.mod"), "module "+name+"\n\ngo 1.21\n")
	writeFile(t, filepath.Join(dir, "main.go"), src)
	bin := filepath.Join(e.ws, name)
	build := exec.Command(goBin, "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return "./" + name
}

// goLookupClient looks each argument up with Go's own resolver, then GETs
// http://ARG/, printing "@@go:" lines with the time each took.
const goLookupClient = `package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	for _, h := range os.Args[1:] {
		start := time.Now()
		_, err := net.LookupHost(h)
		fmt.Printf("@@go:lookup %s %dms %v\n", h, time.Since(start).Milliseconds(), err)
		start = time.Now()
		_, err = http.Get("http://" + h + "/")
		fmt.Printf("@@go:get %s %dms %v\n", h, time.Since(start).Milliseconds(), err)
	}
}
`

// TestNetDenyLookups: with the network denied, a name lookup fails at
// once, for the C library's resolver (curl, getent), Go's own and Node's
// own (dns.lookup through getaddrinfo, dns.resolve4 through c-ares), and
// cordon names every host after the run, with the flag that would allow
// it; npm, which retries a failed request for 70 s, gives up at once. No
// lookup leaves the machine: the sandbox's resolv.conf names only the
// name server cordon serves on its own loopback.
func TestNetDenyLookups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	requireTool(t, "curl")
	requireTool(t, "node")
	requireTool(t, "npm")
	goClient := goBuild(t, e, "golookup", goLookupClient)
	// The elapsed time of each client's own failure, in ms, inside the
	// sandbox: "@@ms:NAME N".
	script := `ms() { echo $(( $(date +%s%N) / 1000000 )); }
s=$(ms); curl -sS http://curl.example/ 2>/dev/null; echo "@@ms:curl $(( $(ms) - s ))"
s=$(ms); getent hosts getent.example; echo "@@ms:getent $(( $(ms) - s ))"
` + goClient + ` go.example
node -e '
const dns = require("dns"); const t0 = Date.now();
dns.lookup("node-lookup.example", (e) => { console.log("@@ms:nodelookup " + (Date.now() - t0) + " " + (e && e.code));
  const t1 = Date.now();
  dns.resolve4("node-resolve.example", (e) => console.log("@@ms:noderesolve " + (Date.now() - t1) + " " + (e && e.code))); });'
s=$(ms); npm view left-pad version --registry http://npm.example/ >/dev/null 2>&1; echo "@@ms:npm $(( $(ms) - s ))"
`
	for _, tc := range []struct {
		name  string
		flags []string
		rule  string // how the line names the setting and the advice
	}{
		{"--net deny", []string{"--net", "deny"}, "(network deny, set by --net deny); allow it with --allow-net %s in place of --net deny"},
		{"the minimal profile", []string{"--profile", "minimal"}, "(network deny, set by the minimal profile's network: deny); allow it with --allow-net %s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(e.root, "audit-"+strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
			r := e.sh(script, append([]string{"--audit-log", log}, tc.flags...)...)
			// Each host is one network-lookup record, denied.
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatalf("the audit log: %v", err)
			}
			for _, host := range []string{"curl.example", "go.example", "node-resolve.example"} {
				if !strings.Contains(string(b), `"operation":"network-lookup","host":"`+host+`","action":"denied"`) {
					t.Errorf("no denied network-lookup record of %s in the audit log:\n%s", host, b)
				}
			}
			for _, line := range strings.Split(r.stdout, "\n") {
				var name string
				var ms int
				// npm's own start costs most of a second on a busy
				// machine; what matters is that it does not retry
				// for 70 s.
				if _, err := fmt.Sscanf(line, "@@ms:%s %d", &name, &ms); err == nil && (ms >= 1000 && name != "npm" || ms >= 10000) {
					t.Errorf("%s took %d ms to fail (want under a second; npm under 10)", name, ms)
				}
				if _, err := fmt.Sscanf(line, "@@go:lookup %s %dms", &name, &ms); err == nil && ms >= 1000 {
					t.Errorf("Go's lookup took %d ms to fail", ms)
				}
			}
			if n := strings.Count(r.stdout, "@@ms:") + strings.Count(r.stdout, "@@go:"); n != 7 {
				t.Errorf("%d timings, want 7:\n%s", n, r)
			}
			if !strings.Contains(r.stdout, "ENOTFOUND\n") || strings.Contains(r.stdout, "EAI_AGAIN") {
				t.Errorf("node's lookup did not fail as \"not found\":\n%s", r)
			}
			for _, host := range []string{"curl.example", "getent.example", "go.example", "node-lookup.example", "node-resolve.example", "npm.example"} {
				want := "cordon: network: denied " + host + " " + fmt.Sprintf(tc.rule, host) + "\n"
				if strings.Count(r.stderr, want) != 1 {
					t.Errorf("no line (once) %q:\n%s", want, r)
				}
			}
			if strings.Contains(r.stderr, "denied cordon ") {
				t.Errorf("the sandbox's own host name is named:\n%s", r)
			}
		})
	}
}

// TestNetDenyForwardPort: --net deny --forward-port P (or a config file's
// forward_ports with the network denied) means nothing but P: the
// forwarded port reaches the host's server, another port of the host's
// loopback does not, TCP on the sandbox's own loopback is refused, and
// cordon policy --explain says so.
func TestNetDenyForwardPort(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	requireTool(t, "curl")
	fwd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, netBody) }))
	defer fwd.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "OTHER") }))
	defer other.Close()
	port, otherPort := strconv.Itoa(portOf(t, fwd.URL)), strconv.Itoa(portOf(t, other.URL))
	script := `curl -sS --max-time 5 http://127.0.0.1:` + port + `/hello; echo " @@fwd:$?"
curl -sS --max-time 5 http://127.0.0.1:` + otherPort + `/ 2>/dev/null; echo "@@other:$?"`
	cfg := filepath.Join(e.home, ".config", "cordon", "config.yaml")
	for _, tc := range []struct {
		name  string
		user  string
		flags []string
	}{
		{"--net deny --forward-port", "", []string{"--net", "deny", "--forward-port", port}},
		{"config file", "sandbox:\n  profile: minimal\n  network:\n    forward_ports: [" + port + "]\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.user != "" {
				writeFile(t, cfg, tc.user)
				defer os.Remove(cfg)
			}
			r := e.sh(script, tc.flags...)
			if r.code != 0 || !strings.Contains(r.stdout, netBody+" @@fwd:0") || strings.Contains(r.stdout, "OTHER") || strings.Contains(r.stdout, "@@other:0") {
				t.Errorf("forwarded port: %s", r)
			}
			p := e.run(append([]string{"policy", "--explain"}, tc.flags...)...)
			if p.code != 0 || !strings.Contains(p.stdout, "mode: deny") || !strings.Contains(p.stdout, "nothing reachable but the forwarded ports") ||
				!strings.Contains(p.stdout, "forwarded port "+port+": 127.0.0.1:"+port+" inside is joined to the host's 127.0.0.1:"+port) {
				t.Errorf("policy --explain: %s", p)
			}
		})
	}
	// Nothing else on the loopback: a server inside cannot listen.
	requireTool(t, "python3")
	r := e.sh(`python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 8766)); s.listen(); print("@@listened")' 2>&1`, "--net", "deny", "--forward-port", port)
	if strings.Contains(r.stdout, "@@listened") {
		t.Errorf("a server listened inside a denied network: %s", r)
	}
}
