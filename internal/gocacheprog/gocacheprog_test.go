package gocacheprog

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// TestMain lets the go command start this test binary as its GOCACHEPROG
// (TestRealGoCommand), as it starts cordon's.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Command {
		os.Exit(Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// wire writes requests as the go command does (cmd/go/internal/cache/prog.go):
// each JSON object, a blank line, and a put's body as a base64 JSON string.
type wire struct {
	buf bytes.Buffer
	id  int64
}

func (w *wire) send(cmd string, action, output, body []byte) int64 {
	w.id++
	req := map[string]any{"ID": w.id, "Command": cmd}
	if action != nil {
		req["ActionID"] = action
	}
	if output != nil {
		req["OutputID"] = output
	}
	if len(body) > 0 {
		req["BodySize"] = len(body)
	}
	b, _ := json.Marshal(req)
	w.buf.Write(b)
	w.buf.WriteString("\n\n")
	if len(body) > 0 {
		w.buf.WriteString(`"` + base64.StdEncoding.EncodeToString(body) + "\"\n")
	}
	return w.id
}

func (w *wire) put(action []byte, body []byte) int64 {
	sum := sha256.Sum256(body)
	return w.send(cmdPut, action, sum[:], body)
}

// serve runs Serve on the requests and returns the responses by ID (the
// capabilities message is ID 0).
func serve(t *testing.T, c *Cache, w *wire) map[int64]response {
	t.Helper()
	var out bytes.Buffer
	if err := Serve(&w.buf, &out, c); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	res := map[int64]response{}
	dec := json.NewDecoder(&out)
	for {
		var r response
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding a response: %v\n%s", err, out.String())
		}
		res[r.ID] = r
	}
	return res
}

func id(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// writeEntry puts an entry in dir as the go command's own cache does.
func writeEntry(t *testing.T, dir string, action []byte, body []byte, when time.Time) {
	t.Helper()
	out := sha256.Sum256(body)
	if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("%02x", action[0])), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("%02x", out[0])), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fileName(out[:], "d")), body, 0o644); err != nil {
		t.Fatal(err)
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", action, out, len(body), when.UnixNano())
	if err := os.WriteFile(filepath.Join(dir, fileName(action, "a")), []byte(entry), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fileName(out[:], "d"), fileName(action, "a")} {
		if err := os.Chtimes(filepath.Join(dir, p), when, when); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot describes a tree: every path with its size, mode and mtime.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %d %v %d", p, fi.Size(), fi.Mode(), fi.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestServe: the capabilities message, then get (miss, hit in the own
// cache, hit in the host's), put (stored in the own cache only, and
// checked against its output ID) and close, as the go command sends them.
func TestServe(t *testing.T) {
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	hostBody := []byte("compiled by the host")
	tests := []struct {
		name  string
		reqs  func(w *wire) int64 // returns the ID to check
		check func(t *testing.T, r response, own, host string)
	}{
		{"get miss", func(w *wire) int64 { return w.send(cmdGet, id("nothing"), nil, nil) },
			func(t *testing.T, r response, _, _ string) {
				if !r.Miss || r.Err != "" || r.DiskPath != "" {
					t.Errorf("response %+v, want a miss", r)
				}
			}},
		{"get from the host", func(w *wire) int64 { return w.send(cmdGet, id("host action"), nil, nil) },
			func(t *testing.T, r response, _, host string) {
				sum := sha256.Sum256(hostBody)
				if r.Miss || r.Size != int64(len(hostBody)) || !bytes.Equal(r.OutputID, sum[:]) || r.Time == nil || !r.Time.Equal(old) {
					t.Errorf("response %+v, want the host's entry", r)
				}
				if want := filepath.Join(host, fileName(sum[:], "d")); r.DiskPath != want {
					t.Errorf("DiskPath %q, want the host's file %q (no copy)", r.DiskPath, want)
				}
			}},
		{"put then get", func(w *wire) int64 {
			w.put(id("built inside"), []byte("compiled inside"))
			return w.send(cmdGet, id("built inside"), nil, nil)
		}, func(t *testing.T, r response, own, _ string) {
			if r.Miss || !strings.HasPrefix(r.DiskPath, own+"/") {
				t.Fatalf("response %+v, want a hit in %s", r, own)
			}
			if b, err := os.ReadFile(r.DiskPath); err != nil || string(b) != "compiled inside" {
				t.Errorf("output file holds %q, %v", b, err)
			}
		}},
		{"put answers with the file", func(w *wire) int64 { return w.put(id("p"), []byte("output")) },
			func(t *testing.T, r response, own, _ string) {
				sum := sha256.Sum256([]byte("output"))
				if r.Err != "" || r.DiskPath != filepath.Join(own, fileName(sum[:], "d")) {
					t.Errorf("response %+v", r)
				}
			}},
		{"put of an empty output", func(w *wire) int64 {
			w.put(id("empty"), nil)
			return w.send(cmdGet, id("empty"), nil, nil)
		}, func(t *testing.T, r response, own, _ string) {
			if r.Miss || r.Size != 0 || !strings.HasPrefix(r.DiskPath, own+"/") {
				t.Errorf("response %+v, want an empty hit", r)
			}
		}},
		{"own cache before the host's", func(w *wire) int64 {
			w.put(id("host action"), []byte("rebuilt inside"))
			return w.send(cmdGet, id("host action"), nil, nil)
		}, func(t *testing.T, r response, own, _ string) {
			if !strings.HasPrefix(r.DiskPath, own+"/") {
				t.Errorf("response %+v, want the sandbox's entry", r)
			}
		}},
		{"put with a wrong output ID", func(w *wire) int64 {
			return w.send(cmdPut, id("bad"), id("not the body's hash"), []byte("body"))
		}, func(t *testing.T, r response, own, _ string) {
			if !strings.Contains(r.Err, "does not match its output ID") {
				t.Errorf("response %+v, want an error", r)
			}
			if names, _ := filepath.Glob(filepath.Join(own, "*", tmpPrefix+"*")); len(names) > 0 {
				t.Errorf("temporary files left: %q", names)
			}
		}},
		{"a request after a refused put", func(w *wire) int64 {
			w.send(cmdPut, id("bad"), id("x"), []byte("body"))
			return w.send(cmdGet, id("host action"), nil, nil)
		}, func(t *testing.T, r response, _, _ string) {
			if r.Miss {
				t.Errorf("response %+v: the stream lost its place after a refused put", r)
			}
		}},
		{"unknown command", func(w *wire) int64 { return w.send("get2", id("x"), nil, nil) },
			func(t *testing.T, r response, _, _ string) {
				if !strings.Contains(r.Err, "unknown command") {
					t.Errorf("response %+v", r)
				}
			}},
		{"close", func(w *wire) int64 { return w.send(cmdClose, nil, nil, nil) },
			func(t *testing.T, r response, _, _ string) {
				if r.Err != "" || r.Miss {
					t.Errorf("response %+v", r)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			own, host := filepath.Join(dir, "own"), filepath.Join(dir, "host")
			for _, d := range []string{own, host} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeEntry(t, host, id("host action"), hostBody, old)
			before := snapshot(t, host)
			w := &wire{}
			want := tc.reqs(w)
			res := serve(t, &Cache{Own: own, Host: host}, w)
			if caps := res[0].KnownCommands; strings.Join(caps, ",") != "get,put,close" {
				t.Errorf("capabilities %q", caps)
			}
			r, ok := res[want]
			if !ok {
				t.Fatalf("no response to request %d: %v", want, res)
			}
			tc.check(t, r, own, host)
			if after := snapshot(t, host); strings.Join(before, "\n") != strings.Join(after, "\n") {
				t.Errorf("the host's cache changed:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// TestGetRejects: entries that do not hold are misses, whichever cache
// they are in.
func TestGetRejects(t *testing.T) {
	body := []byte("output")
	out := sha256.Sum256(body)
	a := id("action")
	tests := []struct {
		name  string
		spoil func(dir string) error
	}{
		{"output missing", func(dir string) error { return os.Remove(filepath.Join(dir, fileName(out[:], "d"))) }},
		{"output of another size", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, fileName(out[:], "d")), []byte("short"), 0o644)
		}},
		{"entry for another action", func(dir string) error {
			e := fmt.Sprintf("v1 %x %x %20d %20d\n", id("other"), out, len(body), 1)
			return os.WriteFile(filepath.Join(dir, fileName(a, "a")), []byte(e), 0o644)
		}},
		{"entry too long", func(dir string) error {
			e := fmt.Sprintf("v1 %x %x %20d %20d\nX", a, out, len(body), 1)
			return os.WriteFile(filepath.Join(dir, fileName(a, "a")), []byte(e), 0o644)
		}},
		{"entry truncated", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, fileName(a, "a")), []byte("v1 "), 0o644)
		}},
		{"negative size", func(dir string) error {
			e := fmt.Sprintf("v1 %x %x %20d %20d\n", a, out, -1, 1)
			return os.WriteFile(filepath.Join(dir, fileName(a, "a")), []byte(e), 0o644)
		}},
		{"output is a link", func(dir string) error {
			p := filepath.Join(dir, fileName(out[:], "d"))
			if err := os.Rename(p, p+".real"); err != nil {
				return err
			}
			return os.Symlink(p+".real", p)
		}},
	}
	for _, tc := range tests {
		for _, where := range []string{"own", "host"} {
			t.Run(tc.name+" in "+where, func(t *testing.T) {
				dir := t.TempDir()
				c := &Cache{Own: filepath.Join(dir, "own"), Host: filepath.Join(dir, "host")}
				target := c.Own
				if where == "host" {
					target = c.Host
				}
				writeEntry(t, target, a, body, time.Now())
				if _, ok := c.Get(a); !ok {
					t.Fatal("the unspoilt entry is a miss")
				}
				if err := tc.spoil(target); err != nil {
					t.Fatal(err)
				}
				if e, ok := c.Get(a); ok {
					t.Errorf("hit %+v on a spoilt entry", e)
				}
			})
		}
	}
}

// TestGetExecutable: an executable the go command cached for go run (a
// directory holding one file) is returned as that file.
func TestGetExecutable(t *testing.T) {
	dir := t.TempDir()
	body := []byte("#!binary")
	out := sha256.Sum256(body)
	a := id("link")
	writeEntry(t, dir, a, body, time.Now())
	d := filepath.Join(dir, fileName(out[:], "d"))
	if err := os.Remove(d); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "prog"), body, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Cache{Own: filepath.Join(t.TempDir(), "own"), Host: dir}
	e, ok := c.Get(a)
	if !ok || e.DiskPath != filepath.Join(d, "prog") {
		t.Errorf("Get = %+v, %v; want the file in %s", e, ok, d)
	}
}

// TestTrim: entries of the own cache unused for five days and stale
// temporary files go, at most once a day; used ones stay, and the host's
// cache is never touched.
func TestTrim(t *testing.T) {
	dir := t.TempDir()
	own, host := filepath.Join(dir, "own"), filepath.Join(dir, "host")
	now := time.Now()
	c := &Cache{Own: own, Host: host, now: func() time.Time { return now }}
	old := now.Add(-7 * 24 * time.Hour)
	writeEntry(t, own, id("old"), []byte("old output"), old)
	writeEntry(t, own, id("used"), []byte("used output"), old)
	writeEntry(t, own, id("fresh"), []byte("fresh output"), now)
	writeEntry(t, host, id("host old"), []byte("host output"), old)
	tmp := filepath.Join(own, "00", tmpPrefix+"left")
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(id("used")); !ok { // marks it used
		t.Fatal("miss on the used entry")
	}
	hostBefore := snapshot(t, host)
	c.Trim()
	for name, want := range map[string]bool{"old": false, "used": true, "fresh": true} {
		if _, ok := c.Get(id(name)); ok != want {
			t.Errorf("after the trim, entry %q present = %v, want %v", name, ok, want)
		}
	}
	if _, err := os.Lstat(tmp); err == nil {
		t.Error("a stale temporary file was not trimmed")
	}
	if after := snapshot(t, host); strings.Join(hostBefore, "\n") != strings.Join(after, "\n") {
		t.Errorf("Trim changed the host's cache:\nbefore %q\nafter  %q", hostBefore, after)
	}
	// Not again within a day.
	writeEntry(t, own, id("old2"), []byte("old2 output"), old)
	now = now.Add(time.Hour)
	c.Trim()
	if _, ok := lookup(own, id("old2")); !ok {
		t.Error("Trim ran twice within a day")
	}
}

// TestRealGoCommand: the go command itself, with this test binary as its
// GOCACHEPROG, takes what a build with the host's cache compiled from the
// host's cache (it compiles nothing), puts what it compiles anew in the
// own cache only, finds that there next time, and never changes the
// host's cache.
func TestRealGoCommand(t *testing.T) {
	goBin := lookGo(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	own, host, mod := filepath.Join(dir, "own"), filepath.Join(dir, "host"), filepath.Join(dir, "mod")
	src := filepath.Join(mod, "lib", "lib.go")
	for p, content := range map[string]string{
		filepath.Join(mod, "go.mod"): "module example.com/m\n\ngo 1.22\n",
		src:                          "package lib\n\nfunc F() int { return 1 }\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A package without imports compiles in well under a second: no
	// standard library to build into an empty cache.
	goBuild := func(cache, prog string) string {
		t.Helper()
		cmd := exec.Command(goBin, "build", "-x", "./lib")
		cmd.Dir = mod
		cmd.Env = []string{
			"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GOENV=off", "GOTOOLCHAIN=local", "GOPROXY=off",
			"GOFLAGS=-mod=mod", "GOWORK=off", "GOPATH=" + filepath.Join(dir, "gopath"),
			"GOCACHE=" + cache, "GOCACHEPROG=" + prog, "CGO_ENABLED=0",
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go build with GOCACHE=%s GOCACHEPROG=%q: %v\n%s", cache, prog, err, out)
		}
		return string(out)
	}
	compiled := func(out string) bool { return strings.Contains(out, "/compile ") }
	if out := goBuild(host, ""); !compiled(out) {
		t.Fatalf("the first build compiled nothing:\n%s", out)
	}
	before := snapshot(t, host)
	prog := exe + " " + Command + " " + own + " " + host
	if out := goBuild(own, prog); compiled(out) {
		t.Errorf("with the host's cache warm, the build compiled again:\n%s", out)
	}
	if err := os.WriteFile(src, []byte("package lib\n\nfunc F() int { return 2 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := goBuild(own, prog); !compiled(out) {
		t.Fatalf("a changed package was not compiled:\n%s", out)
	}
	entries, _ := filepath.Glob(filepath.Join(own, "*", "*-a"))
	if len(entries) == 0 {
		t.Error("nothing was put in the own cache")
	}
	if out := goBuild(own, prog); compiled(out) {
		t.Errorf("what the own cache holds was compiled again:\n%s", out)
	}
	if after := snapshot(t, host); strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Errorf("the host's cache changed:\n%s", diff(before, after))
	}
}

func lookGo(t *testing.T) string {
	t.Helper()
	g, err := exec.LookPath("go")
	if err != nil {
		testenv.SkipOrFail(t, "go not on PATH")
	}
	return g
}

func diff(before, after []string) string {
	var b strings.Builder
	for _, x := range before {
		if !slices.Contains(after, x) {
			b.WriteString("  - " + x + "\n")
		}
	}
	for _, x := range after {
		if !slices.Contains(before, x) {
			b.WriteString("  + " + x + "\n")
		}
	}
	return b.String()
}
