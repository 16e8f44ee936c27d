//go:build unix

package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testenv"
	"github.com/cordon-sandbox/cordon/policy"
)

// needGit returns the path of git, skipping the test when it is missing
// unless CI=true, where a missing git fails it.
func needGit(t *testing.T) string {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		testenv.SkipOrFail(t, "git not found: the .gitignore semantics are checked against git itself")
	}
	return git
}

// gitUnignored runs git in dir, configured only by the test (no system or
// global configuration, no global excludes file), and returns the
// untracked files it does not ignore under path, relative to dir, sorted.
func gitUnignored(t *testing.T, git, dir, home, path string) []string {
	t.Helper()
	cmd := exec.Command(git, "ls-files", "--others", "--exclude-standard", "-z", "--", path)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", dir, err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return files
}

// nonDirs keeps the paths (relative to ws) that are not directories, as
// git ls-files lists them.
func nonDirs(t *testing.T, ws string, paths []string) []string {
	t.Helper()
	var out []string
	for _, p := range paths {
		fi, err := os.Lstat(filepath.Join(ws, p))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// ignoreTree is a work tree with .gitignore files at several depths; every
// file holds "needle". The comments say what git decides.
var ignoreTree = map[string]string{
	".gitignore":            "# comment\n*.log\n/build/\nout/\n!keep.log\ndocs/*.tmp\n**/cache/**\n\\#hash\nsecret-*\n",
	"a.go":                  "", // kept
	"x.log":                 "", // *.log
	"keep.log":              "", // !keep.log
	"#hash":                 "", // \#hash
	"build/b.go":            "", // /build/
	"src/build/c.go":        "", // kept: /build/ is anchored to the top
	"src/out/d.go":          "", // out/ at any depth
	"src/out.go":            "", // kept
	"src/x/out":             "", // kept: out/ names directories only
	"docs/a.tmp":            "", // docs/*.tmp
	"docs/sub/b.tmp":        "", // kept: * does not match /
	"x/cache/y.txt":         "", // **/cache/**
	"sub/.gitignore":        "*.tmp\n!special.log\n/gen/\nsecret-*\n!secret-ok\n",
	"sub/t.tmp":             "", // sub: *.tmp
	"sub/special.log":       "", // kept: sub's !special.log overrides the top's *.log
	"sub/other.log":         "", // top: *.log
	"sub/gen/g.go":          "", // sub: /gen/, anchored to sub
	"sub/x/gen/g.go":        "", // kept
	"sub/secret-ok":         "", // kept: sub's !secret-ok
	"sub/secret-no":         "", // secret-*
	"sub/deeper/.gitignore": "!*.tmp\n",
	"sub/deeper/k.tmp":      "", // kept: deeper's !*.tmp
	"sub/deeper/z.log":      "", // top: *.log
	"link/f.txt":            "", // kept: link/.gitignore is a symbolic link, not read
}

// TestGitignoreAsGit: Find and Grep leave out what git ignores (nested
// .gitignore files, negation, anchored and directory-only patterns, "**"),
// from the top and from a directory below it (whose ancestors' .gitignore
// files apply), and IncludeIgnored brings everything back. git itself is the
// oracle.
func TestGitignoreAsGit(t *testing.T) {
	git := needGit(t)
	base, err := filepath.EvalSymlinks(tempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	ws := filepath.Join(home, "proj")
	mustMkdir(t, ws)
	cmd := exec.Command(git, "init", "-q", ws)
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	for p, c := range ignoreTree {
		mustMkdir(t, filepath.Dir(filepath.Join(ws, p)))
		if c == "" {
			c = "needle\n"
		}
		mustWrite(t, filepath.Join(ws, p), c)
	}
	mustWrite(t, filepath.Join(base, "ignore-all"), "*\n")
	if err := os.Symlink(filepath.Join(base, "ignore-all"), filepath.Join(ws, "link", ".gitignore")); err != nil {
		t.Fatal(err)
	}
	fsys := newFS(t, ws, policy.ModeStandard)

	for _, dir := range []string{".", "sub", "sub/deeper", "src", "docs"} {
		t.Run(dir, func(t *testing.T) {
			want := gitUnignored(t, git, ws, home, dir)
			fr, err := fsys.Find(dir, "**", FindOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := nonDirs(t, ws, fr.Paths); !slices.Equal(got, want) {
				t.Errorf("Find(%q): files\n  %q\ngit ls-files --others --exclude-standard:\n  %q", dir, got, want)
			}
			if fr.Ignored == 0 {
				t.Errorf("Find(%q): Ignored = 0", dir)
			}
			gr, err := fsys.Grep("needle", dir, GrepOptions{Literal: true})
			if err != nil {
				t.Fatal(err)
			}
			var matched []string
			for _, m := range gr.Matches {
				matched = append(matched, m.Path)
			}
			slices.Sort(matched)
			var wantMatched []string
			for _, p := range want {
				if !strings.HasSuffix(p, ".gitignore") {
					wantMatched = append(wantMatched, p)
				}
			}
			if !slices.Equal(matched, wantMatched) {
				t.Errorf("Grep in %q: files\n  %q\nwant\n  %q", dir, matched, wantMatched)
			}
			if gr.Ignored != fr.Ignored {
				t.Errorf("Grep in %q: Ignored = %d, Find's %d", dir, gr.Ignored, fr.Ignored)
			}

			all, err := fsys.Find(dir, "**", FindOptions{IncludeIgnored: true})
			if err != nil {
				t.Fatal(err)
			}
			var every []string
			for p := range ignoreTree {
				if dir == "." || strings.HasPrefix(p, dir+"/") {
					every = append(every, p)
				}
			}
			if dir == "." {
				every = append(every, "link/.gitignore")
			}
			slices.Sort(every)
			if got := nonDirs(t, ws, all.Paths); !slices.Equal(got, every) || all.Ignored != 0 {
				t.Errorf("Find(%q) with IncludeIgnored: %q (%d ignored), want every file %q", dir, got, all.Ignored, every)
			}
			ga, err := fsys.Grep("needle", dir, GrepOptions{Literal: true, IncludeIgnored: true})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(ga.Matches); n != len(every)-strings.Count(strings.Join(every, "\n"), ".gitignore") {
				t.Errorf("Grep in %q with IncludeIgnored: %d matches, want one per file but the .gitignore files", dir, n)
			}
		})
	}
}

// TestGitignoreNestedRepository: a directory holding .git starts a work tree
// of its own, where only its own .gitignore files apply (as git does in
// that repository), also when the search starts inside it.
func TestGitignoreNestedRepository(t *testing.T) {
	git := needGit(t)
	base, err := filepath.EvalSymlinks(tempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	ws := filepath.Join(home, "proj")
	inner := filepath.Join(ws, "inner")
	for _, d := range []string{ws, inner} {
		mustMkdir(t, d)
		cmd := exec.Command(git, "init", "-q", d)
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
	}
	for p, c := range map[string]string{
		".gitignore":       "*.txt\n",
		"top.txt":          "needle\n",
		"top.go":           "needle\n",
		"inner/.gitignore": "*.go\n",
		"inner/a.txt":      "needle\n",
		"inner/b.go":       "needle\n",
		"inner/d/c.txt":    "needle\n",
	} {
		mustMkdir(t, filepath.Dir(filepath.Join(ws, p)))
		mustWrite(t, filepath.Join(ws, p), c)
	}
	fsys := newFS(t, ws, policy.ModeStandard)
	for _, dir := range []string{"inner", "inner/d"} {
		rel := strings.TrimPrefix(strings.TrimPrefix(dir, "inner"), "/")
		if rel == "" {
			rel = "."
		}
		want := gitUnignored(t, git, inner, home, rel)
		for i := range want {
			want[i] = "inner/" + want[i]
		}
		fr, err := fsys.Find(dir, "**", FindOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := nonDirs(t, ws, fr.Paths); !slices.Equal(got, want) {
			t.Errorf("Find(%q): %q, want what git in inner keeps: %q", dir, got, want)
		}
	}
	fr, err := fsys.Find("", "**", FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(nonDirs(t, ws, fr.Paths), ","); got != ".gitignore,inner/.gitignore,inner/a.txt,inner/d/c.txt,top.go" {
		t.Errorf("Find from the top: %s", got)
	}
}
