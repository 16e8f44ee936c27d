package plan

import (
	"github.com/cordon-sandbox/cordon/internal/monitor"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/policy"
)

// TestRepoPlan: what each backend makes of the paths a policy adds for the
// workspace's git repository (policy.Repo): the work tree above the
// workspace is walked for deny globs and its .env masked, an added git
// directory is protected as a .git in the workspace is but gets no
// placeholders for .envrc and the like at its top, the Landlock-only
// backend grants a linked worktree only what git writes in the common
// directory and says when a whole git directory stays writable, and the
// check after the run covers the added git directories.
func TestRepoPlan(t *testing.T) {
	for _, tc := range []struct {
		name     string
		backend  backend.Name
		worktree bool
	}{
		{"bwrap, sub-directory", backend.Bwrap, false},
		{"bwrap, linked worktree", backend.Bwrap, true},
		{"landlock, sub-directory", backend.Landlock, false},
		{"landlock, linked worktree", backend.Landlock, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, opts := testPolicy(t)
			p.Protected = policy.Protected
			p.Backend = tc.backend
			home := opts.Home
			top := filepath.Join(home, "mono")
			c := filepath.Join(top, ".git")
			fakeGitDir(t, c, "config", "hooks/pre-commit", "logs/HEAD")
			g := c
			ws := filepath.Join(top, "svc")
			repo := &policy.Repo{Kind: "sub-directory", WorkTree: top, GitDir: c, Read: []string{top}, Write: []string{c}}
			if tc.worktree {
				ws = filepath.Join(home, "wt")
				g = filepath.Join(c, "worktrees", "wt")
				for _, f := range []string{"HEAD", "commondir", "gitdir"} {
					writeTestFile(t, filepath.Join(g, f), "x\n")
				}
				writeTestFile(t, filepath.Join(ws, ".git"), "gitdir: "+g+"\n")
				repo = &policy.Repo{Kind: "linked worktree", WorkTree: ws, GitDir: g, CommonDir: c, Write: []string{c}, Worktree: true}
			}
			writeTestFile(t, filepath.Join(ws, "f.go"), "package f\n")
			writeTestFile(t, filepath.Join(top, ".env"), "SECRET\n")
			p.Workspace, opts.Cwd, p.Repo = ws, ws, repo
			p.Read = append([]string{"/usr", "/etc", ws}, repo.Read...)
			p.Write = []string{ws, c, "/tmp"}
			pl, err := Build(p, []string{"true"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(pl.Guard.Roots, c) || !slices.Contains(pl.Guard.GitDirs, c) || !slices.Contains(pl.Guard.GitDirs, g) {
				t.Errorf("the check after the run does not cover %s: %+v", c, pl.Guard)
			}
			if len(pl.RunNotes) != 1 || !strings.Contains(pl.RunNotes[0], c) {
				t.Errorf("RunNotes = %q, want one naming %s", pl.RunNotes, c)
			}
			if tc.backend == backend.Bwrap {
				checkBwrapRepo(t, pl, opts, top, c, g, tc.worktree)
				return
			}
			checkLandlockRepo(t, pl, top, c, g, tc.worktree)
		})
	}
}

func checkBwrapRepo(t *testing.T, pl *Plan, opts Options, top, c, g string, worktree bool) {
	t.Helper()
	ro := func(path string) []string { return []string{"--ro-bind", path, path} }
	want := [][]string{
		{"--bind", c, c},
		gitCopy(pl, filepath.Join(c, "config")),
		ro(filepath.Join(c, "hooks")),
	}
	if worktree {
		want = append(want, ro(filepath.Join(g, "commondir")), ro(filepath.Join(g, "gitdir")))
	} else {
		// The main work tree is read-only, with its .env masked.
		want = append(want, ro(top), []string{"--ro-bind", filepath.Join(opts.StateDir, maskFile), filepath.Join(top, ".env")})
	}
	for _, seq := range want {
		if !hasSeq(pl.Argv, seq...) {
			t.Errorf("argv lacks %q:\n%s", seq, strings.Join(pl.Argv, " "))
		}
	}
	for _, ph := range pl.PlaceholderPaths() {
		if rel, ok := strings.CutPrefix(ph, c+"/"); ok && !slices.Contains([]string{"commondir", "config.worktree", "worktrees/wt/config.worktree"}, rel) {
			t.Errorf("placeholder %s in the added git directory", ph)
		}
	}
	if !strings.Contains(pl.RunNotes[0], "except the config, hooks") {
		t.Errorf("the note does not say what stays read-only: %q", pl.RunNotes[0])
	}
}

func checkLandlockRepo(t *testing.T, pl *Plan, top, c, g string, worktree bool) {
	t.Helper()
	rw := pl.Spec.Landlock.ReadWrite
	whole := slices.Contains(rw, c)
	if worktree == whole {
		t.Errorf("linked worktree %v, but the common directory is writable as a whole %v: %q", worktree, whole, rw)
	}
	if worktree {
		for _, d := range []string{g, filepath.Join(c, "objects"), filepath.Join(c, "refs"), filepath.Join(c, "logs")} {
			if !slices.Contains(rw, d) {
				t.Errorf("%s is not writable: %q", d, rw)
			}
		}
		if !policy.CoveredBy(filepath.Join(c, "config"), pl.Spec.Landlock.ReadOnly) {
			t.Errorf("%s/config is not readable: %q", c, pl.Spec.Landlock.ReadOnly)
		}
		if !strings.Contains(pl.RunNotes[0], "packed-refs stay read-only") {
			t.Errorf("the note does not say what stays read-only: %q", pl.RunNotes[0])
		}
		return
	}
	// The .env in the work tree above is carved out of the reads.
	env := filepath.Join(top, ".env")
	if policy.CoveredBy(env, pl.Spec.Landlock.ReadOnly) || !policy.CoveredBy(filepath.Join(top, "svc"), slices.Concat(pl.Spec.Landlock.ReadOnly, rw)) {
		t.Errorf("want %s carved out of the readable work tree: %q", env, pl.Spec.Landlock.ReadOnly)
	}
	// Writable as a whole for Landlock; its config and hooks are the
	// supervisor's to refuse.
	if slices.ContainsFunc(pl.Degraded, func(d string) bool { return strings.Contains(d, "writable as a whole") }) ||
		pl.Supervise == nil || pl.Supervise.Allow(filepath.Join(c, "hooks", "pre-commit"), monitor.AccessCreate) || pl.Supervise.Allow(filepath.Join(c, "config"), monitor.AccessWrite) {
		t.Errorf("%s's config and hooks are not refused by the supervisor, or said writable: %q", c, pl.Degraded)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
