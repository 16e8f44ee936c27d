package gitconfig

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/parallel"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gitIn runs git in dir with env and returns its output.
func gitIn(t *testing.T, git, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(git, append([]string{"-C", dir}, args...)...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %q: %v\n%s%s", args, err, out, stderr.String())
	}
	return string(out)
}

// TestLocateAsGit: for a repository whose system, global and own config
// include further files (relative, ~/, includeIf, a chain of includes),
// Locate lists the files git reads in git's order (git config
// --list --show-origin --includes), and the hooks directory git uses (git
// rev-parse --git-path hooks) for a relative, a ~/ and an absolute
// core.hooksPath; for a linked worktree and a submodule too.
func TestLocateAsGit(t *testing.T) {
	git := requireGit(t)
	root := t.TempDir()
	home := filepath.Join(root, "home")
	ws := filepath.Join(root, "ws")
	sys := filepath.Join(root, "etc", "gitconfig")
	env := Env{Home: home, ConfigSystem: sys}
	genv := []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "GIT_CONFIG_SYSTEM=" + sys, "LC_ALL=C",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	write(t, sys, "[include]\n\tpath = sys.inc\n")
	write(t, filepath.Join(root, "etc", "sys.inc"), "[x]\n\ty = 1\n")
	write(t, filepath.Join(home, ".config", "git", "config"), "[x]\n\txdg = 1\n")
	write(t, filepath.Join(home, ".gitconfig"), "[include]\n\tpath = ~/inc/a\n")
	write(t, filepath.Join(home, "inc", "a"), "[include]\n\tpath = b\n[x]\n\ta = 1\n")
	write(t, filepath.Join(home, "inc", "b"), "[x]\n\tb = 1\n")
	gitIn(t, git, root, genv, "init", "-q", ws)
	gitIn(t, git, ws, genv, "commit", "-q", "--allow-empty", "-m", "m")
	cfg := filepath.Join(ws, ".git", "config")
	data, _ := os.ReadFile(cfg)
	write(t, cfg, string(data)+"[include]\n\tpath = ../.gitconfig-local\n[includeIf \"gitdir:"+ws+"/\"]\n\tpath = "+filepath.Join(ws, "cond.inc")+"\n")
	write(t, filepath.Join(ws, ".gitconfig-local"), "[x]\n\tlocal = 1\n")
	write(t, filepath.Join(ws, "cond.inc"), "[x]\n\tcond = 1\n")

	origins := func(dir string) []string {
		var files []string
		for _, l := range strings.Split(gitIn(t, git, dir, genv, "config", "--list", "--show-origin", "--includes", "-z"), "\x00") {
			f, ok := strings.CutPrefix(l, "file:")
			if !ok {
				continue
			}
			if !filepath.IsAbs(f) {
				f = filepath.Join(dir, f) // git names them from its directory
			}
			if f = filepath.Clean(f); !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
		return files
	}
	existing := func(fs []string) []string {
		var out []string
		for _, f := range fs {
			if _, err := os.Stat(f); err == nil {
				out = append(out, f)
			}
		}
		return out
	}
	hooks := func(dir string) string {
		h := strings.TrimSpace(gitIn(t, git, dir, genv, "rev-parse", "--git-path", "hooks"))
		if !filepath.IsAbs(h) {
			h = filepath.Join(dir, h)
		}
		return filepath.Clean(h)
	}
	check := func(name string, r Repo, dir string) {
		t.Helper()
		l := Locate(r, env)
		if got, want := existing(l.Configs), origins(dir); !slices.Equal(got, want) {
			t.Errorf("%s: config files\n got %q\nwant %q (git)", name, got, want)
		}
		if got, want := l.HooksDir, hooks(dir); got != want {
			t.Errorf("%s: hooks directory %q, git's %q", name, got, want)
		}
	}
	top := RepoAt(filepath.Join(ws, ".git"))
	if top.WorkTree != ws || top.CommonDir != "" {
		t.Fatalf("RepoAt: %+v", top)
	}
	check("no hooksPath", top, ws)
	for _, hp := range []string{".githooks", ".husky/_", "~/hooks", filepath.Join(root, "abs-hooks")} {
		gitIn(t, git, ws, genv, "config", "--file", filepath.Join(ws, ".gitconfig-local"), "core.hooksPath", hp)
		check("hooksPath "+hp, top, ws)
	}
	l := Locate(top, env)
	if !slices.Contains(l.Included, filepath.Join(ws, ".gitconfig-local")) || !slices.Contains(l.Included, filepath.Join(home, "inc", "b")) || slices.Contains(l.Included, cfg) {
		t.Errorf("Included: %q", l.Included)
	}

	// A linked worktree: its own git directory, the common config.
	wt := filepath.Join(root, "wt")
	gitIn(t, git, ws, genv, "worktree", "add", "-q", wt)
	r, ok := RepoOfGitlink(filepath.Join(wt, ".git"))
	if !ok || r.WorkTree != wt || r.CommonDir != filepath.Join(ws, ".git") {
		t.Fatalf("RepoOfGitlink(worktree): %+v %v", r, ok)
	}
	if a := RepoAt(r.GitDir); a != r {
		t.Errorf("RepoAt(%s) = %+v, RepoOfGitlink %+v", r.GitDir, a, r)
	}
	check("linked worktree", r, wt)

	// A submodule: its git directory under .git/modules names its work
	// tree with core.worktree.
	sub := filepath.Join(root, "sub")
	gitIn(t, git, root, genv, "init", "-q", sub)
	gitIn(t, git, sub, genv, "commit", "-q", "--allow-empty", "-m", "m")
	gitIn(t, git, ws, genv, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "mod")
	m := RepoAt(filepath.Join(ws, ".git", "modules", "mod"))
	if m.WorkTree != filepath.Join(ws, "mod") {
		t.Fatalf("RepoAt(submodule): %+v", m)
	}
	check("submodule", m, filepath.Join(ws, "mod"))
}

// TestLocate: what Locate finds where git would not tell (an includeIf
// whose condition is false counts), and what it does not follow.
func TestLocate(t *testing.T) {
	root := t.TempDir()
	g := filepath.Join(root, "r", ".git")
	tests := []struct {
		name, config string
		env          Env
		hooks        string
		included     []string
	}{
		{"default hooks", "[core]\n\tbare = false\n", Env{}, filepath.Join(g, "hooks"), nil},
		{"last hooksPath wins", "[core]\n\thooksPath = a\n\thooksPath = b\n", Env{}, filepath.Join(root, "r", "b"), nil},
		{"includeIf whatever its condition", "[includeIf \"onbranch:nope\"]\n\tpath = x\n[includeIf \"gitdir:/nowhere/\"]\n\tpath = /abs/y\n", Env{},
			filepath.Join(g, "hooks"), []string{filepath.Join(g, "x"), "/abs/y"}},
		{"~ without a home, ~user and %(prefix) are not followed", "[include]\n\tpath = ~/a\n\tpath = ~bob/b\n\tpath = %(prefix)/c\n", Env{}, filepath.Join(g, "hooks"), nil},
		{"~ with a home", "[include]\n\tpath = ~/a\n[core]\n\thooksPath = ~/h\n", Env{Home: "/h"}, "/h/h", []string{"/h/a"}},
		{"missing include listed", "[include]\n\tpath = ../.gitconfig-local\n", Env{}, filepath.Join(g, "hooks"), []string{filepath.Join(root, "r", ".gitconfig-local")}},
		{"a directory is no config file", "[include]\n\tpath = ..\n\tpath = .\n", Env{}, filepath.Join(g, "hooks"), nil},
		{"the global and system files the environment names", "", Env{Home: "/h", ConfigGlobal: filepath.Join(root, "dot", "gitconfig"), ConfigSystem: filepath.Join(root, "sys")},
			filepath.Join(g, "hooks"), []string{filepath.Join(root, "sys"), filepath.Join(root, "dot", "gitconfig")}},
		{"a device is no config file", "", Env{ConfigGlobal: "/dev/null", NoSystem: true}, filepath.Join(g, "hooks"), nil},
		{"bad file still read up to its bad line", "[core]\n\thooksPath = h\n[broken\n", Env{}, filepath.Join(root, "r", "h"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			write(t, filepath.Join(g, "config"), tt.config)
			l := Locate(RepoAt(g), tt.env)
			if l.HooksDir != tt.hooks || !slices.Equal(l.Included, tt.included) {
				t.Errorf("Locate: hooks %q included %q; want %q %q", l.HooksDir, l.Included, tt.hooks, tt.included)
			}
		})
	}
	// Includes stop at git's depth.
	write(t, filepath.Join(g, "config"), "[include]\n\tpath = i0\n")
	for i := range 15 {
		write(t, filepath.Join(g, "i"+strconv.Itoa(i)), "[include]\n\tpath = i"+strconv.Itoa(i+1)+"\n")
	}
	if l := Locate(RepoAt(g), Env{}); len(l.Included) != MaxIncludeDepth {
		t.Errorf("%d includes followed, want %d: %q", len(l.Included), MaxIncludeDepth, l.Included)
	}
	// A bare repository: a relative hooksPath is taken from the git
	// directory.
	b := filepath.Join(root, "bare.git")
	write(t, filepath.Join(b, "config"), "[core]\n\tbare = true\n\thooksPath = h\n")
	if l := Locate(RepoAt(b), Env{}); l.HooksDir != filepath.Join(b, "h") {
		t.Errorf("bare: %q", l.HooksDir)
	}
}

// TestLocateCommandScope: a core.hooksPath and an include given in the
// environment (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n, GIT_CONFIG_VALUE_n)
// are where git looks, after every file, as git rev-parse and git config
// --show-origin say; a relative include there is refused by git and not
// followed.
func TestLocateCommandScope(t *testing.T) {
	git := requireGit(t)
	root := t.TempDir()
	home := filepath.Join(root, "home")
	ws := filepath.Join(root, "ws")
	vars := map[string]string{"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_COUNT": "3",
		"GIT_CONFIG_KEY_0": "core.hooksPath", "GIT_CONFIG_VALUE_0": filepath.Join(ws, "env-hooks"),
		"GIT_CONFIG_KEY_1": "includeIf.onbranch:main.path", "GIT_CONFIG_VALUE_1": filepath.Join(ws, "env.inc"),
		"GIT_CONFIG_KEY_2": "x.y", "GIT_CONFIG_VALUE_2": "1"}
	genv := []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}
	for k, v := range vars {
		genv = append(genv, k+"="+v)
	}
	write(t, filepath.Join(home, ".gitconfig"), "[core]\n\thooksPath = ~/global-hooks\n")
	gitIn(t, git, root, genv, "init", "-q", "-b", "main", ws)
	write(t, filepath.Join(ws, "env.inc"), "[x]\n\tz = 1\n")
	env := EnvFrom(home, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	l := Locate(RepoAt(filepath.Join(ws, ".git")), env)
	hooks := strings.TrimSpace(gitIn(t, git, ws, genv, "rev-parse", "--git-path", "hooks"))
	if l.HooksDir != hooks || !l.HooksPath {
		t.Errorf("hooks directory %q (%v), git's %q", l.HooksDir, l.HooksPath, hooks)
	}
	if origins := gitIn(t, git, ws, genv, "config", "--list", "--show-origin", "--includes"); !strings.Contains(origins, "file:"+filepath.Join(ws, "env.inc")) {
		t.Fatalf("git did not read the include: %s", origins)
	}
	if !slices.Equal(l.Included, []string{filepath.Join(ws, "env.inc")}) {
		t.Errorf("Included %q, want the command scope's include", l.Included)
	}
	vars["GIT_CONFIG_VALUE_1"] = "rel.inc"
	if l := Locate(RepoAt(filepath.Join(ws, ".git")), EnvFrom(home, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })); len(l.Included) != 0 {
		t.Errorf("a relative include in the command scope followed: %q", l.Included)
	}
}

// TestLocateFoundMany: LocateFound of more repositories than parallel.From
// (read by two goroutines) gives each its own hooks directory and
// includes, in the order of its git directories, and lists the global
// config, which every one includes, for each (go test -race sees them
// share it).
func TestLocateFoundMany(t *testing.T) {
	root := t.TempDir()
	global := filepath.Join(root, "home", ".gitconfig")
	write(t, global, "[include]\n\tpath = ~/shared\n")
	env := Env{Home: filepath.Join(root, "home"), NoSystem: true}
	var dirs []string
	for i := range parallel.From + 9 {
		g := filepath.Join(root, "r"+strconv.Itoa(i), ".git")
		write(t, filepath.Join(g, "config"), "[core]\n\thooksPath = hooks-"+strconv.Itoa(i)+"\n[include]\n\tpath = own-"+strconv.Itoa(i)+"\n")
		dirs = append(dirs, g)
	}
	repos, locs := LocateFound(nil, dirs, nil, env)
	if len(repos) != len(dirs) || len(locs) != len(dirs) {
		t.Fatalf("%d repositories and %d locations for %d git directories", len(repos), len(locs), len(dirs))
	}
	for i, g := range dirs {
		wt := filepath.Dir(g)
		want := []string{filepath.Join(root, "home", "shared"), filepath.Join(g, "own-"+strconv.Itoa(i))}
		if repos[i].GitDir != g || locs[i].HooksDir != filepath.Join(wt, "hooks-"+strconv.Itoa(i)) || !slices.Equal(locs[i].Included, want) || !slices.Contains(locs[i].Configs, global) {
			t.Errorf("repository %d: %+v %+v; want git dir %s, hooks %s, included %q", i, repos[i], locs[i], g, filepath.Join(wt, "hooks-"+strconv.Itoa(i)), want)
		}
	}
}
