package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// mkGitDir makes dir a git directory as git recognizes one: HEAD plus
// objects/ (or, with commondir set, a commondir file instead).
func mkGitDir(t *testing.T, dir string, commondir bool) {
	t.Helper()
	mustMkdir(t, dir)
	mustWrite(t, filepath.Join(dir, "HEAD"), "ref: refs/heads/main\n")
	if commondir {
		mustWrite(t, filepath.Join(dir, "commondir"), "../..\n")
		return
	}
	mustMkdir(t, filepath.Join(dir, "objects"))
	mustMkdir(t, filepath.Join(dir, "refs"))
}

// TestProtectedAnyDepth: the protected rules apply at any depth and to
// paths that do not exist yet, the entries of any git directory are
// protected whatever it is called, deny and deny_write paths cannot be
// created, and ordinary files in and around git directories stay writable.
func TestProtectedAnyDepth(t *testing.T) {
	fsys, ws, base := setup(t)
	home := filepath.Join(base, "home")
	mustMkdir(t, filepath.Join(home, ".config"))
	// The home directory as an extra writable root, with the profile's
	// deny_write entries for it.
	deny := []string{filepath.Join(ws, "frozen")}
	for _, h := range policy.HomeProtected {
		deny = append(deny, strings.ReplaceAll(h, "${HOME}", home))
	}
	p := &policy.Policy{Mode: policy.ModeStandard, Workspace: ws, Write: []string{ws, home},
		Deny: []string{"**/.env", "**/.env.*", "**/secrets.*"}, DenyWrite: deny, Protected: policy.Protected}
	fsys.Close()
	fsys, err := New(p, Root{Path: home, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })

	mkGitDir(t, filepath.Join(ws, ".git"), false)
	mustWrite(t, filepath.Join(ws, ".git", "config"), "[core]\n")
	mkGitDir(t, filepath.Join(ws, ".git", "modules", "lib"), false)
	mkGitDir(t, filepath.Join(ws, ".git", "modules", "a", "b"), false)
	mkGitDir(t, filepath.Join(ws, ".git", "worktrees", "w"), true)
	mkGitDir(t, filepath.Join(ws, "sub", ".git"), false)
	mustWrite(t, filepath.Join(ws, "sub", ".git", "config"), "[core]\n")
	mkGitDir(t, filepath.Join(ws, "x.git"), false) // a bare repository
	mustWrite(t, filepath.Join(ws, "x.git", "config"), "[core]\n\tbare = true\n")
	mkGitDir(t, filepath.Join(ws, "x.git", "worktrees", "wt"), true)
	mkGitDir(t, filepath.Join(ws, "sep"), false) // a --separate-git-dir
	mustMkdir(t, filepath.Join(ws, "mod"))
	mustWrite(t, filepath.Join(ws, "mod", ".git"), "gitdir: ../.git/modules/lib\n")
	mustMkdir(t, filepath.Join(ws, "halfgit")) // HEAD but no objects yet
	mustWrite(t, filepath.Join(ws, "halfgit", "HEAD"), "x\n")
	mustMkdir(t, filepath.Join(ws, "cfgfirst")) // config first, HEAD and objects after
	mustWrite(t, filepath.Join(ws, "cfgfirst", "config"), "[alias]\n\tx = !touch pwned\n")
	links := linksWork(t)
	if links {
		mustLink(t, "x.git", filepath.Join(ws, "bare-link"))
	}
	mustMkdir(t, filepath.Join(ws, "src"))

	const (
		write  = "write"
		edit   = "edit"
		lines  = "replace_lines"
		upload = "upload"
		mkdir  = "mkdir"
	)
	refused := []struct {
		op, path string
		kind     Kind
		rule     string
		source   string
	}{
		{write, "sub/.git/config", KindProtected, "**/.git/config", SourceProtected},
		{edit, "sub/.git/config", KindProtected, "**/.git/config", SourceProtected},
		{lines, "sub/.git/config", KindProtected, "**/.git/config", SourceProtected},
		{upload, "sub/.git/config", KindProtected, "**/.git/config", SourceProtected},
		{write, "sub/.git/hooks/pre-commit", KindProtected, "**/.git/hooks/", SourceProtected},
		{mkdir, "sub/.git/hooks", KindProtected, "**/.git/hooks/", SourceProtected},
		{write, "sub/.git/config.worktree", KindProtected, "**/.git/config.worktree", SourceProtected},
		{write, ".git/config", KindProtected, "**/.git/config", SourceProtected},
		{write, ".git/modules/lib/config", KindProtected, "**/.git/modules/**/config", SourceProtected},
		{write, ".git/modules/a/b/hooks/x", KindProtected, "**/.git/modules/**/hooks/", SourceProtected},
		{write, ".git/commondir", KindProtected, "**/.git/commondir", SourceProtected},
		{write, ".git/worktrees/w/commondir", KindProtected, "**/.git/worktrees/*/commondir", SourceProtected},
		{write, ".git/worktrees/w/gitdir", KindProtected, "**/.git/worktrees/*/gitdir", SourceProtected},
		{write, "sub/.envrc", KindProtected, "**/.envrc", SourceProtected},
		{write, "a/b/.vscode/tasks.json", KindProtected, "**/.vscode/", SourceProtected},
		{mkdir, "a/b/.vscode", KindProtected, "**/.vscode/", SourceProtected},
		{write, "deep/er/.mcp.json", KindProtected, "**/.mcp.json", SourceProtected},
		{write, ".cordon.yaml", KindProtected, ".cordon.yaml", SourceProtected},
		{write, "x.git/config", KindProtected, "config", SourceGitDir},
		{edit, "x.git/config", KindProtected, "config", SourceGitDir},
		{write, "x.git/hooks/post-receive", KindProtected, "hooks/", SourceGitDir},
		{mkdir, "x.git/hooks", KindProtected, "hooks/", SourceGitDir},
		{write, "x.git/worktrees/wt/gitdir", KindProtected, "gitdir", SourceGitDir},
		{write, "x.git/commondir", KindProtected, "commondir", SourceGitDir},
		{write, "sep/config.worktree", KindProtected, "config.worktree", SourceGitDir},
		{write, "bare-link/config", KindProtected, "config", SourceGitDir},
		{write, "mod/.git", KindProtected, "**/.git", SourceProtected},
		{write, "new/.git", KindProtected, "**/.git", SourceProtected},
		{mkdir, "new/.git", KindProtected, "**/.git", SourceProtected},
		{mkdir, "new/.git/objects", KindProtected, "**/.git", SourceProtected},
		{write, "new/.git/HEAD", KindProtected, "**/.git", SourceProtected},
		{mkdir, ".git", KindProtected, "**/.git", SourceProtected},
		{write, filepath.Join(home, ".config/systemd/user/x.service"), KindProtected, filepath.Join(home, ".config/systemd"), SourceDenyWrite},
		{write, filepath.Join(home, ".local/bin/ls"), KindProtected, filepath.Join(home, ".local/bin"), SourceDenyWrite},
		{write, filepath.Join(home, ".gitconfig"), KindProtected, filepath.Join(home, ".gitconfig"), SourceDenyWrite},
		{write, filepath.Join(home, ".bashrc"), KindProtected, "**/.bashrc", SourceProtected},
		{write, filepath.Join(home, "proj2/.git/hooks/x"), KindProtected, "**/.git/hooks/", SourceProtected},
		{write, ".env", KindDenied, "**/.env", ""},
		{write, "sub/deep/.env.local", KindDenied, "**/.env.*", ""},
		{mkdir, "newdir/.env", KindDenied, "**/.env", ""},
		{write, "frozen/new", KindProtected, filepath.Join(ws, "frozen"), SourceDenyWrite},
		// Either order of writes that would make a git directory with a
		// planted config: HEAD first, or the config first.
		{write, "halfgit/config", KindProtected, "config", SourceGitDir},
		{write, "halfgit/hooks/x", KindProtected, "hooks/", SourceGitDir},
		{write, "cfgfirst/HEAD", KindProtected, "HEAD", SourceGitDir},
		{mkdir, "cfgfirst/objects", KindProtected, "objects", SourceGitDir},
		{write, "cfgfirst/commondir", KindProtected, "commondir", SourceGitDir},
	}
	for _, tc := range refused {
		if !links && strings.Contains(tc.path, "link") {
			continue // see linksWork
		}
		t.Run(tc.op+" "+tc.path, func(t *testing.T) {
			abs := tc.path
			if !filepath.IsAbs(abs) {
				abs = filepath.Join(ws, tc.path)
			}
			before, beforeErr := os.ReadFile(abs)
			_, beforeStat := os.Lstat(abs)
			var err error
			switch tc.op {
			case write:
				_, err = fsys.WriteFile(tc.path, "[core]\n\tfsmonitor = touch pwned\n")
			case edit:
				_, err = fsys.EditFile(tc.path, "[core]", "[core]\n\tfsmonitor = touch pwned")
			case lines:
				r, rerr := fsys.ReadFile(tc.path, 0, 0)
				if rerr != nil {
					t.Fatal(rerr)
				}
				_, err = fsys.ReplaceLines(tc.path, r.Lines[0].Anchor(), "", "[core]\n\tfsmonitor = touch pwned")
			case upload:
				_, err = fsys.Upload([]FileData{{Path: "src/ok.txt", Content: "ok"}, {Path: tc.path, Content: "x"}})
			case mkdir:
				_, err = fsys.Mkdir(tc.path)
			}
			v := violation(t, err, tc.kind)
			tc.rule = filepath.ToSlash(tc.rule) // rules are named with "/" on every system
			if v.Rule != tc.rule || v.Source != tc.source {
				t.Errorf("rule %q (%s), want %q (%s): %v", v.Rule, v.Source, tc.rule, tc.source, v)
			}
			if !strings.Contains(v.Error(), "'"+tc.rule+"'") {
				t.Errorf("message does not name the rule: %v", v)
			}
			if tc.source == SourceGitDir && !strings.Contains(v.Error(), "git directory") {
				t.Errorf("message does not name the git directory: %v", v)
			}
			after, afterErr := os.ReadFile(abs)
			_, afterStat := os.Lstat(abs)
			if string(after) != string(before) || (beforeErr == nil) != (afterErr == nil) || (beforeStat == nil) != (afterStat == nil) {
				t.Errorf("%s changed: %q (%v) -> %q (%v)", tc.path, before, beforeErr, after, afterErr)
			}
		})
	}
	for _, p := range []string{"new", "a", "deep", "newdir", "src/ok.txt", filepath.Join(home, ".config", "systemd"), filepath.Join(home, "proj2")} {
		if !filepath.IsAbs(p) {
			p = filepath.Join(ws, p)
		}
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created by a refused operation", p)
		}
	}

	allowed := []struct{ op, path string }{
		{write, ".git/info/exclude"},
		{write, ".git/COMMIT_EDITMSG"},
		{write, ".git/HEAD"},
		{write, "sub/.git/info/exclude"},
		{write, "x.git/description"},
		{write, "src/config"},
		{write, "hooks/x"},
		{write, "src/hooks/pre-commit"},
		{write, "plain/HEAD"},
		{mkdir, "plain2/objects"},
		{write, "docs/.git-notes"},
		{write, "docs/.gitignore"},
		{mkdir, "tools/hooks"},
		{mkdir, "src/.github/workflows"},
		{write, filepath.Join(home, ".config/other/x")},
		{write, filepath.Join(home, "notes.txt")},
	}
	for _, tc := range allowed {
		t.Run("allowed "+tc.op+" "+tc.path, func(t *testing.T) {
			var err error
			switch tc.op {
			case write:
				_, err = fsys.WriteFile(tc.path, "ok\n")
			case mkdir:
				_, err = fsys.Mkdir(tc.path)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestProtectedModeOff: in mode off nothing is protected.
func TestProtectedModeOff(t *testing.T) {
	_, ws, _ := setup(t)
	mkGitDir(t, filepath.Join(ws, "sub", ".git"), false)
	fsys := newFS(t, ws, policy.ModeOff)
	for _, p := range []string{"sub/.git/config", "sub/.git/hooks/pre-commit", ".envrc"} {
		if _, err := fsys.WriteFile(p, "x\n"); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
