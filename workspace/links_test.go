//go:build linux || darwin

package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// TestProtectedLinks: a protected path that is a symbolic link into the
// workspace (~/.bashrc -> a dotfiles workspace's bashrc, .envrc ->
// tools/envrc) makes its target as protected as itself: the file tools
// refuse to write it, naming the link; the files beside it stay writable.
func TestProtectedLinks(t *testing.T) {
	home, err := filepath.EvalSymlinks(tempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(home, "dotfiles")
	mustMkdir(t, filepath.Join(ws, "tools"))
	mustWrite(t, filepath.Join(ws, "bashrc"), "# rc\n")
	mustWrite(t, filepath.Join(ws, "tools", "envrc"), "# envrc\n")
	mustWrite(t, filepath.Join(ws, "notes.txt"), "n\n")
	for link, target := range map[string]string{filepath.Join(home, ".bashrc"): filepath.Join(ws, "bashrc"), filepath.Join(ws, ".envrc"): "tools/envrc"} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	p, err := policy.Load(policy.Options{Host: policy.Host{Home: home, Cwd: ws}, Workspace: ws, SkipUserConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for path, link := range map[string]string{"bashrc": filepath.Join(home, ".bashrc"), "tools/envrc": filepath.Join(ws, ".envrc")} {
		_, err := f.WriteFile(path, "touch /tmp/pwned\n")
		v := violation(t, err, KindProtected)
		if v.Source != SourceLink || v.Detail != filepath.ToSlash(link) {
			t.Errorf("WriteFile(%s): %+v, want the link %s named", path, v, link)
		}
	}
	if _, err := f.WriteFile("notes.txt", "ok\n"); err != nil {
		t.Errorf("a file beside them: %v", err)
	}
}
