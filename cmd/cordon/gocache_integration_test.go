//go:build linux

package main

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// warmGoCache is a Go build cache holding the standard library that a
// program using fmt needs, compiled once per test binary (by the first
// test that asks, the others waiting) and copied into the fake homes of
// the tests that build Go: a cold build of the standard library costs tens
// of seconds of CPU on 2 cores, and every such test paid it. A user's
// build cache is warm; the first builds from a cold one are the heavy
// tests' (TestGoFirstBuildWarmHost, TestCacheCommandInside).
var warmGoCache struct {
	once sync.Once
	dir  string // the go-build directory
	err  string // why it could not be made, for every test that asks
}

// sharedDirs are directories the tests share, removed after the run.
var sharedDirs []string

// seedGoCache copies the warm build cache into e's home as its host's
// build cache (~/.cache/go-build), which cordon's GOCACHEPROG reads inside
// and never writes.
func seedGoCache(t *testing.T, e *sandboxEnv) {
	t.Helper()
	requireGo(t)
	warmGoCache.once.Do(func() {
		dir, err := os.MkdirTemp("", "cordon-itest-gocache-")
		if err != nil {
			warmGoCache.err = err.Error()
			return
		}
		sharedDirs = append(sharedDirs, dir)
		src := filepath.Join(dir, "src")
		for name, body := range map[string]string{
			"go.mod":  "module example.com/warm\n\ngo 1.22\n",
			"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"warm\") }\n",
		} {
			if err := os.MkdirAll(src, 0o755); err != nil {
				warmGoCache.err = err.Error()
				return
			}
			if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
				warmGoCache.err = err.Error()
				return
			}
		}
		cache := filepath.Join(dir, "go-build")
		goOutside(t, src, []string{"HOME=" + dir, "GOCACHE=" + cache, "GOPROXY=off"}, "build", "-o", filepath.Join(dir, "app"), ".")
		warmGoCache.dir = cache
	})
	if warmGoCache.dir == "" {
		t.Fatalf("making the shared warm Go build cache failed (%s): see the first test that asked", warmGoCache.err)
	}
	copyTree(t, warmGoCache.dir, filepath.Join(e.home, ".cache", "go-build"))
}

// removeSharedDirs removes what the tests shared (sharedDirs).
func removeSharedDirs() {
	for _, d := range sharedDirs {
		_ = os.RemoveAll(d)
	}
}
