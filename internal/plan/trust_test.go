package plan

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// TestPermissiveKeepsProtect: mode permissive's bwrap plan mounts protect's
// read-only binds and placeholders over the host's tree, as mode standard
// does, and says what it keeps (Plan.ReadOnly, Guard.KeptReadOnly); the
// denied paths are masked only for cordon learn (HideDenied).
func TestPermissiveKeepsProtect(t *testing.T) {
	for _, hide := range []bool{false, true} {
		p, opts := testPolicy(t)
		p.Mode = policy.ModePermissive
		opts.HideDenied = hide
		ws := p.Workspace
		envrc := filepath.Join(ws, ".envrc")
		if err := os.WriteFile(envrc, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		pl, err := Build(p, []string{"true"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{filepath.Join(ws, ".git", "config"), filepath.Join(ws, ".git", "hooks"), envrc} {
			if !hasSeq(pl.Argv, "--ro-bind", path, path) || !slices.Contains(pl.ReadOnly, path) {
				t.Errorf("hide=%v: %s is not kept read-only: %q", hide, path, pl.Argv)
			}
		}
		if !slices.Contains(pl.PlaceholderPaths(), filepath.Join(ws, ".vscode")) || !pl.LockWorkspace {
			t.Errorf("hide=%v: no placeholder for the missing .vscode, or no lock: %q", hide, pl.Placeholders)
		}
		if got := pl.Guard.KeptReadOnly; !slices.Contains(got, filepath.Join(ws, ".git")) || !slices.Contains(got, envrc) {
			t.Errorf("hide=%v: kept read-only %q", hide, got)
		}
		masked := hasSeq(pl.Argv, "--ro-bind", filepath.Join(opts.StateDir, maskFile), filepath.Join(ws, ".env"))
		if masked != hide || slices.Contains(pl.Hidden, filepath.Join(ws, ".env")) != hide {
			t.Errorf("hide=%v: .env masked %v, hidden %q", hide, masked, pl.Hidden)
		}
	}
}

// TestKeptReadOnlyOnlyWhatIsKept: the guard trusts a protected name only
// where the mount is its own: not a name that is a symbolic link (its
// target is bound, the link can be replaced), nor one under a writable
// mount.
func TestKeptReadOnlyOnlyWhatIsKept(t *testing.T) {
	p, opts := testPolicy(t)
	ws := p.Workspace
	if err := os.WriteFile(filepath.Join(ws, "real"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(ws, ".envrc")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "sub", ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := pl.Guard.KeptReadOnly
	if slices.Contains(got, filepath.Join(ws, ".envrc")) || !slices.Contains(got, filepath.Join(ws, "sub", ".vscode")) || !slices.Contains(got, filepath.Join(ws, ".git")) {
		t.Errorf("kept read-only %q", got)
	}
	m := newMountTable([]mountOp{{opWrite, "/w", "/w"}, {opReadOnly, "/w/a", "/w/a"}, {opWrite, "/w/a/b", "/w/a/b"}, {opReadOnly, "/w/c", "/w/c"}})
	for path, want := range map[string]bool{"/w": false, "/w/x": false, "/w/a": false, "/w/a/x": true, "/w/a/b/x": false, "/w/c": true, "/w/cc": false, "/other": false} {
		if m.readOnly(path) != want {
			t.Errorf("readOnly(%s) = %v", path, !want)
		}
	}
}
