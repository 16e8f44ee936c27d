package plan

import (
	"github.com/cordon-sandbox/cordon/backend"
	"strings"
	"testing"
)

func TestGitInitDir(t *testing.T) {
	for _, tc := range []struct {
		cmd  []string
		dir  string
		isOK bool
	}{
		{[]string{"git", "init"}, "/w", true},
		{[]string{"/usr/bin/git", "init", "-q"}, "/w", true},
		{[]string{"git", "init", "."}, "/w", true},
		{[]string{"git", "init", "sub"}, "/w/sub", true},
		{[]string{"git", "init", "-b", "main", "sub"}, "/w/sub", true},
		{[]string{"git", "init", "--initial-branch=main", "/abs"}, "/abs", true},
		{[]string{"git", "-C", "sub", "init"}, "/w/sub", true},
		{[]string{"git", "-c", "init.defaultBranch=x", "init", "--", "-odd"}, "/w/-odd", true},
		{[]string{"git", "init", "--bare"}, "", false},
		{[]string{"git", "--git-dir=x", "init"}, "", false},
		{[]string{"git", "status"}, "", false},
		{[]string{"git"}, "", false},
		{[]string{"sh", "-c", "git init"}, "", false},
	} {
		dir, ok := gitInitDir(tc.cmd, "/w")
		if ok != tc.isOK || dir != tc.dir && ok {
			t.Errorf("gitInitDir(%q) = %q, %v; want %q, %v", tc.cmd, dir, ok, tc.dir, tc.isOK)
		}
	}
}

func TestGitInitHint(t *testing.T) {
	pl := &Plan{Backend: backend.Bwrap, Dir: "/w", Placeholders: []Placeholder{{Path: "/w/.git", Kind: PlaceholderDir}, {Path: "/w/.envrc", Kind: PlaceholderFile}}, Guard: Guard{GitDirs: []string{"/w/repo/.git"}}}
	for _, tc := range []struct {
		cmd  []string
		want string // substring, or "" for no hint
	}{
		{[]string{"git", "init"}, "git init: /w/.git cannot be created inside the sandbox: cordon keeps it a read-only placeholder there"},
		{[]string{"git", "init", "repo"}, "git init: /w/repo is already a git repository"},
		{[]string{"git", "init", "new"}, ""},
		{[]string{"git", "init", "--bare"}, ""},
		{[]string{"true"}, ""},
	} {
		got := GitInitHint(pl, tc.cmd)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("GitInitHint(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
	ll := *pl
	ll.Backend = backend.Landlock
	if got := GitInitHint(&ll, []string{"git", "init"}); got != "" {
		t.Errorf("Landlock-only backend (no placeholders are read-only there): %q", got)
	}
}
