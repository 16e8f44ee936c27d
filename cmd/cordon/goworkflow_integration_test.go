//go:build linux

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/policy"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// testModules are what the test proxy serves: example.com/m in two v1
// versions (go get example.com/m@v1 takes the newer) and example.com/dep.
var testModules = []goModule{
	{"example.com/m", "v1.0.0", map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"m.go":   "package m\n\nfunc Version() string { return \"m v1.0.0\" }\n",
	}},
	{"example.com/m", "v1.1.0", map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"m.go":   "package m\n\nfunc Version() string { return \"m v1.1.0\" }\n",
	}},
	{"example.com/dep", "v1.0.0", map[string]string{
		"go.mod": "module example.com/dep\n\ngo 1.22\n",
		"dep.go": "package dep\n\nfunc Name() string { return \"dep v1.0.0\" }\n",
	}},
}

// goEnv points e's sandbox at the go command, and returns the environment
// the go command run outside as e's user (HOME=e.home) needs with the
// test proxy p.
func goSandboxEnv(t *testing.T, e *sandboxEnv, p *modProxy) []string {
	t.Helper()
	goBin := requireGo(t)
	e.extra = append(e.extra, "PATH="+filepath.Dir(goBin)+":/usr/local/bin:/usr/bin:/bin")
	// The go command makes module caches read-only, which a user who is
	// not root cannot remove: make them writable before t.TempDir's
	// clean-up (clean-ups run last first).
	t.Cleanup(func() {
		filepath.WalkDir(e.root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	return []string{"HOME=" + e.home, "GOPROXY=" + p.url, "GOSUMDB=" + p.gosumdb(false)}
}

// warmHost fills the host's Go caches of e (as its user would have, by
// working outside): the modules in the module cache, the checksum
// database's tree head in GOPATH/pkg/sumdb, and, built from a module that
// uses them, the build cache.
func warmHost(t *testing.T, e *sandboxEnv, hostEnv []string) {
	t.Helper()
	warm := filepath.Join(e.root, "warm")
	writeFile(t, filepath.Join(warm, "go.mod"), "module example.com/warm\n\ngo 1.22\n")
	writeFile(t, filepath.Join(warm, "main.go"), appMain)
	goOutside(t, warm, hostEnv, "get", "example.com/m@v1.1.0", "example.com/dep@v1.0.0")
	goOutside(t, warm, hostEnv, "build", "-o", filepath.Join(warm, "app"), ".")
}

const appMain = `package main

import (
	"fmt"

	"example.com/dep"
	"example.com/m"
)

func main() { fmt.Println("app uses", m.Version(), "and", dep.Name()) }
`

// TestGoModulesInside: go get and go mod tidy work inside, in the
// development profile (the test's proxy and checksum database over
// 127.0.0.1) and in ci (no network: the same served as a file:// tree),
// with the host's module cache and GOPATH unchanged; the checksum
// database's tree head goes to the sandbox's own GOPATH, starting from the
// host's.
func TestGoModulesInside(t *testing.T) {
	t.Parallel()
	for _, profile := range []string{"development", "ci"} {
		t.Run(profile, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			p := newModProxy(t, e.root, testModules)
			hostEnv := goSandboxEnv(t, e, p)
			seedGoCache(t, e)
			warmHost(t, e, hostEnv)
			hostGo := filepath.Join(e.home, "go")
			hostHead := filepath.Join(hostGo, "pkg", "sumdb", sumdbName, "latest")
			if !exists(hostHead) {
				t.Fatalf("the host has no tree head at %s after working outside", hostHead)
			}
			before := treeState(t, hostGo)

			flags := []string{"run", "--profile", profile, "--env", "GOSUMDB=" + p.gosumdb(true), "--env", "GOPROXY=" + p.url}
			if profile == "ci" {
				mirror := p.fileMirror(t, e.root, "example.com/m@v1.1.0", "example.com/dep@v1.0.0", "example.com/m@v1.0.0")
				flags = []string{"run", "--profile", "ci", "--allow-read", mirror,
					"--env", "GOSUMDB=" + p.gosumdb(false), "--env", "GOPROXY=file://" + mirror}
			}
			writeFile(t, filepath.Join(e.ws, "go.mod"), "module example.com/app\n\ngo 1.22\n")
			writeFile(t, filepath.Join(e.ws, "main.go"), appMain)
			r := e.runTimeout(3*time.Minute, nil, append(flags, "--", "sh", "-c",
				`go get example.com/m@v1 && go mod tidy && go build -o app . && ./app && go env GOPATH`)...)
			if r.code != 0 {
				t.Fatalf("go get / go mod tidy inside (%s): %s", profile, r)
			}
			if !strings.Contains(r.stdout, "app uses m v1.1.0 and dep v1.0.0") {
				t.Errorf("the program built inside did not run: %s", r)
			}
			sum := readFile(t, filepath.Join(e.ws, "go.sum"))
			for _, want := range []string{"example.com/m v1.1.0 h1:", "example.com/dep v1.0.0 h1:"} {
				if !strings.Contains(sum, want) {
					t.Errorf("go.sum lacks %q:\n%s", want, sum)
				}
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			gopath := lines[len(lines)-1]
			sandboxBase := filepath.Join(e.home, ".cache", "cordon", "sandbox")
			if !strings.HasPrefix(gopath, sandboxBase+"/") {
				t.Errorf("GOPATH inside = %q, want it in the sandbox cache", gopath)
			}
			if b, err := os.ReadFile(filepath.Join(gopath, "pkg", "sumdb", sumdbName, "latest")); err != nil || !strings.Contains(string(b), sumdbName) {
				t.Errorf("the sandbox's tree head: %q, %v", b, err)
			}
			if d := diffListing(before, treeState(t, hostGo)); d != "" {
				t.Errorf("the host's GOPATH and module cache changed:\n%s", d)
			}
		})
	}
}

// compiledPackages are the packages a go build -x output compiled.
func compiledPackages(out string) []string {
	var pkgs []string
	for _, m := range regexp.MustCompile(`/compile .*? -p (\S+)`).FindAllStringSubmatch(out, -1) {
		pkgs = append(pkgs, m[1])
	}
	slices.Sort(pkgs)
	return slices.Compact(pkgs)
}

// TestGoFirstBuildWarmHost: with the host's caches warm, the first go
// build and go test in a new workspace compile only the workspace's own
// package: the standard library and the dependencies come from the host's
// build cache (on bwrap, the sandbox's module cache sits at the host's
// path, so their keys match), which stays as it was; what is compiled
// goes to the sandbox's cache. On the Landlock-only backend the standard
// library still comes from the host.
func TestGoFirstBuildWarmHost(t *testing.T) {
	testenv.Heavy(t)
	t.Parallel()
	e := newEnv(t)
	p := newModProxy(t, e.root, testModules)
	hostEnv := goSandboxEnv(t, e, p)
	warmHost(t, e, hostEnv)
	writeFile(t, filepath.Join(e.root, "warm", "main_test.go"), "package main\n\nimport \"testing\"\n\nfunc TestMain_(t *testing.T) {}\n")
	goOutside(t, filepath.Join(e.root, "warm"), hostEnv, "test", ".")
	hostBuild := filepath.Join(e.home, ".cache", "go-build")
	before := treeState(t, hostBuild)

	for _, backend := range []string{"bwrap", "landlock"} {
		ws := filepath.Join(e.home, "src", "first-"+backend)
		for _, f := range []string{"go.mod", "go.sum", "main.go", "main_test.go"} {
			writeFile(t, filepath.Join(ws, f), readFile(t, filepath.Join(e.root, "warm", f)))
		}
		if backend == "landlock" {
			requireLandlock(t)
		}
		r := e.runTimeout(3*time.Minute, nil, "run", "--backend", backend, "--workspace", ws, "--", "sh", "-c",
			"cd "+ws+" && go build -x -o app . && go test -x -count=1 .")
		if r.code != 0 {
			t.Fatalf("first build in a new workspace (%s): %s", backend, r)
		}
		// The workspace's package is new (its directory is in the key):
		// compiled as main for go build and as example.com/warm for go
		// test.
		got := compiledPackages(r.stderr)
		want := []string{"example.com/warm", "main"}
		if backend == "landlock" {
			// The dependencies' keys hold the module cache's path.
			want = []string{"example.com/dep", "example.com/m", "example.com/warm", "main"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: the first build in a new workspace compiled %q, want only %q", backend, got, want)
		}
		if !strings.Contains(r.stdout, "ok  \texample.com/warm") {
			t.Errorf("%s: go test did not pass: %s", backend, r)
		}
		// On bwrap the modules were not unpacked again: the sandbox's
		// module cache links to the host's.
		// (bwrap's module cache is kept beside the sandbox caches, out of
		// the sandboxes' reach; the Landlock-only backend's is in the
		// sandbox cache.)
		mod := filepath.Join(e.home, ".cache", "cordon", "sandbox", policy.SandboxCacheName(ws), "go-mod", "example.com", "m@v1.1.0")
		if backend == "bwrap" {
			mod = filepath.Join(e.home, ".cache", "cordon", "gomod", policy.SandboxCacheName(ws), "example.com", "m@v1.1.0")
		}
		fi, err := os.Lstat(mod)
		if err != nil {
			t.Errorf("%s: %v", backend, err)
		} else if isLink := fi.Mode()&fs.ModeSymlink != 0; isLink != (backend == "bwrap") {
			t.Errorf("%s: %s is a link: %v", backend, mod, isLink)
		}
	}
	if d := diffListing(before, treeState(t, hostBuild)); d != "" {
		t.Errorf("the host's build cache changed:\n%s", d)
	}
}

// TestCacheCommandInside: cordon cache lists the sandbox cache a run
// created, with its workspace and size; once the workspace is gone,
// --clean removes it (a read-only Go module cache in it included) and
// leaves the others.
func TestCacheCommandInside(t *testing.T) {
	testenv.Heavy(t)
	t.Parallel()
	e := newEnv(t)
	p := newModProxy(t, e.root, testModules)
	hostEnv := goSandboxEnv(t, e, p)
	warmHost(t, e, hostEnv)
	other := filepath.Join(e.home, "src", "doomed")
	for _, f := range []string{"go.mod", "go.sum", "main.go"} {
		writeFile(t, filepath.Join(other, f), readFile(t, filepath.Join(e.root, "warm", f)))
	}
	// Both workspaces get a cache; the doomed one's holds modules.
	if r := e.runTimeout(2*time.Minute, nil, "run", "--workspace", other, "--", "sh", "-c", "cd "+other+" && go build -o app ."); r.code != 0 {
		t.Fatalf("build in %s: %s", other, r)
	}
	if r := e.run("run", "--", "true"); r.code != 0 {
		t.Fatalf("run in %s: %s", e.ws, r)
	}
	r := e.run("cache")
	if r.code != 0 {
		t.Fatalf("cordon cache: %s", r)
	}
	for _, want := range []string{"present  " + e.ws + "\n", "present  " + other + "\n", "2 caches"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("cordon cache output lacks %q: %s", want, r)
		}
	}
	if err := os.RemoveAll(other); err != nil {
		t.Fatal(err)
	}
	if r = e.run("cache", "--clean"); r.code != 0 {
		t.Fatalf("cordon cache --clean: %s", r)
	}
	if !strings.Contains(r.stdout, "removed") || !strings.Contains(r.stdout, "gone     "+other) {
		t.Errorf("cordon cache --clean output: %s", r)
	}
	caches, _ := filepath.Glob(filepath.Join(e.home, ".cache", "cordon", "sandbox", "*"))
	if len(caches) != 1 || !strings.Contains(readFile(t, filepath.Join(caches[0], "workspace")), e.ws) {
		t.Errorf("after --clean the caches are %q, want only %s's", caches, e.ws)
	}
	if r = e.run("cache", "--clean", "--workspace", e.ws); r.code != 0 || !strings.Contains(r.stdout, "removed 1 of 1") {
		t.Errorf("cordon cache --clean --workspace: %s", r)
	}
	if caches, _ := filepath.Glob(filepath.Join(e.home, ".cache", "cordon", "sandbox", "*")); len(caches) != 0 {
		t.Errorf("caches left: %q", caches)
	}
}
