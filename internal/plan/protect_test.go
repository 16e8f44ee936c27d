package plan

import (
	"errors"
	"fmt"
	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/monitor"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/policy"
)

// fakeGitDir makes a directory that git takes for a repository (HEAD and
// objects/), with the given extra files.
func fakeGitDir(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, d := range []string{filepath.Join(dir, "objects"), filepath.Join(dir, "refs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range append([]string{"HEAD"}, files...) {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestProtectAnyDepth: every git directory under a writable root, at any
// depth and whatever its name, keeps its config, hooks and commondir
// read-only and is pinned (with the directories between it and an
// enclosing .git); absent entries get placeholders; gitlinks and protected
// names are read-only wherever they are; and the Guard lists the roots, git
// directories and names for the check after the run.
func TestProtectAnyDepth(t *testing.T) {
	p, opts := testPolicy(t)
	p.Protected = policy.Protected
	ws, st := p.Workspace, opts.StateDir
	fakeGitDir(t, filepath.Join(ws, "sub", ".git"), "config", "hooks/pre-commit")
	fakeGitDir(t, filepath.Join(ws, ".git", "modules", "lib"), "config")
	fakeGitDir(t, filepath.Join(ws, "bare.git"), "config")
	wt := filepath.Join(ws, ".git", "worktrees", "wt")
	for _, f := range []string{"HEAD", "commondir", "gitdir"} {
		if err := os.MkdirAll(wt, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wt, f), []byte("../..\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"lib/.git", "deep/er/.envrc", "deep/.vscode/tasks.json", "dots/.bashrc"} {
		full := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("gitdir: ../.git/modules/lib\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ro := func(path string) []string { return []string{"--ro-bind", path, path} }
	pin := func(path string) []string { return []string{"--bind", path, path} }
	ph := func(src, path string) []string { return []string{"--ro-bind", filepath.Join(st, src), path} }
	want := [][]string{
		pin(filepath.Join(ws, "sub", ".git")),
		gitCopy(pl, filepath.Join(ws, "sub", ".git", "config")),
		ro(filepath.Join(ws, "sub", ".git", "hooks")),
		ph(commondirFile, filepath.Join(ws, "sub", ".git", "commondir")),
		ph(emptyFile, filepath.Join(ws, "sub", ".git", "config.worktree")),
		pin(filepath.Join(ws, ".git", "modules")),
		pin(filepath.Join(ws, ".git", "modules", "lib")),
		gitCopy(pl, filepath.Join(ws, ".git", "modules", "lib", "config")),
		ph(emptyDir, filepath.Join(ws, ".git", "modules", "lib", "hooks")),
		pin(filepath.Join(ws, "bare.git")),
		gitCopy(pl, filepath.Join(ws, "bare.git", "config")),
		ph(emptyDir, filepath.Join(ws, "bare.git", "hooks")),
		pin(filepath.Join(ws, ".git", "worktrees")),
		pin(wt),
		ro(filepath.Join(wt, "commondir")),
		ro(filepath.Join(wt, "gitdir")),
		ro(filepath.Join(ws, "lib", ".git")),
		ro(filepath.Join(ws, "deep", "er", ".envrc")),
		ro(filepath.Join(ws, "deep", ".vscode")),
		ro(filepath.Join(ws, "dots", ".bashrc")),
	}
	for _, w := range want {
		if !hasSeq(pl.Argv, w...) {
			t.Errorf("argv lacks %q", w)
		}
	}
	for _, bad := range [][]string{
		ph(emptyDir, filepath.Join(wt, "hooks")), // a worktree takes hooks from its common dir
		ph(commondirFile, filepath.Join(wt, "commondir")),
		ph(emptyDir, filepath.Join(ws, ".profile")), // no shell reads a project's
		ph(emptyDir, filepath.Join(ws, ".zshenv")),
	} {
		if hasSeq(pl.Argv, bad...) {
			t.Errorf("argv must not contain %q", bad)
		}
	}
	g := pl.Guard
	if !slices.Contains(g.Roots, ws) || !slices.Contains(g.GitDirs, filepath.Join(ws, "sub", ".git")) ||
		!slices.Contains(g.GitDirs, filepath.Join(ws, "bare.git")) || !slices.Contains(g.Names, filepath.Join(ws, "deep", "er", ".envrc")) {
		t.Errorf("guard = %+v", g)
	}
}

// TestAbsentPathsInWritableHome: with the home directory writable, absent
// denied paths get unreadable placeholders and absent home paths that run
// code later get read-only ones, files as files.
func TestAbsentPathsInWritableHome(t *testing.T) {
	p, opts := testPolicy(t)
	home, st := opts.Home, opts.StateDir
	p.Protected = policy.Protected
	p.Write = append(p.Write, home)
	p.Deny = append(p.Deny, filepath.Join(home, ".kube"), filepath.Join(home, ".npmrc"))
	p.DenyWrite = []string{filepath.Join(home, ".local", "bin"), filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "cordon")}
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range [][]string{
		{"--ro-bind", filepath.Join(st, maskDir), filepath.Join(home, ".kube")},
		{"--ro-bind", filepath.Join(st, maskFile), filepath.Join(home, ".npmrc")},
		{"--ro-bind", filepath.Join(st, emptyDir), filepath.Join(home, ".local")},
		{"--ro-bind", filepath.Join(st, emptyFile), filepath.Join(home, ".gitconfig")},
		{"--ro-bind", filepath.Join(st, emptyDir), filepath.Join(home, ".config")},
		{"--ro-bind", filepath.Join(st, emptyFile), filepath.Join(home, ".profile")},
	} {
		if !hasSeq(pl.Argv, w...) {
			t.Errorf("argv lacks %q:\n%s", w, strings.Join(pl.Argv, " "))
		}
	}
}

// TestWalkBoundRefuses: a workspace larger than the walk's bound is
// refused rather than planned with repositories or secrets missed.
func TestWalkBoundRefuses(t *testing.T) {
	p, opts := testPolicy(t)
	p.Protected = policy.Protected
	for i := range 30 {
		fakeGitDir(t, filepath.Join(p.Workspace, fmt.Sprintf("r%02d", i), ".git"), "config")
	}
	opts.WalkLimits = globscan.Limits{MaxEntries: 100}
	_, err := Build(p, []string{"true"}, opts)
	if !errors.Is(err, globscan.ErrLimit) || !strings.Contains(err.Error(), "MaxEntries") {
		t.Fatalf("err = %v, want the walk's bound", err)
	}
	opts.WalkLimits = globscan.Limits{}
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil || len(pl.Guard.GitDirs) < 30 {
		t.Fatalf("within the bound: err %v, %d git dirs", err, len(pl.Guard.GitDirs))
	}
}

// TestLandlockRefusesGuardedWrites: Landlock cannot keep a path read-only
// inside a writable tree, so a Landlock-only plan whose write paths hold
// cordon's config, its state or a home path that runs code later is
// refused rather than run with them writable; another deny_write path
// there is kept read-only by the supervisor (Supervision), not declared.
func TestLandlockRefusesGuardedWrites(t *testing.T) {
	p, opts := testPolicy(t)
	p.Backend = backend.Landlock
	home := opts.Home
	cfg := filepath.Join(home, ".config", "cordon")
	p.Guarded = []string{cfg, filepath.Join(home, ".local", "bin")}
	p.DenyWrite = append(slices.Clone(p.Guarded), filepath.Join(p.Workspace, "vendor"))
	for _, w := range []string{filepath.Join(home, ".config"), home, filepath.Join(home, ".local")} {
		q := *p
		q.Write = append(slices.Clone(p.Write), w)
		if _, err := Build(&q, []string{"true"}, opts); err == nil || !strings.Contains(err.Error(), "cannot keep") {
			t.Errorf("write %s: err = %v, want a refusal", w, err)
		}
	}
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	vendor := filepath.Join(p.Workspace, "vendor")
	if strings.Contains(strings.Join(pl.Degraded, "\n"), vendor) || pl.Supervise.Allow(filepath.Join(vendor, "x.go"), monitor.AccessWrite) {
		t.Errorf("the writable deny_write path is declared (%q) or not refused by the supervisor", pl.Degraded)
	}
}

// TestAbsentDeniedDotDotName: an absent denied path in a writable root
// whose first component merely starts with ".." ("..cache") lies inside the
// root and is kept absent like any other; the root-relative test once read
// it as outside ("../") and planned nothing.
func TestAbsentDeniedDotDotName(t *testing.T) {
	p, opts := testPolicy(t)
	ws := p.Workspace
	p.Deny = append(p.Deny, filepath.Join(ws, "..cache", "token"))
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if w := []string{"--ro-bind", filepath.Join(opts.StateDir, emptyDir), filepath.Join(ws, "..cache")}; !hasSeq(pl.Argv, w...) {
		t.Errorf("argv lacks %q:\n%s", w, strings.Join(pl.Argv, " "))
	}
}
