//go:build linux

package main

// Credentials the command uses but never sees: a server the test starts
// on 127.0.0.1 as "localhost" (the name /etc/hosts maps there) and as
// credName (for gh, which sends a request for localhost past the proxy;
// a cordon of cordonWithHosts maps it there), with a
// certificate of a CA the test makes and gives cordon's own process
// through SSL_CERT_FILE, needs the secret; the command holds a
// placeholder. No test sends a packet anywhere but 127.0.0.1.

import (
	"archive/zip"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/net/credential"
	"github.com/cordon-sandbox/cordon/internal/testenv"
)

const credSecret = "ghp_REALsecretREALsecretREALsecret012345"

// credName is the bound server's name for clients that reach localhost
// past the proxy; cordonWithHosts(e, credHosts) maps it to 127.0.0.1.
const (
	credName  = "name.test"
	credHosts = "127.0.0.1 " + credName + "\n"
)

// credGhUser is what the bound server's GitHub API answers to gh api /user
// with the secret.
const credGhUser = `{"login":"cordon-gh-8c2","id":4242}`

// credServers are the test's HTTPS servers: bound, "localhost" and
// credName, which checks the secret (/api/, GitHub Enterprise's
// /api/v3/user, git http-backend at /git/, an npm registry's publish at
// /cordon-cred-pkg), and other, 127.0.0.1, which echoes the
// Authorization it got.
type credServers struct {
	boundPort, otherPort int
	roots                string // the test's CA and other's certificate: cordon's SSL_CERT_FILE
	bare                 string // the bare repository git pushes to
	mu                   sync.Mutex
	otherAuth            []string
	npmAuth              []string
	ghAuth               []string // the scheme of each /api/v3/user request's Authorization, and whether it held the secret
}

func startCredServers(t *testing.T, e *sandboxEnv) *credServers {
	t.Helper()
	cs := &credServers{}
	ca, err := credential.NewCA([]string{"localhost", credName})
	if err != nil {
		t.Fatal(err)
	}
	cs.bare = gitDumbRepo(t, e)
	gitCmd := exec.Command("git", "-C", cs.bare, "config", "http.receivepack", "true")
	if out, err := gitCmd.CombinedOutput(); err != nil {
		t.Fatalf("git config: %v\n%s", err, out)
	}
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Root: "/git",
		Env:  []string{"GIT_PROJECT_ROOT=" + filepath.Dir(cs.bare), "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=agent", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + e.root},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer "+credSecret {
			io.WriteString(w, "AUTH-OK")
			return
		}
		http.Error(w, "AUTH-BAD", http.StatusUnauthorized)
	})
	mux.HandleFunc("/api/v3/user", func(w http.ResponseWriter, r *http.Request) {
		scheme, value, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		cs.mu.Lock()
		cs.ghAuth = append(cs.ghAuth, fmt.Sprintf("%s %s %v", r.Method, scheme, value == credSecret))
		cs.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if (scheme != "token" && scheme != "Bearer") || value != credSecret {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"message":"Bad credentials"}`)
			return
		}
		io.WriteString(w, credGhUser)
	})
	mux.HandleFunc("/git/", func(w http.ResponseWriter, r *http.Request) {
		if _, pass, ok := r.BasicAuth(); !ok || pass != credSecret {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication needed", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})
	mux.HandleFunc("/cordon-cred-pkg", func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		cs.npmAuth = append(cs.npmAuth, r.Method+" "+r.Header.Get("Authorization"))
		cs.mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method != http.MethodPut || r.Header.Get("Authorization") != "Bearer "+credSecret {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"ok":true}`)
	})
	bound := httptest.NewUnstartedServer(mux)
	bound.TLS = &tls.Config{GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if hello.ServerName == credName {
			return ca.Leaf(credName)
		}
		return ca.Leaf("localhost")
	}}
	bound.StartTLS()
	t.Cleanup(bound.Close)
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		cs.otherAuth = append(cs.otherAuth, r.Header.Get("Authorization"))
		cs.mu.Unlock()
		io.WriteString(w, "OTHER "+r.Header.Get("Authorization"))
	}))
	t.Cleanup(other.Close)
	cs.boundPort, cs.otherPort = portOf(t, bound.URL), portOf(t, other.URL)
	cs.roots = filepath.Join(e.root, "roots.pem")
	writeFile(t, cs.roots, string(ca.CertPEM())+string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: other.Certificate().Raw})))
	return cs
}

// credFlags are the flags of a run with the credential api for
// localhost:PORT: the addresses the names resolve to (the loopback needs
// an IP rule), and NO_PROXY emptied (it names localhost and 127.0.0.1).
func (cs *credServers) credFlags() []string {
	return []string{
		"--allow-net", fmt.Sprintf("127.0.0.1:%d", cs.boundPort), "--allow-net", fmt.Sprintf("127.0.0.1:%d", cs.otherPort),
		"--env", "NO_PROXY=", "--env", "no_proxy=", "--credential", "api",
	}
}

// credDump is a script line that writes what the sandbox holds into the
// workspace, for the test to search for the secret: its environment
// (dump-env.txt) and every process's environment and command line
// (dump-proc.txt).
const credDump = `env > dump-env.txt; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' > dump-proc.txt`

// TestCredentialUse: curl, git and npm inside use the credential through
// the proxy: the bound host gets the secret, another allowed host the
// placeholder; method and path rules refuse; the secret is nowhere
// inside (environment, /proc, files, answers) nor in cordon's output or
// audit log; each use is an audit record.
func TestCredentialUse(t *testing.T) {
	t.Parallel()
	for _, be := range []string{"bwrap", "landlock"} {
		t.Run(be, func(t *testing.T) {
			e := newEnv(t)
			if be == "landlock" {
				requireLandlock(t)
			}
			requireTool(t, "curl")
			cs := startCredServers(t, e)
			e.extra = append(e.extra, "SSL_CERT_FILE="+cs.roots, "API_TOKEN="+credSecret)
			writeFile(t, filepath.Join(e.home, ".config", "cordon", "config.yaml"), fmt.Sprintf(`sandbox:
  credentials:
    - name: api
      hosts: ["localhost:%d"]
      env: API_TOKEN
      npmrc: true
      methods: [GET, POST, PUT]
      paths: [/api/, /git/, /cordon-cred-pkg]
      git_username: agent
`, cs.boundPort))
			bound := fmt.Sprintf("https://localhost:%d", cs.boundPort)
			script := strings.Join([]string{
				`echo "@@ph:$API_TOKEN"`,
				`echo "@@api:$(curl -sS -H "Authorization: Bearer $API_TOKEN" ` + bound + `/api/x)"`,
				fmt.Sprintf(`echo "@@other:$(curl -sS -H "Authorization: Bearer $API_TOKEN" https://127.0.0.1:%d/x)"`, cs.otherPort),
				`echo "@@delete:$(curl -sS -X DELETE -H "Authorization: Bearer $API_TOKEN" ` + bound + `/api/x)"`,
				`echo "@@private:$(curl -sS -H "Authorization: Bearer $API_TOKEN" ` + bound + `/private/x)"`,
				// git over HTTPS: Basic with the placeholder as password.
				`git clone -q "https://agent:$API_TOKEN@localhost:` + fmt.Sprint(cs.boundPort) + `/git/repo.git" cl 2>&1 && cd cl && echo two > two && git add two &&
				 git -c user.name=t -c user.email=t@t commit -qm two && git push -q origin HEAD:main 2>&1 && echo "@@git:pushed"; cd ..`,
				// git with no password of its own: the credential's helper.
				`git clone -q https://localhost:` + fmt.Sprint(cs.boundPort) + `/git/repo.git cl2 </dev/null 2>&1 && echo "@@githelper:$(cat cl2/README)"`,
				// What the sandbox holds, for the test to search.
				credDump,
				`cat "$SSL_CERT_FILE" > dump-bundle.txt; ls -la "$TMPDIR" > dump-tmp.txt; cat "$TMPDIR"/* >> dump-tmp.txt 2>/dev/null; true`,
			}, "\n")
			audit := filepath.Join(e.root, "audit.jsonl")
			args := append([]string{"--backend", be, "--audit-log", audit}, cs.credFlags()...)
			// Two clones and a push through the proxy: more than a
			// plain command's time on a loaded machine.
			r := e.runTimeout(90*time.Second, nil, append(append([]string{"run"}, args...), "--", "sh", "-c", script)...)
			t.Logf("%s", r)
			ph := marked(r.stdout, "ph")
			if !regexp.MustCompile(`^ghp_[A-Za-z0-9]{36}$`).MatchString(ph) || ph == credSecret {
				t.Errorf("the placeholder inside is %q, want one of the secret's shape", ph)
			}
			if got := marked(r.stdout, "api"); got != "AUTH-OK" {
				t.Errorf("curl to the bound host: %q, want AUTH-OK (the secret put in)", got)
			}
			if got := marked(r.stdout, "other"); got != "OTHER Bearer "+ph {
				t.Errorf("curl to another host: %q, want the placeholder", got)
			}
			for name, rule := range map[string]string{"delete": "credential api: methods GET, POST, PUT", "private": "credential api: paths /api/, /git/, /cordon-cred-pkg"} {
				if got := marked(r.stdout, name); !strings.Contains(got, "("+rule+")") {
					t.Errorf("%s: %q, want a refusal naming %q", name, got, rule)
				}
			}
			if got := marked(r.stdout, "githelper"); got != "DUMB-GIT-CONTENT-9a2" {
				t.Errorf("git clone with the credential's helper: %q", got)
			}
			if got := marked(r.stdout, "git"); got != "pushed" {
				t.Errorf("git push over HTTPS: %q, want pushed", got)
			}
			if want := fmt.Sprintf("cordon: network: refused localhost:%d (credential api: methods GET, POST, PUT)", cs.boundPort); !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks the refused use's line %q", want)
			}
			// The secret nowhere.
			seen := map[string]string{"stdout": r.stdout, "stderr": r.stderr, "audit log": readFile(t, audit)}
			for _, f := range []string{"dump-env.txt", "dump-proc.txt", "dump-bundle.txt", "dump-tmp.txt"} {
				seen[f] = readFile(t, filepath.Join(e.ws, f))
			}
			if !strings.Contains(seen["dump-env.txt"], "API_TOKEN="+ph) || !strings.Contains(seen["dump-bundle.txt"], "BEGIN CERTIFICATE") {
				t.Errorf("the dumps are not what the sandbox holds: env %q", seen["dump-env.txt"])
			}
			for where, s := range seen {
				if strings.Contains(s, credSecret) {
					t.Errorf("the secret shows in %s", where)
				}
			}
			// One record per use, never a value.
			uses := map[string]int{}
			for _, rec := range readAudit(t, audit) {
				if rec["operation"] != "credential-use" {
					continue
				}
				if rec["credential"] != "api" || rec["host"] != "localhost" {
					t.Errorf("credential-use record %v", rec)
				}
				uses[fmt.Sprint(rec["action"], " ", rec["method"], " ", rec["path"])]++
			}
			for _, want := range []string{"allowed GET /api/x", "denied DELETE /api/x", "denied GET /private/x", "allowed POST /git/repo.git/git-receive-pack"} {
				if uses[want] == 0 {
					t.Errorf("no credential-use record %q: %v", want, uses)
				}
			}
		})
	}
}

// TestCredentialNpmPublish: npm publish inside, with the credential's
// placeholder as its registry's _authToken, publishes to a registry that
// requires the token.
func TestCredentialNpmPublish(t *testing.T) {
	t.Parallel()
	for _, be := range []string{"bwrap", "landlock"} {
		t.Run(be, func(t *testing.T) {
			e := newEnv(t)
			if be == "landlock" {
				requireLandlock(t)
			}
			requireTool(t, "npm")
			cs := startCredServers(t, e)
			e.extra = append(e.extra, "SSL_CERT_FILE="+cs.roots, "API_TOKEN="+credSecret)
			writeFile(t, filepath.Join(e.home, ".config", "cordon", "config.yaml"), fmt.Sprintf("sandbox:\n  credentials:\n    - {name: api, hosts: [\"localhost:%d\"], env: API_TOKEN, npmrc: true}\n", cs.boundPort))
			writeFile(t, filepath.Join(e.ws, "package.json"), `{"name": "cordon-cred-pkg", "version": "1.0.0", "description": "x", "license": "MIT"}`)
			r := e.runTimeout(90*time.Second, nil, append(append([]string{"run", "--backend", be}, cs.credFlags()...),
				"--", "npm", "publish", "--registry", fmt.Sprintf("https://localhost:%d/", cs.boundPort), "--ignore-scripts", "--no-audit", "--no-fund", "--fetch-retries=0")...)
			t.Logf("%s", r)
			cs.mu.Lock()
			got := strings.Join(cs.npmAuth, "\n")
			cs.mu.Unlock()
			if r.code != 0 || !strings.Contains(got, "PUT Bearer "+credSecret) {
				t.Errorf("npm publish: exit %d, the registry got %q; want a PUT with the secret", r.code, got)
			}
			if strings.Contains(r.stdout+r.stderr, credSecret) {
				t.Errorf("the secret shows in cordon's output")
			}
		})
	}
}

// TestCredentialGh: gh api inside, given the placeholder as the token of a
// GitHub Enterprise host (GH_HOST=credName:PORT, so gh asks
// https://credName:PORT/api/v3/user, through the proxy), reaches the bound
// host with the secret and prints its answer; the secret is nowhere in the
// run's output nor in the sandbox's environment or /proc.
func TestCredentialGh(t *testing.T) {
	t.Parallel()
	for _, be := range []string{"bwrap", "landlock"} {
		t.Run(be, func(t *testing.T) {
			e := newEnv(t)
			if be == "landlock" {
				requireLandlock(t)
			}
			testenv.Tool(t, "gh", "apt-get install -y gh")
			cs := startCredServers(t, e)
			cordon := cordonWithHosts(e, credHosts)
			host := fmt.Sprintf("%s:%d", credName, cs.boundPort)
			e.extra = append(e.extra, "SSL_CERT_FILE="+cs.roots, "GH_ENTERPRISE_TOKEN="+credSecret)
			writeFile(t, filepath.Join(e.home, ".config", "cordon", "config.yaml"), fmt.Sprintf("sandbox:\n  credentials:\n    - {name: api, hosts: [%q], env: GH_ENTERPRISE_TOKEN, methods: [GET], paths: [/api/v3/]}\n", host))
			// gh 2.23 sends GH_ENTERPRISE_TOKEN to a host not github.com
			// (never GH_TOKEN), as "Authorization: token VALUE".
			script := `echo "@@ph:$GH_ENTERPRISE_TOKEN"; out=$(gh api /user 2>&1); echo "@@ghexit:$?"; echo "@@gh:$out"; ` + credDump
			args := append([]string{"run", "--backend", be, "--env", "GH_HOST=" + host, "--env", "GH_NO_UPDATE_NOTIFIER=1"}, cs.credFlags()...)
			r := e.runBin(cordon, nil, append(args, "--", "sh", "-c", script)...)
			t.Logf("%s", r)
			cs.mu.Lock()
			ghAuth := strings.Join(cs.ghAuth, "; ")
			cs.mu.Unlock()
			ph := marked(r.stdout, "ph")
			if !regexp.MustCompile(`^ghp_[A-Za-z0-9]{36}$`).MatchString(ph) || ph == credSecret {
				t.Errorf("the placeholder inside is %q, want one of the secret's shape", ph)
			}
			if got := marked(r.stdout, "gh"); got != credGhUser || marked(r.stdout, "ghexit") != "0" || ghAuth != "GET token true" {
				t.Errorf("gh api /user printed %q (exit %s), want the server's %s; the server got %q, want one GET with token and the secret", got, marked(r.stdout, "ghexit"), credGhUser, ghAuth)
			}
			seen := map[string]string{"stdout": r.stdout, "stderr": r.stderr}
			for _, f := range []string{"dump-env.txt", "dump-proc.txt"} {
				seen[f] = readFile(t, filepath.Join(e.ws, f))
			}
			if !strings.Contains(seen["dump-env.txt"], "GH_ENTERPRISE_TOKEN="+ph) || !strings.Contains(seen["dump-proc.txt"], "GH_HOST="+host) {
				t.Errorf("the dumps are not what the sandbox holds: env %q", seen["dump-env.txt"])
			}
			for where, s := range seen {
				if strings.Contains(s, credSecret) {
					t.Errorf("the secret shows in %s", where)
				}
			}
		})
	}
}

// TestCredentialWorkspaceConfigRefused: a .cordon.yaml naming a
// credential is refused with one line, and nothing runs.
func TestCredentialWorkspaceConfigRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.ws, ".cordon.yaml"), "sandbox:\n  credentials:\n    - {name: github, hosts: [evil.example]}\n")
	r := e.run("run", "--", "sh", "-c", "echo RAN")
	want := filepath.Join(e.ws, ".cordon.yaml") + ":2: sandbox.credentials cannot be set by a file inside the workspace: it could send a secret to a host of its choosing"
	if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("got %s, want exit 125 and the one line %q", r, want)
	}
}

// readAudit reads every record of an audit log.
func readAudit(t *testing.T, path string) []map[string]any {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the audit log: %v", err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, path)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestCredentialNoSecret: a credential whose secret is nowhere on the
// host stops the run before it starts, with one line saying where cordon
// looked.
func TestCredentialNoSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run("run", "--credential", "github", "--", "sh", "-c", "echo RAN")
	want := "cordon: credential github: no secret: $GH_TOKEN is not set, $GITHUB_TOKEN is not set, `gh auth token`"
	if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.HasPrefix(userStderr(r.stderr), want) || strings.Count(strings.TrimSpace(userStderr(r.stderr)), "\n") != 0 {
		t.Errorf("got %s, want exit 125 and one line starting %q", r, want)
	}
}

// TestCredentialPipIndex: pip inside installs from an index that needs a
// password, given the placeholder as the index URL's password.
func TestCredentialPipIndex(t *testing.T) {
	t.Parallel()
	for _, be := range []string{"bwrap", "landlock"} {
		t.Run(be, func(t *testing.T) {
			e := newEnv(t)
			if be == "landlock" {
				requireLandlock(t)
			}
			requireTool(t, "python3")
			ca, err := credential.NewCA([]string{"localhost"})
			if err != nil {
				t.Fatal(err)
			}
			wheel := testWheel(t)
			var mu sync.Mutex
			var got []string
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, pass, _ := r.BasicAuth()
				mu.Lock()
				got = append(got, r.URL.Path+" "+fmt.Sprint(pass == credSecret))
				mu.Unlock()
				if pass != credSecret {
					w.Header().Set("WWW-Authenticate", `Basic realm="index"`)
					http.Error(w, "authentication needed", http.StatusUnauthorized)
					return
				}
				switch r.URL.Path {
				case "/simple/credpkg/":
					io.WriteString(w, `<html><body><a href="/files/credpkg-1.0-py3-none-any.whl">credpkg-1.0-py3-none-any.whl</a></body></html>`)
				case "/files/credpkg-1.0-py3-none-any.whl":
					w.Write(wheel)
				default:
					http.NotFound(w, r)
				}
			}))
			srv.TLS = &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return ca.Leaf("localhost") }}
			srv.StartTLS()
			t.Cleanup(srv.Close)
			port := portOf(t, srv.URL)
			roots := filepath.Join(e.root, "roots.pem")
			writeFile(t, roots, string(ca.CertPEM()))
			e.extra = append(e.extra, "SSL_CERT_FILE="+roots, "API_TOKEN="+credSecret)
			writeFile(t, filepath.Join(e.home, ".config", "cordon", "config.yaml"), fmt.Sprintf("sandbox:\n  credentials:\n    - {name: api, hosts: [\"localhost:%d\"], env: API_TOKEN, paths: [/simple/, /files/]}\n", port))
			script := fmt.Sprintf(`python3 -m venv --without-pip --system-site-packages "$TMPDIR/v" && "$TMPDIR/v/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir --index-url "https://u:$API_TOKEN@localhost:%d/simple/" credpkg 2>&1 && "$TMPDIR/v/bin/python" -c 'import credpkg; print("@@pip:" + credpkg.VALUE)'`, port)
			r := e.runTimeout(90*time.Second, nil, "run", "--backend", be, "--allow-net", fmt.Sprintf("127.0.0.1:%d", port), "--env", "NO_PROXY=", "--env", "no_proxy=", "--", "sh", "-c", script)
			t.Logf("%s", r)
			mu.Lock()
			defer mu.Unlock()
			if got := marked(r.stdout, "pip"); got != "PIP-OK" {
				t.Errorf("pip install from the index: %q, want PIP-OK", got)
			}
			if !slices.Contains(got, "/files/credpkg-1.0-py3-none-any.whl true") {
				t.Errorf("the index did not serve the wheel with the secret: %q", got)
			}
			if strings.Contains(r.stdout+r.stderr, credSecret) {
				t.Errorf("the secret shows in cordon's output")
			}
		})
	}
}

// testWheel is a pure-Python wheel of the package credpkg 1.0, whose
// VALUE is "PIP-OK".
func testWheel(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, f := range [][2]string{
		{"credpkg/__init__.py", "VALUE = 'PIP-OK'\n"},
		{"credpkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: credpkg\nVersion: 1.0\n"},
		{"credpkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: cordon-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
		{"credpkg-1.0.dist-info/RECORD", "credpkg/__init__.py,,\ncredpkg-1.0.dist-info/METADATA,,\ncredpkg-1.0.dist-info/WHEEL,,\ncredpkg-1.0.dist-info/RECORD,,\n"},
	} {
		w, err := z.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, f[1])
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCredentialExplain: cordon policy --explain lists each credential
// with its hosts and where its secret comes from, never its value.
func TestCredentialExplain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.extra = append(e.extra, "GH_TOKEN="+credSecret)
	r := e.run("policy", "--credential", "github", "--explain")
	for _, want := range []string{
		"credential: github for api.github.com, github.com, uploads.github.com (TLS ends at cordon's proxy there); the secret from the first of $GH_TOKEN, $GITHUB_TOKEN, the output of `gh auth token`",
		"network: credential github: TLS to api.github.com, github.com, uploads.github.com ends at the proxy",
		"    - api.github.com # credential github (preset github, --credential)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("cordon policy --explain lacks %q:\n%s", want, r)
		}
	}
	if r.code != 0 || strings.Contains(r.stdout+r.stderr, credSecret) {
		t.Errorf("exit %d; the secret shows: %v", r.code, strings.Contains(r.stdout+r.stderr, credSecret))
	}
}
