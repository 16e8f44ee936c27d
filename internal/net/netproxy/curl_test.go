package netproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// requireCurl returns the curl binary; without one the test skips, or
// fails under CI=true.
func requireCurl(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("curl")
	if err != nil {
		testenv.SkipOrFail(t, "curl is missing: %v", err)
	}
	return p
}

// runCurl runs curl with args (no config file, a fake HOME, no proxy
// variables: only the proxy the arguments name) and returns its output,
// its error output and its exit code.
func runCurl(t *testing.T, curl string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, curl, append([]string{"-q", "-sS", "--max-time", "15"}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("curl %q: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

func TestCurl(t *testing.T) {
	curl := requireCurl(t)
	plain := newOrigin(t, false)
	secure := newOrigin(t, true)
	pp, sp := plain.port(), secure.port()
	h := newHarness(t, []string{
		fmt.Sprintf("127.0.0.1:%d", pp), fmt.Sprintf("127.0.0.1:%d", sp),
		fmt.Sprintf("allowed.test:%d", pp), fmt.Sprintf("example.com:%d", sp), "rebind.test",
	}, nil, "")
	httpProxy := "http://" + h.httpAddr
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string // a substring of the output
		wantErr  string // a substring of the error output
	}{
		{"plain http through the HTTP proxy", []string{"-x", httpProxy, fmt.Sprintf("http://127.0.0.1:%d/c", pp)}, 0, "origin /c", ""},
		{"plain http to a name", []string{"-x", httpProxy, fmt.Sprintf("http://allowed.test:%d/c", pp)}, 0, "origin /c", ""},
		{"https through CONNECT", []string{"-k", "-x", httpProxy, fmt.Sprintf("https://127.0.0.1:%d/c", sp)}, 0, "origin /c", ""},
		{"https to a name through CONNECT (SNI = host)", []string{"-k", "-x", httpProxy, fmt.Sprintf("https://example.com:%d/c", sp)}, 0, "origin /c", ""},
		{"http through a CONNECT tunnel", []string{"-p", "-x", httpProxy, fmt.Sprintf("http://allowed.test:%d/c", pp)}, 0, "origin /c", ""},
		{"SOCKS5, name sent to the proxy", []string{"--socks5-hostname", h.socksAddr, fmt.Sprintf("http://allowed.test:%d/c", pp)}, 0, "origin /c", ""},
		{"SOCKS5 URL, https to a name", []string{"-k", "-x", "socks5h://" + h.socksAddr, fmt.Sprintf("https://example.com:%d/c", sp)}, 0, "origin /c", ""},
		{"SOCKS5 to an IP", []string{"--socks5", h.socksAddr, fmt.Sprintf("http://127.0.0.1:%d/c", pp)}, 0, "origin /c", ""},
		{"refused plain http: 403 with the rule and the reason", []string{"-i", "-x", httpProxy, "http://denied.test/c"}, 0,
			"X-Cordon-Denied: no allow rule", ""},
		{"refused plain http: the body", []string{"-x", httpProxy, "http://denied.test/c"}, 0,
			"cordon: network: refused denied.test:80 (no allow rule): no allow entry matches denied.test:80", ""},
		{"refused CONNECT", []string{"-x", httpProxy, "https://denied.test/c"}, 56, "", "403"},
		{"rebinding refused", []string{"-x", httpProxy, "http://rebind.test/c"}, 0,
			"cordon: network: refused rebind.test:80 (loopback address)", ""},
		{"refused SOCKS5", []string{"--socks5-hostname", h.socksAddr, "http://denied.test/c"}, 97, "", "SOCKS5"},
		{"metadata refused through SOCKS5", []string{"--socks5", h.socksAddr, "http://169.254.169.254/latest/meta-data/"}, 97, "", "SOCKS5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCurl(t, curl, tt.args...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("curl %q: exit %d, out %q, err %q; want exit %d, out with %q, err with %q",
					tt.args, code, out, errOut, tt.wantCode, tt.wantOut, tt.wantErr)
			}
		})
	}
	for _, d := range h.Dials() {
		if d != hostPort("127.0.0.1", pp) && d != hostPort("127.0.0.1", sp) {
			t.Errorf("dialed %s", d)
		}
	}
}

func TestCurlToken(t *testing.T) {
	curl := requireCurl(t)
	o := newOrigin(t, false)
	target := hostPort("127.0.0.1", o.port())
	const token = "tok-123"
	h := newHarness(t, []string{target}, nil, token)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"HTTP without the token", []string{"-o", "/dev/null", "-w", "%{http_code}", "-x", "http://" + h.httpAddr, "http://" + target + "/k"}, 0, "407"},
		{"HTTP with a wrong token", []string{"-o", "/dev/null", "-w", "%{http_code}", "-x", "http://cordon:nope@" + h.httpAddr, "http://" + target + "/k"}, 0, "407"},
		{"HTTP with the token", []string{"-x", "http://cordon:" + token + "@" + h.httpAddr, "http://" + target + "/k"}, 0, "origin /k"},
		{"CONNECT with the token", []string{"-p", "-x", "http://cordon:" + token + "@" + h.httpAddr, "http://" + target + "/k"}, 0, "origin /k"},
		{"SOCKS5 without the token", []string{"-x", "socks5h://" + h.socksAddr, "http://" + target + "/k"}, 97, ""},
		{"SOCKS5 with a wrong token", []string{"-x", "socks5h://cordon:nope@" + h.socksAddr, "http://" + target + "/k"}, 97, ""},
		{"SOCKS5 with the token", []string{"-x", "socks5h://cordon:" + token + "@" + h.socksAddr, "http://" + target + "/k"}, 0, "origin /k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCurl(t, curl, tt.args...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) {
				t.Errorf("curl %q: exit %d, out %q, err %q; want exit %d, out with %q", tt.args, code, out, errOut, tt.wantCode, tt.wantOut)
			}
		})
	}
}
