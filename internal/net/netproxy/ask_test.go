package netproxy

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// TestAsk: Config.Ask is asked about a target no allow entry names, and
// only about it (never a deny entry, a special address, an allowed
// host); a yes lets the request through with its addresses still checked
// (rebind.test resolves to a metadata address too, which is not dialed),
// a no refuses it as without Ask.
func TestAsk(t *testing.T) {
	o := newOrigin(t, false)
	port := strconv.Itoa(o.port())
	var mu sync.Mutex
	var asked []string
	h := newHarnessWith(t, []string{"127.0.0.1:" + port, "allowed.test"}, []string{"denied.test"}, "", func(c *Config) {
		c.Ask = func(_ context.Context, host string, p int) bool {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, host+":"+strconv.Itoa(p))
			return host == "rebind.test"
		}
	})
	c := h.httpClient(nil)
	for _, tc := range []struct {
		host   string
		status int
		asked  bool
	}{
		{"rebind.test", http.StatusOK, true},
		{"public.test", http.StatusForbidden, true},
		{"allowed.test", http.StatusOK, false},
		{"denied.test", http.StatusForbidden, false},
		{"10.1.2.3", http.StatusForbidden, false},
		{"169.254.169.254", http.StatusForbidden, false},
	} {
		mu.Lock()
		n := len(asked)
		mu.Unlock()
		status, _, _, err := get(t, c, "http://"+hostPort(tc.host, o.port())+"/x", "")
		if err != nil {
			t.Fatalf("%s: %v", tc.host, err)
		}
		if status != tc.status {
			t.Errorf("%s: status %d, want %d", tc.host, status, tc.status)
		}
		mu.Lock()
		got := len(asked) > n
		mu.Unlock()
		if got != tc.asked {
			t.Errorf("%s: asked %v, want %v (asked %v)", tc.host, got, tc.asked, asked)
		}
	}
	if slices.Contains(h.Dials(), "169.254.169.254:"+port) {
		t.Errorf("dialed the metadata address of an asked name: %v", h.Dials())
	}
	for _, e := range h.Events() {
		if e.Host == "rebind.test" && e.Allowed && e.Rule != "127.0.0.1:"+port {
			t.Errorf("rebind.test allowed by %q", e.Rule)
		}
	}
}
