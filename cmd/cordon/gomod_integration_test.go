//go:build linux

package main

// A Go module proxy and checksum database that the tests serve themselves
// (on 127.0.0.1, and as a file:// tree), so that go get and go mod tidy
// run for real inside the sandbox without the network.

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/sumdb/note"
	modzip "golang.org/x/mod/zip"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// sumdbName is the test checksum database's name.
const sumdbName = "sum.cordon.test"

// goModule is one module version the proxy serves: its files, go.mod
// included.
type goModule struct {
	path, version string
	files         map[string]string
}

// modProxy serves modules by the module proxy protocol from dir, and a
// checksum database of them under /sumdb/NAME/ (the protocol's "proxying
// a checksum database"), over HTTP on 127.0.0.1.
type modProxy struct {
	dir  string // the proxy tree: PATH/@v/{list,V.info,V.mod,V.zip}
	url  string // http://127.0.0.1:PORT
	vkey string // the checksum database's verifier key
}

// gosumdb is GOSUMDB for the test database: its key and, with direct, its
// URL (bypassing any proxy).
func (m *modProxy) gosumdb(direct bool) string {
	if direct {
		return m.vkey + " " + m.url + "/sumdb/" + sumdbName
	}
	return m.vkey
}

// newModProxy writes the modules into a proxy tree under root and serves
// it until the test ends.
func newModProxy(t *testing.T, root string, mods []goModule) *modProxy {
	t.Helper()
	m := &modProxy{dir: filepath.Join(root, "proxy")}
	versions := map[string][]string{}
	for _, mod := range mods {
		src := filepath.Join(root, "modsrc", mod.path+"@"+mod.version)
		for name, content := range mod.files {
			writeFile(t, filepath.Join(src, name), content)
		}
		esc, err := module.EscapePath(mod.path)
		if err != nil {
			t.Fatal(err)
		}
		at := filepath.Join(m.dir, esc, "@v")
		mkdir(t, at)
		var zbuf bytes.Buffer
		if err := modzip.CreateFromDir(&zbuf, module.Version{Path: mod.path, Version: mod.version}, src); err != nil {
			t.Fatalf("zipping %s@%s: %v", mod.path, mod.version, err)
		}
		writeFile(t, filepath.Join(at, mod.version+".zip"), zbuf.String())
		writeFile(t, filepath.Join(at, mod.version+".mod"), mod.files["go.mod"])
		writeFile(t, filepath.Join(at, mod.version+".info"), fmt.Sprintf(`{"Version":%q,"Time":"2024-01-02T03:04:05Z"}`, mod.version))
		versions[esc] = append(versions[esc], mod.version)
	}
	for esc, vs := range versions {
		sort.Strings(vs)
		writeFile(t, filepath.Join(m.dir, esc, "@v", "list"), strings.Join(vs, "\n")+"\n")
	}

	skey, vkey, err := note.GenerateKey(rand.Reader, sumdbName)
	if err != nil {
		t.Fatal(err)
	}
	m.vkey = vkey
	gosum := func(path, vers string) ([]byte, error) {
		esc, err := module.EscapePath(path)
		if err != nil {
			return nil, err
		}
		at := filepath.Join(m.dir, esc, "@v")
		zh, err := dirhash.HashZip(filepath.Join(at, vers+".zip"), dirhash.Hash1)
		if err != nil {
			return nil, err
		}
		gomod, err := os.ReadFile(filepath.Join(at, vers+".mod"))
		if err != nil {
			return nil, err
		}
		mh, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(gomod)), nil
		})
		if err != nil {
			return nil, err
		}
		return fmt.Appendf(nil, "%s %s %s\n%s %s/go.mod %s\n", path, vers, zh, path, vers, mh), nil
	}
	db := sumdb.NewServer(sumdb.NewTestServer(skey, gosum))
	prefix := "/sumdb/" + sumdbName
	mux := http.NewServeMux()
	mux.HandleFunc(prefix+"/supported", func(w http.ResponseWriter, _ *http.Request) {})
	mux.Handle(prefix+"/", http.StripPrefix(prefix, db))
	mux.Handle("/", http.FileServer(http.Dir(m.dir)))
	ln := testenv.Listen(t)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	m.url = "http://" + ln.Addr().String()
	return m
}

// fileMirror makes a file:// proxy tree of m, with its checksum database
// inside (sumdb/NAME/supported, lookup/..., tile/...), for a sandbox
// without network: the go command, run outside with a scratch module
// cache, fetches what args need through m, and the database's part of
// that cache joins a copy of m's tree.
func (m *modProxy) fileMirror(t *testing.T, root string, args ...string) string {
	t.Helper()
	scratch := filepath.Join(root, "mirror-scratch")
	mkdir(t, scratch)
	goOutside(t, scratch, []string{"HOME=" + scratch, "GOPROXY=" + m.url, "GOSUMDB=" + m.gosumdb(false)}, append([]string{"mod", "download"}, args...)...)
	mirror := filepath.Join(root, "mirror")
	copyTree(t, m.dir, mirror)
	copyTree(t, filepath.Join(scratch, "go", "pkg", "mod", "cache", "download", "sumdb", sumdbName), filepath.Join(mirror, "sumdb", sumdbName))
	writeFile(t, filepath.Join(mirror, "sumdb", sumdbName, "supported"), "")
	return mirror
}

// goOutside runs the go command on the host in dir, with only the
// environment given (and PATH): never the real home, caches or network.
func goOutside(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	goBin := requireGo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(goOutsideEnv(goBin), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s outside (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// goOutsideEnv is the environment of the go command run on the host,
// before the caller's HOME and the rest: nothing of the test's own.
func goOutsideEnv(goBin string) []string {
	return []string{
		"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod -buildvcs=false",
		"GONOSUMDB=", "GONOSUMCHECK=", "GOPRIVATE=", "GONOPROXY=", "GOINSECURE=", "GOWORK=off", "CGO_ENABLED=0",
	}
}

// requireGo returns the go command; it is required under CI=true.
func requireGo(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.SkipOrFail(t, "go not on PATH")
	}
	return goBin
}

// copyTree copies the regular files and directories of src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copying %s to %s: %v", src, dst, err)
	}
}

// treeState describes a tree for "unchanged" checks: every entry's path,
// type, size and mtime (content too, for small files).
func treeState(t *testing.T, dir string) []string {
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
		line := fmt.Sprintf("%s %v %d %d", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() && fi.Size() < 4096 {
			b, _ := os.ReadFile(p)
			line += fmt.Sprintf(" %q", b)
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
