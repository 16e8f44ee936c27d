//go:build linux

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// warmGoCache is a Go build cache holding the standard library that a
// program using fmt needs, compiled once per test binary and copied into
// the fake homes of the tests that build Go: a cold build of the standard
// library costs tens of seconds of CPU on 2 cores, and every such test
// paid it. A user's build cache is warm; the first builds from a cold one
// are the heavy tests' (TestGoFirstBuildWarmHost, TestCacheCommandInside).
// A run of the whole package starts it in TestMain, beside the tests that
// run one at a time (they mostly wait); with -run, the first test that
// asks makes it, and the others wait.
var warmGoCache struct {
	once sync.Once
	dir  string // the go-build directory, once made
	err  error
}

// sharedDirs are directories the tests share, removed after the run.
var sharedDirs []string

// startWarmGoCache makes the warm build cache in the background when the
// whole package runs (no -test.run), and the go command is there.
func startWarmGoCache() {
	if f := flag.Lookup("test.run"); f == nil || f.Value.String() != "" {
		return
	}
	if _, err := exec.LookPath("go"); err != nil {
		return
	}
	dir, err := os.MkdirTemp("", "cordon-itest-gocache-")
	if err != nil {
		return
	}
	sharedDirs = append(sharedDirs, dir)
	go warmGoCache.once.Do(func() { warmGoCache.dir, warmGoCache.err = makeWarmGoCache(dir) })
}

// makeWarmGoCache builds a program using fmt in dir with the build cache
// dir/go-build, and returns that cache.
func makeWarmGoCache(dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	for name, body := range map[string]string{
		"go.mod":  "module example.com/warm\n\ngo 1.22\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"warm\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	cache := filepath.Join(dir, "go-build")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", filepath.Join(dir, "app"), ".")
	cmd.Dir = src
	cmd.Env = append(goOutsideEnv(goBin), "HOME="+dir, "GOCACHE="+cache, "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build of the warm-up program: %v\n%s", err, out)
	}
	return cache, nil
}

// seedGoCache copies the warm build cache into e's home as its host's
// build cache (~/.cache/go-build), which cordon's GOCACHEPROG reads inside
// and never writes.
func seedGoCache(t *testing.T, e *sandboxEnv) {
	t.Helper()
	requireGo(t)
	warmGoCache.once.Do(func() {
		dir, err := os.MkdirTemp("", "cordon-itest-gocache-")
		if err != nil {
			warmGoCache.err = err
			return
		}
		sharedDirs = append(sharedDirs, dir)
		warmGoCache.dir, warmGoCache.err = makeWarmGoCache(dir)
	})
	if warmGoCache.err != nil {
		t.Fatalf("making the shared warm Go build cache: %v", warmGoCache.err)
	}
	copyTree(t, warmGoCache.dir, filepath.Join(e.home, ".cache", "go-build"))
}

// removeSharedDirs removes what the tests shared (sharedDirs).
func removeSharedDirs() {
	for _, d := range sharedDirs {
		_ = os.RemoveAll(d)
	}
}
