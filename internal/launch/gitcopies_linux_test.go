package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/parallel"
	"github.com/cordon-sandbox/cordon/internal/plan"
)

// TestCopyGitConfigsMany: the private copies of many repositories' configs
// (made from parallel.From of them on in two goroutines) come in the
// order of the git directories, each holding its own config, at most
// plan.MaxGitConfigs of them; a config that is no regular file fails the
// whole when every config must be copied (bubblewrap), naming the first
// such one, and is left out otherwise (the Landlock-only backend), the
// next ones taken instead; nothing is left in the state directory after
// close.
func TestCopyGitConfigsMany(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	n := plan.MaxGitConfigs + 6
	if n < parallel.From+1 {
		t.Fatalf("too few repositories for two goroutines: %d", n)
	}
	var dirs []string
	for i := range n {
		d := filepath.Join(root, fmt.Sprintf("r%03d", i), ".git")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if i == 5 || i == 40 {
			// Not a regular file: left read-only, never copied.
			if err := os.Symlink("/etc/hostname", filepath.Join(d, "config")); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(filepath.Join(d, "config"), fmt.Appendf(nil, "[user]\n\tname = r%03d\n", i), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	_, err := copyGitConfigs(state, dirs[:plan.MaxGitConfigs], true, nil)
	if err == nil || !strings.Contains(err.Error(), dirs[5]) {
		t.Fatalf("copying every config = %v, want the error of %s", err, dirs[5])
	}
	g, err := copyGitConfigs(state, dirs, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, d := range dirs {
		if i != 5 && i != 40 && len(want) < plan.MaxGitConfigs {
			want = append(want, d)
		}
	}
	if len(g.list) != len(want) {
		t.Fatalf("%d copies, want %d", len(g.list), len(want))
	}
	for i, c := range g.list {
		if c.gitDir != want[i] {
			t.Fatalf("copy %d is %s's, want %s's", i, c.gitDir, want[i])
		}
		got, err := os.ReadFile(c.file.Name())
		if err != nil {
			t.Fatal(err)
		}
		if name := filepath.Base(filepath.Dir(c.gitDir)); !strings.Contains(string(got), "name = "+name) {
			t.Errorf("the copy of %s holds %q", c.gitDir, got)
		}
	}
	dir := g.dir
	g.close()
	if _, err := os.Lstat(dir); err == nil {
		t.Errorf("the copies' directory %s is left after close", dir)
	}
	for _, d := range []string{state} {
		ents, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), gitCopiesPrefix) {
				t.Errorf("%s left in %s", e.Name(), d)
			}
		}
	}
}
