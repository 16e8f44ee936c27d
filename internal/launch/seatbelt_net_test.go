//go:build linux || darwin

package launch

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/net/netproxy"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/plan/sbpl"
	"github.com/cordon-sandbox/cordon/policy"
)

// seatbeltNetPlan builds a Seatbelt plan (it builds on any system) whose
// network is filtered with allow entries allow.
func seatbeltNetPlan(t *testing.T, allow ...string) *plan.Plan {
	t.Helper()
	dir := t.TempDir()
	p := &policy.Policy{Mode: policy.ModeStandard, Backend: backend.Seatbelt, Workspace: dir, Read: []string{dir}, Write: []string{dir},
		Network: policy.Network{Mode: policy.NetFiltered, Allow: allow}}
	pl, err := plan.Build(p, []string{"true"}, plan.Options{Home: dir, Cwd: dir, StateDir: filepath.Join(dir, "state"), RunID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// TestSeatbeltNet: the network of a Seatbelt run with a filtered network
// (startSeatbeltNet, which runSeatbelt calls on macOS; sandbox-exec
// itself is not run here): the proxies listen on the host's 127.0.0.1
// with the run's token; the profile that runs allows connecting to
// exactly their two ports of the loopback, and the command's
// environment names them with the token; the plan given stays as built;
// an allowed host is reached through the proxy, another is refused and
// listed once the proxy is closed, and a request without the token is
// refused (407). Closing stops the listeners. A bad rule or a forwarded
// port nothing listens on fails before anything listens.
func TestSeatbeltNet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello") }))
	defer srv.Close()
	allowed := strings.TrimPrefix(srv.URL, "http://")
	pl := seatbeltNetPlan(t, allowed)
	argv := slices.Clone(pl.Argv)

	var mu sync.Mutex
	var events []netproxy.Event
	run, nr, err := startSeatbeltNet(pl, Stdio{NetEvents: func(e netproxy.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer nr.close()
	n := run.Net
	if n.HTTPPort == 0 || n.SOCKSPort == 0 || n.HTTPPort == n.SOCKSPort || len(n.Token) != 32 {
		t.Fatalf("ports %d and %d, token %q", n.HTTPPort, n.SOCKSPort, n.Token)
	}
	if pl.Net.HTTPPort != 0 || pl.Net.Token != "" || !slices.Equal(pl.Argv, argv) {
		t.Errorf("the plan given was changed: net %+v", pl.Net)
	}
	prof := run.Seatbelt.Profile
	if err := sbpl.Check(prof); err != nil {
		t.Fatal(err)
	}
	if run.Argv[0] != plan.SandboxExec || run.Argv[2] != prof || run.Argv[len(run.Argv)-1] != "true" {
		t.Errorf("argv %q", run.Argv)
	}
	proxyRule := fmt.Sprintf(`(allow network-outbound (remote ip "localhost:%d") (remote ip "localhost:%d"))`, n.HTTPPort, n.SOCKSPort)
	if !strings.HasSuffix(prof, proxyRule+"\n") || strings.Count(prof, `(remote ip "`) != 2 {
		t.Errorf("the profile does not end with %s, or allows other addresses:\n%s", proxyRule, prof)
	}
	httpURL := "http://cordon:" + n.Token + "@127.0.0.1:" + strconv.Itoa(n.HTTPPort)
	if !slices.Contains(run.Env, "HTTP_PROXY="+httpURL) || !slices.Contains(run.Env, "ALL_PROXY=socks5h://cordon:"+n.Token+"@127.0.0.1:"+strconv.Itoa(n.SOCKSPort)) {
		t.Errorf("env %q", run.Env)
	}

	get := func(proxy, target string) (int, string) {
		t.Helper()
		u, err := url.Parse(proxy)
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}, Timeout: 10 * time.Second}
		resp, err := c.Get(target)
		if err != nil {
			t.Fatalf("GET %s through %s: %v", target, proxy, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(httpURL, srv.URL); code != http.StatusOK || body != "hello" {
		t.Errorf("the allowed host: %d %q", code, body)
	}
	other, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if code, _ := get(httpURL, "http://"+other.Addr().String()+"/"); code != http.StatusForbidden {
		t.Errorf("a host not allowed: %d, want 403", code)
	}
	if code, _ := get("http://127.0.0.1:"+strconv.Itoa(n.HTTPPort), srv.URL); code != http.StatusProxyAuthRequired {
		t.Errorf("without the token: %d, want 407", code)
	}

	nr.close()
	if c, err := net.DialTimeout("tcp4", "127.0.0.1:"+strconv.Itoa(n.HTTPPort), time.Second); err == nil {
		c.Close()
		t.Error("the HTTP proxy still listens once closed")
	}
	refused := nr.refusals()
	if len(refused) != 1 || refused[0].Host != "127.0.0.1" || refused[0].Port != other.Addr().(*net.TCPAddr).Port {
		t.Errorf("refusals %+v", refused)
	}
	mu.Lock()
	if len(events) < 2 {
		t.Errorf("events %+v, want the allowed and the refused request", events)
	}
	mu.Unlock()

	// Fail closed: no proxy, no run.
	bad := seatbeltNetPlan(t, allowed)
	bad.Net.Allow = []string{"https://example.com/"}
	if _, nr, err := startSeatbeltNet(bad, Stdio{}); err == nil || nr != nil {
		t.Errorf("a bad rule: %v", err)
	}
	fwd := seatbeltNetPlan(t, allowed)
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	fwd.Net.ForwardPorts = []int{port}
	if _, _, err := startSeatbeltNet(fwd, Stdio{}); err == nil || !strings.Contains(err.Error(), "nothing listens") {
		t.Errorf("a forwarded port nothing listens on: %v", err)
	}
	notSeatbelt := seatbeltNetPlan(t, allowed)
	notSeatbelt.Net.Seatbelt = false
	if _, _, err := startSeatbeltNet(notSeatbelt, Stdio{}); err == nil {
		t.Error("a filtered network the profile does not confine was started")
	}
	open := seatbeltNetPlan(t)
	open.Net = nil
	if run, nr, err := startSeatbeltNet(open, Stdio{}); err != nil || nr != nil || run != open {
		t.Errorf("no filtered network: %v, %v", nr, err)
	}
}
