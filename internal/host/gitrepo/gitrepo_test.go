//go:build unix

package gitrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// fixture is a directory of real repositories made by the host's git: a
// repository proj with a sub-directory, a linked worktree and a
// submodule, another repository, and a --separate-git-dir one.
type fixture struct {
	t    *testing.T
	root string
	env  []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testenv.SkipOrFail(t, "git is missing")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, root: root, env: []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "LANG=C",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
	}}
	f.write("lib/l.txt", "lib\n")
	f.git("lib", "init", "-q")
	f.git("lib", "add", ".")
	f.git("lib", "commit", "-qm", "lib")
	f.write("proj/mono/svc/s.txt", "s\n")
	f.git("proj", "init", "-q")
	f.git("proj", "add", ".")
	f.git("proj", "commit", "-qm", "one")
	f.git("proj", "-c", "protocol.file.allow=always", "submodule", "add", "-q", filepath.Join(root, "lib"), "sub/lib")
	f.git("proj", "commit", "-qm", "sub")
	f.git("proj", "worktree", "add", "-q", filepath.Join(root, "wt"))
	f.write("other/o.txt", "o\n")
	f.git("other", "init", "-q")
	if err := os.MkdirAll(filepath.Join(root, "sep"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.git("sep", "init", "-q", "--separate-git-dir", filepath.Join(root, "sep.git"))
	return f
}

func (f *fixture) path(rel string) string { return filepath.Join(f.root, rel) }

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := f.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) git(dir string, args ...string) {
	f.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = f.path(dir)
	cmd.Env = f.env
	if out, err := cmd.CombinedOutput(); err != nil {
		f.t.Fatalf("git %q in %s: %v\n%s", args, dir, err, out)
	}
}

// TestFind: what Find returns for each layout git makes, and for .git
// files and links that name something else.
func TestFind(t *testing.T) {
	f := newFixture(t)
	p := f.path
	tests := []struct {
		name    string
		setup   func() // changes made before Find
		dir     string
		want    *Repo
		wantErr string
		wantWhy string // in Unlinked
	}{
		{name: "top of a repository", dir: "proj",
			want: &Repo{Top: p("proj"), DotGit: p("proj/.git"), GitDir: p("proj/.git"), CommonDir: p("proj/.git"), Link: LinkDir}},
		{name: "sub-directory", dir: "proj/mono/svc",
			want: &Repo{Top: p("proj"), DotGit: p("proj/.git"), GitDir: p("proj/.git"), CommonDir: p("proj/.git"), Link: LinkDir}},
		{name: "linked worktree", dir: "wt",
			want: &Repo{Top: p("wt"), DotGit: p("wt/.git"), Gitfile: true, GitDir: p("proj/.git/worktrees/wt"), CommonDir: p("proj/.git"), Link: LinkWorktree}},
		{name: "sub-directory of a linked worktree", dir: "wt/mono/svc",
			want: &Repo{Top: p("wt"), DotGit: p("wt/.git"), Gitfile: true, GitDir: p("proj/.git/worktrees/wt"), CommonDir: p("proj/.git"), Link: LinkWorktree}},
		{name: "submodule checkout", dir: "proj/sub/lib",
			want: &Repo{Top: p("proj/sub/lib"), DotGit: p("proj/sub/lib/.git"), Gitfile: true, GitDir: p("proj/.git/modules/sub/lib"), CommonDir: p("proj/.git/modules/sub/lib"), Link: LinkSubmodule}},
		{name: "separate git dir names nothing back", dir: "sep",
			want:    &Repo{Top: p("sep"), DotGit: p("sep/.git"), Gitfile: true, GitDir: p("sep.git"), CommonDir: p("sep.git"), Link: LinkNone},
			wantWhy: "names no work tree"},
		{name: "no repository", dir: "lib/..", setup: func() {}, want: nil},
		{name: "empty .git directory passed over", dir: "proj/mono",
			setup: func() { mustMkdir(t, p("proj/mono/.git")) },
			want:  &Repo{Top: p("proj"), DotGit: p("proj/.git"), GitDir: p("proj/.git"), CommonDir: p("proj/.git"), Link: LinkDir}},
		{name: "FIFO .git passed over", dir: "proj/mono/svc",
			setup: func() {
				if err := syscall.Mkfifo(p("proj/mono/svc/.git"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: &Repo{Top: p("proj"), DotGit: p("proj/.git"), GitDir: p("proj/.git"), CommonDir: p("proj/.git"), Link: LinkDir}},
		{name: "planted .git naming a secrets directory", dir: "x1",
			setup: func() {
				f.write("secrets/id_rsa", "KEY\n")
				f.write("x1/.git", "gitdir: "+p("secrets")+"\n")
			},
			wantErr: "which is not a git directory"},
		{name: "planted .git naming a file", dir: "x2",
			setup:   func() { f.write("x2/.git", "gitdir: ../secrets/id_rsa\n") },
			wantErr: "cannot be opened as a directory"},
		{name: "planted .git naming another repository", dir: "x3",
			setup: func() { f.write("x3/.git", "gitdir: "+p("other/.git")+"\n") },
			want:  &Repo{Top: p("x3"), DotGit: p("x3/.git"), Gitfile: true, GitDir: p("other/.git"), CommonDir: p("other/.git"), Link: LinkNone}, wantWhy: "names no work tree"},
		{name: "planted .git naming another worktree's git directory", dir: "x4",
			setup: func() { f.write("x4/.git", "gitdir: ../proj/.git/worktrees/wt\n") },
			want:  &Repo{Top: p("x4"), DotGit: p("x4/.git"), Gitfile: true, GitDir: p("proj/.git/worktrees/wt"), CommonDir: p("proj/.git"), Link: LinkNone}, wantWhy: "gitdir names"},
		{name: "planted .git naming a submodule's git directory", dir: "x5",
			setup: func() { f.write("x5/.git", "gitdir: ../proj/.git/modules/sub/lib\n") },
			want:  &Repo{Top: p("x5"), DotGit: p("x5/.git"), Gitfile: true, GitDir: p("proj/.git/modules/sub/lib"), CommonDir: p("proj/.git/modules/sub/lib"), Link: LinkNone}, wantWhy: "core.worktree"},
		{name: "symbolic link .git", dir: "x6",
			setup: func() {
				mustMkdir(t, p("x6"))
				if err := os.Symlink(p("other/.git"), p("x6/.git")); err != nil {
					t.Fatal(err)
				}
			},
			want: &Repo{Top: p("x6"), DotGit: p("x6/.git"), Gitfile: true, GitDir: p("other/.git"), CommonDir: p("other/.git"), Link: LinkNone}, wantWhy: "symbolic link"},
		{name: "symbolic link .git to a file", dir: "x7",
			setup: func() {
				mustMkdir(t, p("x7"))
				if err := os.Symlink(p("secrets/id_rsa"), p("x7/.git")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "symbolic link to a file"},
		{name: "not a gitfile", dir: "x8",
			setup:   func() { f.write("x8/.git", "KEY-CONTENT\n") },
			wantErr: "is not a gitfile"},
		{name: "oversized gitfile", dir: "x9",
			setup:   func() { f.write("x9/.git", "gitdir: "+strings.Repeat("a", MaxSmallFile)) },
			wantErr: "larger than"},
		{name: "commondir naming no object store", dir: "x10",
			setup: func() {
				f.write("g10/HEAD", "ref: refs/heads/main\n")
				f.write("g10/commondir", "../secrets\n")
				f.write("x10/.git", "gitdir: ../g10\n")
			},
			wantErr: "has no objects/"},
		{name: "worktree with relative gitdir", dir: "wt2",
			setup: func() {
				f.git("proj", "worktree", "add", "-q", p("wt2"))
				f.write("proj/.git/worktrees/wt2/gitdir", "../../../../wt2/.git\n")
			},
			want: &Repo{Top: p("wt2"), DotGit: p("wt2/.git"), Gitfile: true, GitDir: p("proj/.git/worktrees/wt2"), CommonDir: p("proj/.git"), Link: LinkWorktree}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			dir := filepath.Clean(p(tc.dir))
			got, err := Find(dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Find(%s) = %+v, %v; want error containing %q", tc.dir, got, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "KEY") {
					t.Errorf("the error quotes a file's content: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Find(%s): %v", tc.dir, err)
			}
			if got != nil && tc.want != nil {
				if tc.wantWhy != "" && !strings.Contains(got.Unlinked, tc.wantWhy) {
					t.Errorf("Unlinked = %q, want it to contain %q", got.Unlinked, tc.wantWhy)
				}
				got.Unlinked, got.viaLink = "", false
			}
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("Find(%s) =\n %+v\nwant\n %+v", tc.dir, got, tc.want)
			}
		})
	}
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}
