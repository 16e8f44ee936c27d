package toolenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/cordon-sandbox/cordon/internal/config"
)

// toolTimeout bounds one run of a tool asked for its defaults.
const toolTimeout = 5 * time.Second

// maxToolOutput bounds what cordon reads of a tool's answer.
const maxToolOutput = 64 << 10

// toolCacheName is the file, in Host.StateDir, that keeps what npm and
// python3 reported about their defaults.
const toolCacheName = "tool-defaults.json"

// isExecutable reports whether p is a regular file (after symbolic
// links) with an execute bit.
func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// runTool runs a host tool with exactly env, in /, for at most
// toolTimeout, and returns its standard output. Standard error is
// discarded (npm warns there about settings it does not know).
func runTool(bin string, args, env []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Dir = "/"
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout = &limitWriter{w: &out, n: maxToolOutput}
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s %s: %w within %s", filepath.Base(bin), args[0], errSlow, toolTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", filepath.Base(bin), args[0], err)
	}
	return out.Bytes(), nil
}

// limitWriter keeps the first n bytes written to it and drops the rest.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	k := min(len(p), l.n)
	if k > 0 {
		if _, err := l.w.Write(p[:k]); err != nil {
			return 0, err
		}
		l.n -= k
	}
	return len(p), nil
}

// cacheEntry is what a tool reported, with the fingerprint of what the
// answer depends on.
type cacheEntry struct {
	// Stamp fingerprints the tool's binary, the environment it ran with
	// and Files.
	Stamp string `json:"stamp"`
	// Files are further files the answer depends on (npm's global
	// config, pip's own module).
	Files []string `json:"files,omitempty"`
	// Values is the answer.
	Values []string `json:"values"`
}

// toolDefault returns what ask reports for the tool bin run with env,
// from the cache in Host.StateDir while neither bin, env nor the files
// ask named have changed since. ask returns its answer and the files it
// depends on beyond bin.
func (c *collector) toolDefault(key, bin string, env []string, ask func() (values, files []string, err error)) ([]string, error) {
	cache := c.readToolCache()
	if e, ok := cache[key]; ok && e.Stamp == stamp(bin, env, e.Files) {
		return e.Values, nil
	}
	values, files, err := ask()
	if err != nil {
		return nil, err
	}
	if c.h.StateDir != "" {
		cache[key] = cacheEntry{Stamp: stamp(bin, env, files), Files: files, Values: values}
		c.writeToolCache(cache)
	}
	return values, nil
}

func (c *collector) readToolCache() map[string]cacheEntry {
	cache := map[string]cacheEntry{}
	if c.h.StateDir == "" {
		return cache
	}
	data, err := config.ReadFile(filepath.Join(c.h.StateDir, toolCacheName), config.ReadOptions{NoFollow: true})
	if err != nil || json.Unmarshal(data, &cache) != nil {
		return map[string]cacheEntry{}
	}
	return cache
}

// writeToolCache replaces the cache file; failing to is not an error
// (the tools are asked again next time).
func (c *collector) writeToolCache(cache map[string]cacheEntry) {
	data, err := json.Marshal(cache)
	if err != nil || os.MkdirAll(c.h.StateDir, 0o700) != nil {
		return
	}
	f, err := os.CreateTemp(c.h.StateDir, toolCacheName+".*")
	if err != nil {
		return
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), filepath.Join(c.h.StateDir, toolCacheName)) != nil {
		os.Remove(f.Name())
	}
}

// stamp fingerprints a tool's binary (its real path, size, modification
// time and inode), the environment it runs with, and further files.
func stamp(bin string, env, files []string) string {
	h := sha256.New()
	paths := append([]string{bin}, files...)
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			fmt.Fprintf(h, "%s absent\n", p)
			continue
		}
		fi, err := os.Stat(real)
		if err != nil {
			fmt.Fprintf(h, "%s absent\n", real)
			continue
		}
		fmt.Fprintf(h, "%s %d %d %v\n", real, fi.Size(), fi.ModTime().UnixNano(), inode(fi))
	}
	for _, e := range env {
		fmt.Fprintf(h, "env %s\n", e)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// errSlow is a tool that did not answer within toolTimeout.
var errSlow = errors.New("did not answer")

// errNoAnswer is a tool's answer that cordon cannot read.
var errNoAnswer = errors.New("its answer could not be read")
