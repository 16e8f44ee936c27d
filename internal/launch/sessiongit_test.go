package launch

import "testing"

// TestMayWriteGitConfig: a command that may run a git command writing a
// repository's config, given as argv or as a shell's command string, is
// recognised (it runs in a sandbox of its own, where git writes a private
// copy); other commands, git's readers included, are not.
func TestMayWriteGitConfig(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want bool
	}{
		{[]string{"git", "config", "user.name", "x"}, true},
		{[]string{"/usr/bin/git", "-C", "sub", "remote", "add", "o", "u"}, true},
		{[]string{"sh", "-c", "cd sub && git branch -u origin/main"}, true},
		{[]string{"bash", "-c", "make;git push -u origin HEAD"}, true},
		{[]string{"sh", "-c", "(git submodule update --init)"}, true},
		{[]string{"sh", "-c", "x=$(git config --get a.b)"}, true},
		{[]string{"git", "status"}, false},
		{[]string{"sh", "-c", "git log --oneline | head; git diff"}, false},
		{[]string{"go", "test", "./..."}, false},
		{[]string{"sh", "-c", "echo config; echo git"}, false},
		{[]string{"gitk", "config"}, false},
		{nil, false},
	} {
		if got := mayWriteGitConfig(tc.argv); got != tc.want {
			t.Errorf("mayWriteGitConfig(%q) = %v, want %v", tc.argv, got, tc.want)
		}
	}
}
