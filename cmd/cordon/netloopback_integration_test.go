//go:build linux

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// goGetClient GETs each argument with Go's net/http as is (its
// ProxyFromEnvironment never proxies a loopback address), printing
// "@@go:STATUS BODY" or "@@go:error ...".
const goGetClient = `package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	for _, u := range os.Args[1:] {
		resp, err := http.Get(u)
		if err != nil {
			fmt.Println("@@go:error", err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("@@go:%d %s\n", resp.StatusCode, b)
	}
}
`

// TestNetAllowLoopback: an --allow-net entry naming one port of a
// loopback address (127.0.0.1:P, localhost:P, [::1]:P) reaches the
// host's server on 127.0.0.1:P from curl (which honours NO_PROXY), Go's
// net/http (which never proxies a loopback address) and Node's http: the
// port is forwarded, as --forward-port does; another port of the host's
// loopback stays out of reach, and cordon policy --explain says so. Under
// bubblewrap and on the Landlock-only backend.
func TestNetAllowLoopback(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	requireTool(t, "curl")
	requireTool(t, "node")
	goClient := goBuild(t, e, "goget", goGetClient)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, netBody) }))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "OTHER") }))
	defer other.Close()
	port, otherPort := strconv.Itoa(portOf(t, srv.URL)), strconv.Itoa(portOf(t, other.URL))
	u := "http://127.0.0.1:" + port + "/"
	script := `echo "@@curl:$(curl -sS --max-time 5 ` + u + ` 2>&1)"
` + goClient + ` ` + u + ` http://localhost:` + port + `/
node -e 'require("http").get("` + u + `", r => { let b = ""; r.on("data", d => b += d); r.on("end", () => console.log("@@node:" + b)); }).on("error", e => console.log("@@node:" + e.code))'
echo "@@other:$(curl -sS --max-time 5 http://127.0.0.1:` + otherPort + `/ 2>&1)"`
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"127.0.0.1", []string{"--allow-net", "127.0.0.1:" + port}},
		{"localhost", []string{"--allow-net", "localhost:" + port, "--allow-net", "example.com:443"}},
		{"::1", []string{"--allow-net", "[::1]:" + port}},
		{"Landlock-only", []string{"--backend", "landlock", "--allow-net", "127.0.0.1:" + port}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.flags[0] == "--backend" {
				requireLandlock(t)
			}
			r := e.sh(script, tc.flags...)
			for _, want := range []string{"@@curl:" + netBody + "\n", "@@go:200 " + netBody + "\n@@go:200 " + netBody + "\n", "@@node:" + netBody + "\n"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("no %q: %s", want, r)
				}
			}
			if strings.Contains(r.stdout, "OTHER") {
				t.Errorf("another port of the host's loopback was reached: %s", r)
			}
			p := e.run(append([]string{"policy", "--explain"}, tc.flags...)...)
			if !strings.Contains(p.stdout, "forwarded port "+port+", for the allow entry naming a loopback address") {
				t.Errorf("policy --explain: %s", p)
			}
		})
	}
}
