//go:build unix

package gitrepo

import "testing"

// TestWorktreeValue: core.worktree as git writes it and as a hand edit
// may, read as git reads it.
func TestWorktreeValue(t *testing.T) {
	tests := []struct {
		name, data string
		want       string
		ok         bool
	}{
		{"as git writes it", "[core]\n\trepositoryformatversion = 0\n\tworktree = ../../../lib\n", "../../../lib", true},
		{"case and spaces", "[CORE]\n  WorkTree=/a/b  \n", "/a/b", true},
		{"a header git refuses", "[ core ]\n  worktree=/a/b  \n", "", false},
		{"quoted with a comment", "[core]\nworktree = \"/a b/c\" ; mine\n", "/a b/c", true},
		{"escaped quote", "[core]\nworktree = \"/a\\\"b\"\n", "/a\"b", true},
		{"last wins", "[core]\nworktree = /a\n[core]\nworktree = /b\n", "/b", true},
		{"other section", "[remote \"core\"]\nworktree = /a\n[core.x]\nworktree = /b\n", "", false},
		{"key after header", "[core] worktree = /a\n", "/a", true},
		{"unset", "[core]\n\tbare = false\n", "", false},
		{"escape", "[core]\nworktree = /a\\tb\n", "/a\tb", true},
		{"unknown escape", "[core]\nworktree = /a\\qb\n", "", false},
		{"unterminated quote", "[core]\nworktree = \"/a\n", "", false},
		{"bare key", "[core]\nworktree\n", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := worktreeValue([]byte(tc.data))
			if got != tc.want || ok != tc.ok {
				t.Errorf("worktreeValue = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
