package planted

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCheckTreeUnchanged: after a run that added no name to any
// directory and changed no permission (Options.TreeUnchanged), Check walks
// nothing, yet finds what such a run can still do to what existed: append
// a key that runs a program to an existing config, rewrite an existing
// executable hook, an existing protected name or a file in an existing
// protected directory; in a git directory at the top of a root too. It
// finds exactly what the walk finds after the same run. What the caller
// says was not created is not looked for: the new .envrc is the walk's
// alone (the launcher sets the option only when the listener counted no
// tree change).
func TestCheckTreeUnchanged(t *testing.T) {
	setup := func(t *testing.T) (ws, bare string, b *Before) {
		ws, bare = newWorkspace(t), newWorkspace(t)
		fakeGitDir(t, filepath.Join(ws, "a", ".git"))
		write(t, filepath.Join(ws, "a", ".git", "config"), "[core]\n\tbare = false\n", 0o644)
		write(t, filepath.Join(ws, "a", ".git", "hooks", "pre-commit"), "#!/bin/sh\necho hi\n", 0o755)
		write(t, filepath.Join(ws, "b", ".envrc"), "user\n", 0o644)
		write(t, filepath.Join(ws, "c", "d", ".vscode", "tasks.json"), "{}\n", 0o644)
		write(t, filepath.Join(ws, "c", ".config", "fish", "config.fish"), "set x 1\n", 0o644)
		fakeGitDir(t, bare)
		write(t, filepath.Join(bare, "config"), "[core]\n\tbare = true\n", 0o644)
		dirs, names, note := discover([]string{ws, bare}, Limits{})
		if note != "" {
			t.Fatal(note)
		}
		b = Snapshot(dirs, names)
		// What a run that changes no more than the contents of existing
		// files can do.
		f, err := os.OpenFile(filepath.Join(ws, "a", ".git", "config"), os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = f.WriteString("\tfsmonitor = /tmp/evil\n")
		must(t, err)
		must(t, f.Close())
		for _, p := range []string{filepath.Join(ws, "a", ".git", "hooks", "pre-commit"), filepath.Join(ws, "b", ".envrc"), filepath.Join(ws, "c", "d", ".vscode", "tasks.json"), filepath.Join(ws, "c", ".config", "fish", "config.fish")} {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
			must(t, err)
			_, err = f.WriteString("echo evil\n")
			must(t, err)
			must(t, f.Close())
		}
		f, err = os.OpenFile(filepath.Join(bare, "config"), os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = f.WriteString("[alias]\n\tx = !evil\n")
		must(t, err)
		must(t, f.Close())
		return ws, bare, b
	}
	want := []string{
		"config config alias.x true",
		"config a/.git/config core.fsmonitor true",
		"hook a/.git/hooks/pre-commit pre-commit true",
		"name b/.envrc .envrc true",
		"name c/.config/fish/config.fish fish false",
		"name c/d/.vscode/tasks.json .vscode true",
	}
	var got [2][]string
	for i, nothing := range []bool{false, true} {
		ws, bare, b := setup(t)
		rep, err := b.Check([]string{ws, bare}, Options{KeepArmed: true, TreeUnchanged: nothing})
		must(t, err)
		if rep.Incomplete != "" {
			t.Errorf("TreeUnchanged %v: incomplete: %s", nothing, rep.Incomplete)
		}
		got[i] = summary(rep)
		slices.Sort(got[i])
		// Unless told that nothing was created, a new name is found.
		write(t, filepath.Join(ws, "e", ".envrc"), "echo new\n", 0o644)
		rep, err = b.Check([]string{ws, bare}, Options{KeepArmed: true, TreeUnchanged: nothing})
		must(t, err)
		if found := slices.ContainsFunc(rep.Findings, func(f Finding) bool { return f.Rel == filepath.Join("e", ".envrc") }); found == nothing {
			t.Errorf("TreeUnchanged %v: the new e/.envrc found: %v", nothing, found)
		}
	}
	for i := range got {
		for j := range got[i] {
			got[i][j] = trimDisarmed(got[i][j])
		}
	}
	if !slices.Equal(got[0], got[1]) {
		t.Errorf("after a walk %q, without one %q", got[0], got[1])
	}
	for _, w := range want {
		if !slices.Contains(got[1], trimDisarmed(w)) {
			t.Errorf("without a walk: %q not found in %q", w, got[1])
		}
	}
}

// trimDisarmed drops summary's last field (KeepArmed leaves all armed).
func trimDisarmed(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ' ' {
			return s[:i]
		}
	}
	return s
}
