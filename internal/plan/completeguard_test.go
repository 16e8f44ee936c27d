package plan

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/policy"
)

// TestGuardComplete: on both backends, a plan whose protected rules find
// every git directory and every name the check after the run looks for
// says so (Guard.Complete), with the git directories and names of the
// sandbox cache, which the plan's own walk does not search, found by a
// walk for the guard alone (Guard.Unwalked*: nothing is kept read-only
// there); a policy that protects one name fewer, or a root with a
// directory that cannot be listed, is not complete, so that the check
// after the run walks.
func TestGuardComplete(t *testing.T) {
	for _, b := range []backend.Name{backend.Bwrap, backend.Landlock} {
		t.Run(string(b), func(t *testing.T) {
			build := func(t *testing.T, edit func(p *policy.Policy)) Guard {
				t.Helper()
				p, opts := testPolicy(t)
				p.Backend = b
				opts.Host.LandlockABI = 6
				p.Protected = slices.Clone(policy.Protected)
				p.SandboxCache = filepath.Join(opts.StateDir, "cache")
				p.Write = append(p.Write, p.SandboxCache)
				p.Read = append(p.Read, p.SandboxCache)
				repo := filepath.Join(p.SandboxCache, "vcs", "r")
				for _, d := range []string{filepath.Join(repo, "objects"), filepath.Join(p.SandboxCache, "x", ".vscode")} {
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.WriteFile(filepath.Join(repo, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if edit != nil {
					edit(p)
				}
				pl, err := Build(p, []string{"true"}, opts)
				if err != nil {
					t.Fatal(err)
				}
				g := pl.Guard
				if !slices.Contains(g.Roots, p.SandboxCache) {
					t.Fatalf("the sandbox cache is not among the guard's roots %q", g.Roots)
				}
				if !g.Complete {
					return g
				}
				if !slices.Contains(g.UnwalkedGitDirs, repo) || slices.Contains(g.GitDirs, repo) {
					t.Errorf("the sandbox cache's repository: unwalked %q, walked %q", g.UnwalkedGitDirs, g.GitDirs)
				}
				if v := filepath.Join(p.SandboxCache, "x", ".vscode"); !slices.Contains(g.UnwalkedNames, v) || slices.Contains(g.Names, v) {
					t.Errorf("the sandbox cache's .vscode: unwalked %q, walked %q", g.UnwalkedNames, g.Names)
				}
				if !slices.Contains(g.GitDirs, filepath.Join(p.Workspace, ".git")) {
					t.Errorf("the workspace's repository is not among %q", g.GitDirs)
				}
				return g
			}
			if g := build(t, nil); !g.Complete || g.Dirs < 8 {
				t.Errorf("the default protected rules: complete %v, %d directories", g.Complete, g.Dirs)
			}
			fewer := func(p *policy.Policy) {
				p.Protected = slices.DeleteFunc(p.Protected, func(r string) bool { return r == "**/.envrc" })
			}
			if g := build(t, fewer); g.Complete {
				t.Error("without **/.envrc: complete")
			}
			if os.Geteuid() != 0 {
				locked := func(p *policy.Policy) {
					d := filepath.Join(p.Workspace, "locked")
					if err := os.Mkdir(d, 0o000); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = os.Chmod(d, 0o755) })
				}
				if g := build(t, locked); g.Complete {
					t.Error("with a directory that cannot be listed: complete")
				}
			}
		})
	}
}
