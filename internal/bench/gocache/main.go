// Command benchgocache measures the first go build and go test of a small
// module in a new workspace, with the host's Go caches warm, outside and
// inside cordon (`cordon run -- go build`, default profile), in one run,
// and prints the medians and their ratio (target: inside at most 1.5x
// outside). It also prints what each new workspace's sandbox cache holds
// afterwards.
//
// The module has two dependencies, golang.org/x/mod and golang.org/x/sync,
// made from the copies vendored in $GOROOT/src/cmd/vendor and served as a
// file:// module proxy, so nothing is fetched from the network and the
// real home's caches are never used: the benchmark has a home of its own,
// warmed by one go build and go test outside. Each round copies the module
// to two new workspaces, one built outside, one inside. Run it with:
//
//	go run ./internal/bench/gocache [-n 5] [-dir DIR]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/internal/sandboxcache"
	"github.com/cordon-sandbox/cordon/policy"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func main() {
	n := flag.Int("n", 5, "rounds (each: two new workspaces, a build and a test in each)")
	cordon := flag.String("cordon", "", "cordon binary, with cordon-helper beside it (default: build ./cmd/... into a temporary directory)")
	dir := flag.String("dir", "", "scratch directory (default: a new one in $TMPDIR); removed afterwards")
	flag.Parse()
	if err := run(*n, *cordon, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "benchgocache:", err)
		os.Exit(1)
	}
}

// the module built in every workspace
var project = map[string]string{
	"go.mod": "module example.com/bench\n\ngo 1.25\n",
	"main.go": `package main

import (
	"context"
	"fmt"

	"golang.org/x/mod/modfile"
	"golang.org/x/sync/errgroup"
)

func modulePath(data string) (string, error) {
	f, err := modfile.Parse("go.mod", []byte(data), nil)
	if err != nil {
		return "", err
	}
	return f.Module.Mod.Path, nil
}

func main() {
	g, _ := errgroup.WithContext(context.Background())
	g.Go(func() error {
		p, err := modulePath("module example.com/x\n")
		fmt.Println(p)
		return err
	})
	if err := g.Wait(); err != nil {
		panic(err)
	}
}
`,
	"main_test.go": `package main

import "testing"

func TestModulePath(t *testing.T) {
	if p, err := modulePath("module example.com/y\n"); err != nil || p != "example.com/y" {
		t.Fatal(p, err)
	}
}
`,
}

func run(n int, cordon, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "cordon-benchgocache-")
		if err != nil {
			return err
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	if os.Getenv("BENCH_KEEP") == "" {
		defer removeAll(dir)
	}
	if cordon == "" {
		cordon = filepath.Join(dir, "cordon")
		b := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/...")
		b.Stderr = os.Stderr
		b.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := b.Run(); err != nil {
			return fmt.Errorf("building cordon: %w", err)
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	proxy := filepath.Join(dir, "proxy")
	if err := vendoredProxy(proxy); err != nil {
		return err
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	path := filepath.Dir(goBin) + ":/usr/bin:/bin"
	outside := []string{"PATH=" + path, "HOME=" + home, "GOPROXY=file://" + proxy, "GOSUMDB=off",
		"GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local", "CGO_ENABLED=0"}
	// cordon's own environment: the user's, as a shell would have it.
	inside := []string{"PATH=" + path, "HOME=" + home, "CGO_ENABLED=0"}

	// Warm the host: what the user built outside before.
	warm := filepath.Join(dir, "warm")
	if err := writeProject(warm, nil); err != nil {
		return err
	}
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", "app", "."}, {"test", "."}} {
		if _, err := timed(warm, outside, goBin, args...); err != nil {
			return fmt.Errorf("warming the host's caches: %w", err)
		}
	}
	tidied := map[string][]byte{}
	for _, name := range []string{"go.mod", "go.sum"} {
		if tidied[name], err = os.ReadFile(filepath.Join(warm, name)); err != nil {
			return err
		}
	}

	names := []string{"outside go build", "outside go test", "inside go build", "inside go test"}
	times := make([][]time.Duration, len(names))
	for i := 0; i < n; i++ {
		out := filepath.Join(dir, "ws", fmt.Sprintf("out-%d", i))
		in := filepath.Join(dir, "ws", fmt.Sprintf("in-%d", i))
		for _, ws := range []string{out, in} {
			if err := writeProject(ws, tidied); err != nil {
				return err
			}
		}
		steps := []struct {
			ws   string
			env  []string
			argv []string
		}{
			{out, outside, []string{goBin, "build", "-o", "app", "."}},
			{out, outside, []string{goBin, "test", "."}},
			{in, inside, []string{cordon, "run", "--", "go", "build", "-o", "app", "."}},
			{in, inside, []string{cordon, "run", "--", "go", "test", "."}},
		}
		for s, st := range steps {
			d, err := timed(st.ws, st.env, st.argv[0], st.argv[1:]...)
			if err != nil {
				return err
			}
			times[s] = append(times[s], d)
		}
	}
	med := make([]time.Duration, len(names))
	for s, name := range names {
		slices.Sort(times[s])
		med[s] = times[s][len(times[s])/2]
		fmt.Printf("%-17s median %7.0f ms  (min %.0f, max %.0f) over %d new workspaces\n", name,
			ms(med[s]), ms(times[s][0]), ms(times[s][len(times[s])-1]), n)
	}
	fmt.Printf("first go build inside/outside: %.2fx (target <= 1.5x)\n", float64(med[2])/float64(med[0]))
	fmt.Printf("first go test inside/outside:  %.2fx (target <= 1.5x)\n", float64(med[3])/float64(med[1]))

	caches, err := sandboxcache.List(policy.SandboxCacheRoot(policy.Host{Home: home}))
	if err != nil {
		return err
	}
	var sizes []int64
	for _, c := range caches {
		sizes = append(sizes, c.Size)
	}
	slices.Sort(sizes)
	if len(sizes) > 0 {
		fmt.Printf("sandbox cache of each new workspace after its build and test: median %.1f MiB (%d caches)\n",
			float64(sizes[len(sizes)/2])/(1<<20), len(sizes))
	}
	fmt.Printf("(%s, %d CPUs)\n", runtime.Version(), runtime.NumCPU())
	return nil
}

// timed runs argv in dir with env and returns its wall time.
func timed(dir string, env []string, name string, args ...string) (time.Duration, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s %s in %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), dir, err, out.String())
	}
	return d, nil
}

// writeProject writes the module into dir, with the files of tidied
// (go.mod and go.sum as go mod tidy left them) in place of its own.
func writeProject(dir string, tidied map[string][]byte) error {
	files := map[string][]byte{}
	for name, content := range project {
		files[name] = []byte(content)
	}
	for name, b := range tidied {
		files[name] = b
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// vendoredProxy writes a file:// module proxy serving golang.org/x/mod
// and golang.org/x/sync as vendored in the Go distribution (the packages
// the go command uses), at the versions $GOROOT/src/cmd/vendor/modules.txt
// names.
func vendoredProxy(proxy string) error {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env GOROOT: %w", err)
	}
	vendor := filepath.Join(strings.TrimSpace(string(out)), "src", "cmd", "vendor")
	txt, err := os.ReadFile(filepath.Join(vendor, "modules.txt"))
	if err != nil {
		return err
	}
	versions := map[string]string{}
	for _, line := range strings.Split(string(txt), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "#" {
			versions[f[1]] = f[2]
		}
	}
	for _, path := range []string{"golang.org/x/mod", "golang.org/x/sync"} {
		v := versions[path]
		if v == "" {
			return fmt.Errorf("%s is not vendored in %s", path, vendor)
		}
		src := filepath.Join(filepath.Dir(proxy), "modsrc", path)
		if err := copyGo(filepath.Join(vendor, path), src); err != nil {
			return err
		}
		gomod := "module " + path + "\n\ngo 1.25\n"
		if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(gomod), 0o644); err != nil {
			return err
		}
		at := filepath.Join(proxy, path, "@v")
		if err := os.MkdirAll(at, 0o755); err != nil {
			return err
		}
		zf, err := os.Create(filepath.Join(at, v+".zip"))
		if err != nil {
			return err
		}
		err = modzip.CreateFromDir(zf, module.Version{Path: path, Version: v}, src)
		if cerr := zf.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("zipping %s: %w", path, err)
		}
		for name, content := range map[string]string{
			"list":      v + "\n",
			v + ".mod":  gomod,
			v + ".info": fmt.Sprintf(`{"Version":%q,"Time":"2025-01-01T00:00:00Z"}`, v),
		} {
			if err := os.WriteFile(filepath.Join(at, name), []byte(content), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyGo copies a vendored module's files.
func copyGo(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

// removeAll removes the scratch directory, read-only module caches too.
func removeAll(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	os.RemoveAll(dir)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
