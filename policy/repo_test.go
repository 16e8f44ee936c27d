package policy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// gitFixture is a fake host (see fixture) whose home holds real
// repositories made by the host's git: src/proj with a sub-directory
// mono/svc, a linked worktree src/proj-wt, a submodule sub/lib, and
// another repository src/other.
type gitFixture struct {
	*fixture
	src string
}

func newGitFixture(t *testing.T) *gitFixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testenv.SkipOrFail(t, "git is missing")
	}
	g := &gitFixture{fixture: newFixture(t)}
	g.src = filepath.Join(g.home, "src")
	g.write(filepath.Join(g.src, "lib", "l.txt"), "l\n")
	g.git("lib", "init", "-q")
	g.git("lib", "add", ".")
	g.git("lib", "commit", "-qm", "lib")
	g.write(filepath.Join(g.src, "proj", "mono", "svc", "s.txt"), "s\n")
	g.git("proj", "init", "-q")
	g.git("proj", "add", ".")
	g.git("proj", "commit", "-qm", "one")
	g.git("proj", "-c", "protocol.file.allow=always", "submodule", "add", "-q", filepath.Join(g.src, "lib"), "sub/lib")
	g.git("proj", "commit", "-qm", "sub")
	g.git("proj", "worktree", "add", "-q", filepath.Join(g.src, "proj-wt"))
	g.write(filepath.Join(g.src, "other", "o.txt"), "o\n")
	g.git("other", "init", "-q")
	return g
}

func (g *gitFixture) git(dir string, args ...string) {
	g.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = filepath.Join(g.src, dir)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + g.home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	if out, err := cmd.CombinedOutput(); err != nil {
		g.t.Fatalf("git %q in %s: %v\n%s", args, dir, err, out)
	}
}

// TestRepoGrant: what the policy adds for a workspace that is not the top
// of its repository, with the workspace's own access, and what it
// refuses.
func TestRepoGrant(t *testing.T) {
	g := newGitFixture(t)
	s := func(rel string) string { return filepath.Join(g.src, rel) }
	g.write(s("planted/.git"), "gitdir: "+s("other/.git")+"\n")
	g.write(s("tossh/.git"), "gitdir: "+filepath.Join(g.home, ".ssh")+"\n")
	g.write(filepath.Join(g.home, ".ssh", "id_rsa"), "KEY\n")
	tests := []struct {
		name      string
		ws        string
		flags     *config.Layer
		kind      string
		read      []string
		write     []string
		refused   string
		nilRepo   bool
		commonDir string
	}{
		{name: "top of a repository", ws: "proj", nilRepo: true},
		{name: "sub-directory", ws: "proj/mono/svc", kind: "sub-directory",
			read: []string{s("proj")}, write: []string{s("proj/.git")}},
		{name: "sub-directory, read-only workspace", ws: "proj/mono/svc", flags: &config.Layer{Profile: ptr(ProfileMinimal)},
			kind: "sub-directory", read: []string{s("proj")}},
		{name: "linked worktree", ws: "proj-wt", kind: "linked worktree",
			write: []string{s("proj/.git")}, commonDir: s("proj/.git")},
		{name: "linked worktree, read-only workspace", ws: "proj-wt", flags: &config.Layer{Profile: ptr(ProfileMinimal)},
			kind: "linked worktree", read: []string{s("proj/.git")}, commonDir: s("proj/.git")},
		{name: "sub-directory of a linked worktree", ws: "proj-wt/mono", kind: "sub-directory of a linked worktree",
			read: []string{s("proj-wt")}, write: []string{s("proj/.git")}, commonDir: s("proj/.git")},
		{name: "submodule checkout", ws: "proj/sub/lib", kind: "submodule checkout",
			write: []string{s("proj/.git/modules/sub/lib")}},
		{name: "planted .git naming another repository", ws: "planted", refused: "does not name it back"},
		{name: "planted .git naming a denied directory", ws: "tossh", refused: "not a git directory"},
		{name: "git directory denied", ws: "proj-wt", flags: &config.Layer{Filesystem: config.Filesystem{Deny: []string{s("proj/.git")}}},
			refused: "which the policy denies"},
		{name: "work tree denied", ws: "proj/mono/svc", flags: &config.Layer{Filesystem: config.Filesystem{Deny: []string{s("proj/.git")}}},
			refused: "which the policy denies"},
		{name: "mode off", ws: "proj/mono/svc", flags: &config.Layer{Mode: ptr(string(ModeOff))}, nilRepo: true},
		{name: "already writable", ws: "proj-wt", flags: &config.Layer{Filesystem: config.Filesystem{Write: []string{s("proj")}}}, nilRepo: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := g.load(Options{Workspace: s(tc.ws), Flags: tc.flags, SkipUserConfig: true})
			if err != nil {
				t.Fatal(err)
			}
			r := p.Repo
			if tc.nilRepo {
				if r != nil {
					t.Fatalf("Repo = %+v, want nil", r)
				}
				return
			}
			if r == nil {
				t.Fatal("Repo = nil")
			}
			if tc.refused != "" {
				if !strings.Contains(r.Refused, tc.refused) || len(r.Read)+len(r.Write) > 0 {
					t.Errorf("Repo = %+v, want refused with %q and nothing added", r, tc.refused)
				}
				if strings.Contains(r.Refused, "KEY") {
					t.Errorf("the refusal quotes a file: %s", r.Refused)
				}
				for _, x := range slices.Concat(p.Read, p.Write) {
					if strings.HasPrefix(x, g.src) && x != s(tc.ws) {
						t.Errorf("a refused repository still added %s", x)
					}
				}
				return
			}
			if r.Refused != "" || r.Kind != tc.kind || !slices.Equal(r.Read, tc.read) || !slices.Equal(r.Write, tc.write) || r.CommonDir != tc.commonDir {
				t.Errorf("Repo = %+v\nwant kind %q read %q write %q common %q", r, tc.kind, tc.read, tc.write, tc.commonDir)
			}
			for _, x := range r.Read {
				if !slices.Contains(p.Read, x) {
					t.Errorf("%s is not in the policy's read paths %q", x, p.Read)
				}
			}
			for _, x := range r.Write {
				if !slices.Contains(p.Write, x) {
					t.Errorf("%s is not in the policy's write paths %q", x, p.Write)
				}
			}
			for _, x := range slices.Concat(r.Read, r.Write) {
				if !strings.Contains(r.Summary(), x) {
					t.Errorf("Summary() does not name %s: %q", x, r.Summary())
				}
			}
		})
	}
}

// TestRepoGrantRefusesHome: a workspace inside a repository whose work
// tree is the home directory (a dotfiles repository) does not get the
// home directory made readable.
func TestRepoGrantRefusesHome(t *testing.T) {
	g := newGitFixture(t)
	cmd := exec.Command("git", "init", "-q", g.home)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + g.home, "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	ws := filepath.Join(g.home, "notes")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := g.load(Options{Workspace: ws, SkipUserConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Repo == nil || !strings.Contains(p.Repo.Refused, "home directory") {
		t.Fatalf("Repo = %+v, want refused for the home directory", p.Repo)
	}
	if slices.ContainsFunc(slices.Concat(p.Read, p.HostWrites()), func(x string) bool { return Within(g.home, x) }) {
		t.Errorf("the home directory became visible: read %q write %q", p.Read, p.Write)
	}
}

func ptr[T any](v T) *T { return &v }

// TestGitLooksGranted: where git looks for the workspace's repository
// outside every read path (an included config file, a core.hooksPath
// directory, in the home or elsewhere) becomes readable, so that git
// inside reads the configuration and runs the hooks it does outside;
// unless the profile hides the home's git configuration, or the path is
// missing, denied, the home directory, a symbolic link, or already shown.
func TestGitLooksGranted(t *testing.T) {
	g := newGitFixture(t)
	home := func(rel string) string { return filepath.Join(g.home, rel) }
	elsewhere := filepath.Join(filepath.Dir(g.home), "shared-hooks")
	g.write(home(".gitconfig.local"), "[user]\n\temail = t@example.com\n")
	g.write(home(".githooks/pre-commit"), "#!/bin/sh\n")
	g.write(filepath.Join(elsewhere, "pre-commit"), "#!/bin/sh\n")
	g.write(home(".ssh/config"), "Host x\n")
	if err := os.Symlink(home(".gitconfig.local"), home(".gitconfig.link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		config string // ~/.gitconfig
		flags  *config.Layer
		want   []string
	}{
		{name: "include and hooksPath in the home", config: "[include]\n\tpath = ~/.gitconfig.local\n[core]\n\thooksPath = ~/.githooks\n",
			want: []string{home(".githooks"), home(".gitconfig.local")}},
		{name: "hooksPath outside the home", config: "[core]\n\thooksPath = " + elsewhere + "\n", want: []string{elsewhere}},
		{name: "the minimal profile hides the home's git config", config: "[include]\n\tpath = ~/.gitconfig.local\n",
			flags: &config.Layer{Profile: ptr(ProfileMinimal)}},
		{name: "a missing include", config: "[include]\n\tpath = ~/.gitconfig.missing\n"},
		{name: "a denied include", config: "[include]\n\tpath = ~/.ssh/config\n"},
		{name: "hooksPath the home directory", config: "[core]\n\thooksPath = ~\n"},
		{name: "an include through a symbolic link: what it names", config: "[include]\n\tpath = ~/.gitconfig.link\n",
			want: []string{home(".gitconfig.local")}},
		{name: "already shown", config: "[include]\n\tpath = ~/.gitconfig.local\n",
			flags: &config.Layer{Filesystem: config.Filesystem{Read: []string{home(".gitconfig.local")}}}},
		{name: "a denied include by a flag", config: "[include]\n\tpath = ~/.gitconfig.local\n",
			flags: &config.Layer{Filesystem: config.Filesystem{Deny: []string{home(".gitconfig.local")}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g.write(home(".gitconfig"), tc.config)
			p, err := g.load(Options{Workspace: filepath.Join(g.src, "proj"), Flags: tc.flags, SkipUserConfig: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.GitReads, tc.want) {
				t.Errorf("GitReads = %q, want %q", p.GitReads, tc.want)
			}
			for _, x := range tc.want {
				if !slices.Contains(p.Read, x) {
					t.Errorf("%s is not in the read paths %q", x, p.Read)
				}
			}
			if slices.Contains(p.Read, g.home) {
				t.Errorf("the home directory became readable: %q", p.Read)
			}
		})
	}
}
