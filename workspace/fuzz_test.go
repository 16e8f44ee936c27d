//go:build unix

package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// FuzzResolve checks that every successful resolution stays inside its
// root: lexically (the resolved path is below the root) and on disk (the
// resolved path, with every link evaluated by the OS, is below the root).
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"", ".", "a.txt", "../x", "../../etc/passwd", "/etc/passwd", "sub/../../x",
		"./sub/./b.txt", "esc/secret", "esc", "in/b.txt", "loop", "sub/up/x",
		"sub//b.txt", "a\x00b", strings.Repeat("../", 50), "/", "//", "\xff\xfe",
		"sub/deep/../../../anchor/a.txt", "../anchor2/x", "../Anchor/x", "abs",
		"sub/new/dir/file", "esc/../a.txt", "in/../esc/secret",
	} {
		f.Add(s)
	}
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	ws := filepath.Join(base, "anchor")
	for _, d := range []string{filepath.Join(ws, "sub", "deep"), filepath.Join(base, "anchor2"), filepath.Join(base, "outside")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	_ = os.WriteFile(filepath.Join(base, "outside", "secret"), []byte("s\n"), 0o644)
	links := map[string]string{
		"esc": "../outside", "in": "sub", "loop": "loop", "sub/up": "../..",
		"abs": filepath.Join(base, "outside"), "sub/deep/ws": ws,
	}
	for l, to := range links {
		_ = os.Symlink(to, filepath.Join(ws, l))
	}
	fsys, err := New(&policy.Policy{Mode: policy.ModeStandard, Workspace: ws, Write: []string{ws}, Deny: []string{"**/.env"}, Protected: policy.Protected})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { fsys.Close() })
	inside := func(p string) bool {
		return p == ws || strings.HasPrefix(p, ws+"/")
	}
	f.Fuzz(func(t *testing.T, p string) {
		tg, err := fsys.resolve("file-read", p)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if !inside(tg.abs) || strings.Contains("/"+tg.rel+"/", "/../") {
			t.Fatalf("resolve(%q) = %q, outside %s", p, tg.abs, ws)
		}
		if real, err := filepath.EvalSymlinks(tg.abs); err == nil && !inside(real) {
			t.Fatalf("resolve(%q) = %q, which is really %q", p, tg.abs, real)
		}
		// The public operations must not panic either.
		_, _ = fsys.ReadFile(p, 0, 0)
		_, _ = fsys.Info(p)
	})
}
