package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// tempDir is t.TempDir, but on Windows under Wine, whose file system
// refuses the deletion os.RemoveAll asks for ("Invalid function"), the
// directory's removal is tried and its failure left alone: a test must
// not fail on the emulator's clean-up.
func tempDir(t testing.TB) string {
	t.Helper()
	if runtime.GOOS != "windows" {
		return t.TempDir()
	}
	d, err := os.MkdirTemp("", "cordon-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// setup makes base/anchor (the workspace), base/anchor2 and base/outside,
// all real directories under t.TempDir().
func setup(t *testing.T, extra ...Root) (fsys *FS, ws, base string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(tempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	ws = filepath.Join(base, "anchor")
	for _, d := range []string{ws, filepath.Join(ws, "sub", "deep"), filepath.Join(base, "anchor2"), filepath.Join(base, "Anchor"), filepath.Join(base, "outside")} {
		mustMkdir(t, d)
	}
	mustWrite(t, filepath.Join(ws, "a.txt"), "alpha\nbeta\ngamma\n")
	mustWrite(t, filepath.Join(ws, "sub", "b.txt"), "bee\n")
	mustWrite(t, filepath.Join(base, "anchor2", "x"), "sibling\n")
	mustWrite(t, filepath.Join(base, "Anchor", "x"), "case sibling\n")
	mustWrite(t, filepath.Join(base, "outside", "secret"), "outside content\n")
	fsys = newFS(t, ws, policy.ModeStandard, extra...)
	return fsys, ws, base
}

func newFS(t testing.TB, ws string, mode policy.Mode, extra ...Root) *FS {
	t.Helper()
	p := &policy.Policy{
		Mode:      mode,
		Workspace: ws,
		Write:     []string{ws},
		Deny:      []string{"**/.env", "**/.env.*", "**/secrets.*", filepath.Join(ws, "private")},
		DenyWrite: []string{filepath.Join(ws, "frozen")},
		Protected: policy.Protected,
	}
	fsys, err := New(p, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return fsys
}

func mustMkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t testing.TB, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// linksWork reports whether this system makes symbolic links that it can
// then look up: not Wine, whose links (os.Symlink succeeds) cannot even be
// described by os.Lstat. Under Wine the rows with links do not run; on
// Linux, macOS and Windows itself they do.
func linksWork(t *testing.T) bool {
	t.Helper()
	if runtime.GOOS != "windows" {
		return true
	}
	d := tempDir(t)
	if err := os.Symlink("x", filepath.Join(d, "l")); err != nil {
		return false
	}
	_, err := os.Lstat(filepath.Join(d, "l"))
	return err == nil
}

func mustLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func violation(t *testing.T, err error, kind Kind) *Violation {
	t.Helper()
	var v *Violation
	if !errors.As(err, &v) {
		t.Fatalf("want a *Violation of kind %s, got %v", kind, err)
	}
	if v.Kind != kind {
		t.Fatalf("want kind %s, got %s: %v", kind, v.Kind, v)
	}
	msg := v.Error()
	if !strings.HasPrefix(msg, "sandbox violation: ") || strings.Contains(msg, "\n") {
		t.Fatalf("message is not one sandbox-violation sentence: %q", msg)
	}
	if strings.Contains(msg, "--no-sandbox") {
		t.Fatalf("message advises lifting the sandbox: %q", msg)
	}
	return v
}
