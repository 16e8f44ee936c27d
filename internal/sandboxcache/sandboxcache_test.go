package sandboxcache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	mkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newCache makes the sandbox cache of workspace ws in root, recorded, with
// a file of n bytes.
func newCache(t *testing.T, root, ws string, n int) string {
	t.Helper()
	dir := filepath.Join(root, policy.SandboxCacheName(ws))
	mkdir(t, dir)
	if err := Record(dir, ws); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go-build", "00", "x-d"), strings.Repeat("x", n))
	return dir
}

// TestList: each cache with its workspace, state and size; a record that
// does not match the cache's name counts as none; what is not a cache is
// left out.
func TestList(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "sandbox")
	present := filepath.Join(base, "present")
	mkdir(t, present)
	gone := filepath.Join(base, "gone")
	newCache(t, root, present, 200_000)
	newCache(t, root, gone, 10)
	// A record rewritten from inside a sandbox to name another workspace.
	forged := newCache(t, root, filepath.Join(base, "forged"), 1)
	if err := os.WriteFile(filepath.Join(forged, RecordName), []byte(present+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A cache an older cordon made: no record.
	old := filepath.Join(root, policy.SandboxCacheName(filepath.Join(base, "old")))
	write(t, filepath.Join(old, "npm", "f"), "abc")
	// Not caches.
	mkdir(t, filepath.Join(root, "not-a-cache"))
	write(t, filepath.Join(root, strings.Repeat("a", 24)), "a file")
	// A link in a cache is counted as itself, not its target.
	write(t, filepath.Join(base, "big"), strings.Repeat("y", 1<<20))
	if err := os.Symlink(filepath.Join(base, "big"), filepath.Join(old, "link")); err != nil {
		t.Fatal(err)
	}

	caches, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Cache{}
	for _, c := range caches {
		got[c.Name] = c
	}
	// Sizes are disk usage (blocks, directories included): bounds.
	tests := []struct {
		dir      string
		ws       string
		state    State
		min, max int64
	}{
		{filepath.Join(root, policy.SandboxCacheName(present)), present, Present, 200_000, 1 << 20},
		{filepath.Join(root, policy.SandboxCacheName(gone)), gone, Gone, 1, 200_000},
		{forged, "", Unknown, 1, 200_000},
		{old, "", Unknown, 1, 200_000}, // the link's 1 MiB target is not counted
	}
	if len(caches) != len(tests) {
		t.Errorf("List returned %d caches, want %d: %+v", len(caches), len(tests), caches)
	}
	for _, tc := range tests {
		c, ok := got[filepath.Base(tc.dir)]
		if !ok {
			t.Errorf("cache %s not listed", tc.dir)
			continue
		}
		if c.Dir != tc.dir || c.Workspace != tc.ws || c.State != tc.state || c.Size < tc.min || c.Size > tc.max {
			t.Errorf("cache %s = %+v, want workspace %q, state %s, size in [%d, %d]", tc.dir, c, tc.ws, tc.state, tc.min, tc.max)
		}
	}
	if caches, err := List(filepath.Join(base, "missing")); err != nil || len(caches) != 0 {
		t.Errorf("List of a missing root = %v, %v", caches, err)
	}
}

// TestRecordKept: a record is written once; a later call leaves it.
func TestRecordKept(t *testing.T) {
	dir := t.TempDir()
	if err := Record(dir, "/a"); err != nil {
		t.Fatal(err)
	}
	if err := Record(dir, "/b"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, RecordName)); string(b) != "/a\n" {
		t.Errorf("record %q, want /a", b)
	}
}

// TestRemove: a cache goes whole, read-only directories (a Go module
// cache) included; a link in it is removed, not followed; anything that
// is not a cache directory of the root is refused.
func TestRemove(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "sandbox")
	outside := filepath.Join(base, "outside")
	write(t, filepath.Join(outside, "keep"), "keep me")
	tests := []struct {
		name    string
		setup   func(t *testing.T) string // returns the name to remove
		wantErr string
	}{
		{"a cache with a read-only module cache and links out", func(t *testing.T) string {
			dir := newCache(t, root, filepath.Join(base, "ws1"), 10)
			mod := filepath.Join(dir, "go-mod", "example.com", "m@v1.0.0")
			write(t, filepath.Join(mod, "m.go"), "package m")
			for _, d := range []string{mod, filepath.Dir(mod)} {
				if err := os.Chmod(d, 0o555); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, "keep"), filepath.Join(dir, "go-build", "keep")); err != nil {
				t.Fatal(err)
			}
			return filepath.Base(dir)
		}, ""},
		{"not a cache's name", func(t *testing.T) string { return "../outside" }, "not a sandbox cache's name"},
		{"a link with a cache's name", func(t *testing.T) string {
			name := policy.SandboxCacheName(filepath.Join(base, "ws2"))
			mkdir(t, root)
			if err := os.Symlink(outside, filepath.Join(root, name)); err != nil {
				t.Fatal(err)
			}
			return name
		}, "not a directory"},
		{"missing", func(t *testing.T) string { return policy.SandboxCacheName("/nowhere") }, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.setup(t)
			err := Remove(root, name)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Remove: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Remove = %v, want an error with %q", err, tc.wantErr)
			}
			if tc.wantErr == "" {
				if _, err := os.Lstat(filepath.Join(root, name)); err == nil {
					t.Error("the cache is still there")
				}
			}
			if b, err := os.ReadFile(filepath.Join(outside, "keep")); err != nil || string(b) != "keep me" {
				t.Errorf("a file outside the cache was changed: %q, %v", b, err)
			}
		})
	}
}
