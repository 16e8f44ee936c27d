//go:build linux

package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostToken is the credential the host's tool settings hold: it must
// never reach the sandbox, nor a request the sandbox sends.
const hostToken = "HOST-TOKEN-5e1d9a"

// registry is a package registry for npm and pip, served on 127.0.0.1 by
// the test: one npm package and one Python wheel. It records the
// Authorization headers it is sent.
type registry struct {
	srv   *httptest.Server
	mu    sync.Mutex
	auths []string
	paths []string
}

func newRegistry(t *testing.T) *registry {
	t.Helper()
	tgz := npmTarball(t, "cordon-pad", "module.exports = s => '[' + s + ']';\n")
	whl := wheel(t)
	r := &registry{}
	mux := http.NewServeMux()
	mux.HandleFunc("/cordon-pad", func(w http.ResponseWriter, req *http.Request) {
		sum := sha512.Sum512(tgz)
		meta := map[string]any{
			"name":      "cordon-pad",
			"dist-tags": map[string]string{"latest": "1.0.0"},
			"versions": map[string]any{"1.0.0": map[string]any{
				"name": "cordon-pad", "version": "1.0.0",
				"dist": map[string]string{
					"tarball":   r.srv.URL + "/cordon-pad/-/cordon-pad-1.0.0.tgz",
					"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:]),
				},
			}},
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(meta)
	})
	mux.HandleFunc("/cordon-pad/-/cordon-pad-1.0.0.tgz", func(w http.ResponseWriter, req *http.Request) {
		_, _ = w.Write(tgz)
	})
	mux.HandleFunc("/simple/cordon-demo/", func(w http.ResponseWriter, req *http.Request) {
		sum := sha256.Sum256(whl)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="%s/files/cordon_demo-1.0-py3-none-any.whl#sha256=%s">cordon_demo-1.0-py3-none-any.whl</a></body></html>`, r.srv.URL, hex.EncodeToString(sum[:]))
	})
	mux.HandleFunc("/files/cordon_demo-1.0-py3-none-any.whl", func(w http.ResponseWriter, req *http.Request) {
		_, _ = w.Write(whl)
	})
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auths = append(r.auths, req.Header.Get("Authorization"))
		r.paths = append(r.paths, req.URL.Path)
		r.mu.Unlock()
		mux.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// seen returns the request paths and every Authorization header sent.
func (r *registry) seen() (paths, auths []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...), append([]string(nil), r.auths...)
}

// npmTarball is an npm package tarball: package/package.json and
// package/index.js.
func npmTarball(t *testing.T, name, index string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", fmt.Sprintf(`{"name":%q,"version":"1.0.0","main":"index.js"}`, name)},
		{"package/index.js", index},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(1e9, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// wheel is a pure-Python wheel of the project cordon-demo 1.0.
func wheel(t *testing.T) []byte {
	t.Helper()
	files := []struct{ name, body string }{
		{"cordon_demo/__init__.py", "VALUE = 42\n"},
		{"cordon_demo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: cordon-demo\nVersion: 1.0\n"},
		{"cordon_demo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: cordon-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(f.body))
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString("cordon_demo-1.0.dist-info/RECORD,,\n")
	w, err := zw.Create("cordon_demo-1.0.dist-info/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// needProgram finds a program the test drives; under CI=true a missing one
// fails the test.
func needProgram(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		skipOrFail(t, name+" not found: "+err.Error())
	}
	return p
}

// TestNpmRegistryFromHostNpmrc: the registry in the host's ~/.npmrc
// carries over (the file itself stays denied, for its token): npm
// install inside fetches from it, sends no credential, and cordon names
// the token it left out, with how to pass it.
func TestNpmRegistryFromHostNpmrc(t *testing.T) {
	t.Parallel()
	needProgram(t, "npm")
	e := newEnv(t)
	reg := newRegistry(t)
	host := strings.TrimPrefix(reg.srv.URL, "http://")
	writeFile(t, filepath.Join(e.home, ".npmrc"), strings.Join([]string{
		"registry=" + reg.srv.URL + "/",
		"//" + host + "/:_authToken=" + hostToken,
		"update-notifier=false",
		"audit=false",
		"fund=false",
	}, "\n")+"\n")
	writeFile(t, filepath.Join(e.ws, "package.json"), `{"name":"proj","version":"1.0.0","dependencies":{"cordon-pad":"1.0.0"}}`)

	// The registry is checked first: npm install must not go anywhere
	// but the test's own server.
	script := `test "$(npm config get registry)" = "$1" || { echo "registry inside: $(npm config get registry)"; exit 97; }
npm install --no-audit --no-fund && node -e 'console.log(require("cordon-pad")("ok"))' && env`
	r := e.runTimeout(2*time.Minute, nil, "run", "--", "sh", "-c", script, "sh", reg.srv.URL+"/")
	if r.code != 0 {
		t.Fatalf("npm install from the host's registry: %s", r)
	}
	if !strings.Contains(r.stdout, "[ok]") {
		t.Errorf("the installed package did not run: %s", r)
	}
	if strings.Contains(r.all(), hostToken) {
		t.Errorf("the host's npm token reached the sandbox: %s", r)
	}
	wantNote := "cordon: note: ~/.npmrc: //" + host + "/:_authToken not passed (a credential"
	if !strings.Contains(r.stderr, wantNote) || !strings.Contains(r.stderr, "sandbox.credentials") {
		t.Errorf("no note naming the token left out and how to pass it (want %q): %s", wantNote, r)
	}
	paths, auths := reg.seen()
	if len(paths) == 0 {
		t.Fatalf("npm never asked the host's registry: %s", r)
	}
	for _, a := range auths {
		if a != "" {
			t.Errorf("npm sent a credential from inside: Authorization %q", a)
		}
	}
	// The file stays denied: the token cannot be read.
	if r := e.sh(`cat ~/.npmrc`); strings.Contains(r.all(), hostToken) {
		t.Errorf("~/.npmrc is readable inside: %s", r)
	}
}

// TestPipIndexFromHostPipConf: pip's index in the host's pip.conf carries
// over, pip downloads from it inside; an index URL with a password in it
// is left out with a note.
func TestPipIndexFromHostPipConf(t *testing.T) {
	t.Parallel()
	python := "/usr/bin/python3"
	if out, err := exec.Command(python, "-m", "pip", "--version").CombinedOutput(); err != nil {
		skipOrFail(t, "pip for "+python+" is needed (Debian package python3-pip): "+strings.TrimSpace(string(out)))
	}
	e := newEnv(t)
	reg := newRegistry(t)
	writeFile(t, filepath.Join(e.home, ".config", "pip", "pip.conf"),
		"[global]\nindex-url = "+reg.srv.URL+"/simple\ndisable-pip-version-check = true\n")
	// The index is checked first: pip must not go anywhere but the test's
	// own server.
	script := `test "$PIP_INDEX_URL" = "$1" || { echo "index inside: $PIP_INDEX_URL"; exit 97; }
exec "$2" -m pip download --no-deps --no-cache-dir -d dl cordon-demo`
	r := e.runTimeout(2*time.Minute, nil, "run", "--", "sh", "-c", script, "sh", reg.srv.URL+"/simple", python)
	if r.code != 0 {
		t.Fatalf("pip download from the host's index: %s", r)
	}
	if !exists(filepath.Join(e.ws, "dl", "cordon_demo-1.0-py3-none-any.whl")) {
		t.Errorf("the wheel was not downloaded: %s", r)
	}

	// An index URL with a password stays on the host.
	e.extra = append(e.extra, "PIP_INDEX_URL=http://user:"+hostToken+"@"+strings.TrimPrefix(reg.srv.URL, "http://")+"/simple")
	r = e.run("run", "--", "env")
	if strings.Contains(r.all(), hostToken) {
		t.Errorf("a pip index URL with a password reached the sandbox: %s", r)
	}
	if !strings.Contains(r.stderr, "cordon: note: PIP_INDEX_URL not passed (it holds a credential); pass it with --env PIP_INDEX_URL") {
		t.Errorf("no note for the pip index URL left out: %s", r)
	}
	// Passing it explicitly passes it, and silences the note.
	r = e.run("run", "--env", "PIP_INDEX_URL", "--", "env")
	if !strings.Contains(r.stdout, "PIP_INDEX_URL=http://user:"+hostToken) || strings.Contains(r.stderr, "PIP_INDEX_URL not passed") {
		t.Errorf("--env PIP_INDEX_URL did not pass it: %s", r)
	}
}

// TestGoAndProxySettingsCarryOver: `go env -w` settings and the proxy
// variables reach the go command inside; a proxy URL with a password, and
// the proxies when the network is off, are left out with a note.
func TestGoAndProxySettingsCarryOver(t *testing.T) {
	t.Parallel()
	goBin := requireGo(t)
	e := newEnv(t)
	e.extra = append(e.extra,
		"PATH="+filepath.Dir(goBin)+":/usr/local/bin:/usr/bin:/bin",
		"HTTPS_PROXY=http://127.0.0.1:3128",
		"NO_PROXY=localhost,.corp.example",
		"http_proxy=http://user:"+hostToken+"@127.0.0.1:3128",
	)
	goEnvFile := filepath.Join(e.home, ".config", "go", "env")
	writeFile(t, goEnvFile, "GOPRIVATE=corp.example/*\nGOPROXY=https://athens.corp.example,direct\nGOFLAGS=-mod=mod\n")

	r := e.run("run", "--", "sh", "-c", `go env GOPRIVATE GOPROXY GOFLAGS; env`)
	if r.code != 0 {
		t.Fatalf("go env inside: %s", r)
	}
	lines := strings.Split(r.stdout, "\n")
	if len(lines) < 3 || lines[0] != "corp.example/*" || !strings.HasSuffix(lines[1], "https://athens.corp.example,direct") || !strings.Contains(lines[2], "-mod=mod") {
		t.Errorf("go env inside does not have the host's GOPRIVATE, GOPROXY and GOFLAGS: %s", r)
	}
	for _, want := range []string{"HTTPS_PROXY=http://127.0.0.1:3128\n", "NO_PROXY=localhost,.corp.example\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the environment inside lacks %q: %s", want, r)
		}
	}
	if strings.Contains(r.all(), hostToken) {
		t.Errorf("a proxy URL with a password reached the sandbox: %s", r)
	}
	if !strings.Contains(r.stderr, "cordon: note: http_proxy not passed (it holds a user name or password); pass it with --env http_proxy") {
		t.Errorf("no note for the proxy left out: %s", r)
	}

	// With the network off, the proxies have nothing to do; cordon says so.
	r = e.run("run", "--net", "deny", "--", "env")
	if strings.Contains(r.stdout, "HTTPS_PROXY=") {
		t.Errorf("HTTPS_PROXY passed with the network off: %s", r)
	}
	if !strings.Contains(r.stderr, "cordon: note: HTTPS_PROXY not passed (the network is off); --net open passes it") {
		t.Errorf("no note for the proxy dropped with the network off: %s", r)
	}
	// The go env file stays unreadable inside; only the settings travel.
	if r := e.sh(`cat ` + goEnvFile); r.code == 0 {
		t.Errorf("the host's go env file is readable inside: %s", r)
	}
	if b, err := os.ReadFile(goEnvFile); err != nil || !strings.Contains(string(b), "GOPRIVATE=corp.example/*") {
		t.Errorf("the host's go env file changed: %q, %v", b, err)
	}
}
