//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitLooksPlanted: where git looks besides .git/hooks and .git/config
// (core.hooksPath and include.path, in the workspace's repository, a
// nested one, a submodule and a linked worktree, and in another writable
// root) a confined command plants a hook or a core.fsmonitor, as
// an attacker would; afterwards the host's git runs nothing (the planted
// program would write a marker file). On bubblewrap the write is refused
// during the run; on the Landlock-only backend it is disarmed after it.
func TestGitLooksPlanted(t *testing.T) {
	t.Parallel()
	const hook = `printf '#!/bin/sh\ntouch %s\n' > %s/pre-commit && chmod +x %s/pre-commit`
	type setup struct {
		repo   string // relative to the workspace: the repository host git uses
		config []string
		files  map[string]string // relative to the workspace, made before the run
		plant  string            // the script, %[1]s the marker
		flags  []string
		other  bool // an --allow-write directory outside the workspace
		// refused: the Landlock-only backend's supervisor refuses the
		// write too (what a protected link names, policy.LinkTargets),
		// where it otherwise lets it happen and disarms it after.
		refused bool
		// prep makes repo, when it is not a plain nested repository.
		prep func(t *testing.T, e *sandboxEnv)
	}
	cases := map[string]setup{
		"hooksPath in the work tree": {repo: ".", config: []string{"core.hooksPath", ".githooks"},
			plant: "mkdir -p .githooks; " + fmt.Sprintf(hook, "%[1]s", ".githooks", ".githooks")},
		"hooksPath in the work tree, existing": {repo: ".", config: []string{"core.hooksPath", ".githooks"}, files: map[string]string{".githooks/README": "hooks\n"},
			plant: fmt.Sprintf(hook, "%[1]s", ".githooks", ".githooks")},
		"husky layout, ignored by git": {repo: ".", config: []string{"core.hooksPath", ".husky/_"}, files: map[string]string{".husky/_/.gitignore": "*\n", ".husky/_/h": "#!/bin/sh\n"},
			plant: fmt.Sprintf(hook, "%[1]s", ".husky/_", ".husky/_")},
		"include.path to a work-tree file": {repo: ".", config: []string{"include.path", "../.gitconfig-local"}, files: map[string]string{".gitconfig-local": "[user]\n\tname = t\n"},
			plant: `printf '[core]\n\tfsmonitor = touch %[1]s\n' >> .gitconfig-local`},
		"include.path, created by the run": {repo: ".", config: []string{"include.path", "../.gitconfig-local"},
			plant: `printf '[core]\n\tfsmonitor = touch %[1]s\n' > .gitconfig-local`},
		"nested repository, hooksPath": {repo: "sub", config: []string{"core.hooksPath", "hooks-dir"},
			plant: "mkdir -p sub/hooks-dir; " + fmt.Sprintf(hook, "%[1]s", "sub/hooks-dir", "sub/hooks-dir")},
		"nested repository, include.path": {repo: "sub", config: []string{"include.path", "../../shared.cfg"}, files: map[string]string{"shared.cfg": "[user]\n\tname = t\n"},
			plant: `printf '[core]\n\tfsmonitor = touch %[1]s\n' >> shared.cfg`},
		"submodule, hooksPath": {repo: "mod", config: []string{"core.hooksPath", "hooks-dir"}, prep: submodule,
			plant: "mkdir -p mod/hooks-dir; " + fmt.Sprintf(hook, "%[1]s", "mod/hooks-dir", "mod/hooks-dir")},
		"linked worktree, include.path": {repo: "wt", config: []string{"--worktree", "include.path", "../../../wt.cfg"}, prep: worktree, files: map[string]string{"wt.cfg": "[user]\n\tname = t\n"},
			plant: `printf '[core]\n\tfsmonitor = touch %[1]s\n' >> wt.cfg`},
		"hooksPath in the environment, GIT_CONFIG_COUNT": {repo: ".", config: []string{"user.name", "t"}, prep: envHooksPath,
			plant: "mkdir -p env-hooks; " + fmt.Sprintf(hook, "%[1]s", "env-hooks", "env-hooks")},
		"GIT_CONFIG_GLOBAL names a work-tree file, a dotfiles repository": {repo: ".", config: []string{"user.name", "t"}, prep: envGlobalConfig,
			plant: `printf '[core]\n\tfsmonitor = touch %[1]s\n' >> gitconfig`},
		"hooksPath names a symbolic link to a work-tree directory": {repo: ".", config: []string{"core.hooksPath", ".hooks"}, prep: linkedHooksPath,
			plant: fmt.Sprintf(hook, "%[1]s", "tools/hooks", "tools/hooks")},
		"the hooks directory of .git is a symbolic link into the work tree": {repo: ".", config: []string{"user.name", "t"}, prep: linkedGitHooks,
			plant: fmt.Sprintf(hook, "%[1]s", "scripts/hooks", "scripts/hooks")},
		"the global config is a symbolic link into the work tree, a dotfiles repository": {repo: ".", config: []string{"user.name", "t"}, prep: linkedGlobalConfig, refused: true,
			plant: `printf '[core]\n\tfsmonitor = touch %[1]s\n' >> gitconfig`},
		"absolute hooksPath in another writable root": {repo: ".", other: true,
			plant: "mkdir -p $OTHER/hooks; " + fmt.Sprintf(hook, "%[1]s", "$OTHER/hooks", "$OTHER/hooks")},
	}
	for _, backend := range []string{"bwrap", "landlock"} {
		for name, c := range cases {
			t.Run(backend+"/"+name, func(t *testing.T) {
				e := newEnv(t)
				if backend == "landlock" {
					requireLandlock(t)
				}
				marker := filepath.Join(e.root, "RAN")
				repo := filepath.Join(e.ws, c.repo)
				hostGit(t, e, e.root, "init", "-q", e.ws)
				switch {
				case c.prep != nil:
					c.prep(t, e)
				case c.repo != ".":
					hostGit(t, e, e.root, "init", "-q", repo)
				}
				flags := append([]string{"--backend", backend}, c.flags...)
				script := fmt.Sprintf(c.plant, marker)
				if c.other {
					other := filepath.Join(e.root, "other")
					mkdir(t, other)
					c.config = []string{"core.hooksPath", filepath.Join(other, "hooks")}
					flags = append(flags, "--allow-write", other)
					script = strings.ReplaceAll(script, "$OTHER", other)
				}
				hostGit(t, e, repo, append([]string{"config"}, c.config...)...)
				for f, content := range c.files {
					writeFile(t, filepath.Join(e.ws, f), content)
				}
				r := e.sh(script, flags...)
				if (backend == "bwrap" || c.refused) && r.code == 0 {
					t.Errorf("the plant succeeded on %s: the path is not read-only\n%s", backend, r)
				}
				// Git on the host, as the user would run it next.
				writeFile(t, filepath.Join(repo, "f"), "x\n")
				out := hostGit(t, e, repo, "status", "--short") + hostGit(t, e, repo, "add", "f") + hostGit(t, e, repo, "commit", "-q", "-m", "m")
				if exists(marker) {
					t.Fatalf("host git ran what the run planted:\n%s\nrun: %s", out, r)
				}
				if backend == "landlock" && !c.refused && !strings.Contains(r.stderr, "cordon: warning: planted git") {
					t.Errorf("no warning for the planted file:\n%s", r)
				}
			})
		}
	}
}

// submodule adds the submodule "mod" to the workspace's repository: its
// git directory is .git/modules/mod, whose core.worktree names mod.
func submodule(t *testing.T, e *sandboxEnv) {
	src := filepath.Join(e.root, "src")
	hostGit(t, e, e.root, "init", "-q", src)
	hostGit(t, e, src, "commit", "-q", "--allow-empty", "-m", "m")
	hostGit(t, e, e.ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "mod")
}

// envHooksPath sets core.hooksPath to the work tree's env-hooks in the
// environment of cordon and host git alike (GIT_CONFIG_COUNT), as a
// user's shell may.
func envHooksPath(t *testing.T, e *sandboxEnv) {
	e.extra = append(e.extra, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0="+filepath.Join(e.ws, "env-hooks"))
}

// linkedHooksPath makes .hooks a symbolic link to the work tree's
// tools/hooks (core.hooksPath names the link).
func linkedHooksPath(t *testing.T, e *sandboxEnv) {
	mkdir(t, filepath.Join(e.ws, "tools", "hooks"))
	if err := os.Symlink("tools/hooks", filepath.Join(e.ws, ".hooks")); err != nil {
		t.Fatal(err)
	}
}

// linkedGitHooks replaces .git/hooks with a symbolic link to the work
// tree's scripts/hooks, as projects that keep their hooks in the tree do.
func linkedGitHooks(t *testing.T, e *sandboxEnv) {
	mkdir(t, filepath.Join(e.ws, "scripts", "hooks"))
	if err := os.RemoveAll(filepath.Join(e.ws, ".git", "hooks")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../scripts/hooks", filepath.Join(e.ws, ".git", "hooks")); err != nil {
		t.Fatal(err)
	}
}

// linkedGlobalConfig makes ~/.gitconfig a symbolic link to the work
// tree's gitconfig, as dotfiles managers do.
func linkedGlobalConfig(t *testing.T, e *sandboxEnv) {
	writeFile(t, filepath.Join(e.ws, "gitconfig"), "[user]\n\tname = t\n")
	if err := os.Remove(filepath.Join(e.home, ".gitconfig")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(e.ws, "gitconfig"), filepath.Join(e.home, ".gitconfig")); err != nil {
		t.Fatal(err)
	}
}

// envGlobalConfig points GIT_CONFIG_GLOBAL, for cordon and host git
// alike, at the work tree's file gitconfig.
func envGlobalConfig(t *testing.T, e *sandboxEnv) {
	writeFile(t, filepath.Join(e.ws, "gitconfig"), "[user]\n\tname = t\n")
	e.extra = append(e.extra, "GIT_CONFIG_GLOBAL="+filepath.Join(e.ws, "gitconfig"))
}

// worktree adds the linked worktree "wt" inside the workspace: its git
// directory is .git/worktrees/wt, and an include in its config.worktree
// (extensions.worktreeConfig) names a file relative to that directory.
func worktree(t *testing.T, e *sandboxEnv) {
	hostGit(t, e, e.ws, "commit", "-q", "--allow-empty", "-m", "m")
	hostGit(t, e, e.ws, "worktree", "add", "-q", "wt")
	hostGit(t, e, e.ws, "config", "extensions.worktreeConfig", "true")
}

// TestGitLooksDocumented: a command may still work beside where git
// looks, as the README says: the whole hooks directory is read-only
// (.githooks/README too), files next to an included config are not; and
// with --allow-write ~, an include in ~/.gitconfig of a file in the home
// is read-only.
func TestGitLooksDocumented(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hostGit(t, e, e.root, "init", "-q", e.ws)
	hostGit(t, e, e.ws, "config", "core.hooksPath", ".githooks")
	hostGit(t, e, e.ws, "config", "include.path", "../.gitconfig-local")
	writeFile(t, filepath.Join(e.ws, ".githooks", "README"), "hooks\n")
	writeFile(t, filepath.Join(e.ws, ".gitconfig-local"), "[user]\n\tname = t\n")
	writeFile(t, filepath.Join(e.home, ".gitconfig"), "[include]\n\tpath = ~/.gitconfig.d/extra\n")
	writeFile(t, filepath.Join(e.home, ".gitconfig.d", "extra"), "[user]\n\temail = t@example.com\n")
	for _, tc := range []struct {
		script string
		ok     bool
	}{
		{"echo x >> .githooks/README", false},
		{"echo x > .githooks/new", false},
		{"echo x >> .gitconfig-local", false},
		{"echo x > .gitconfig-other && echo x >> src.txt && mkdir -p .github && echo x > .github/x", true},
		{"echo x >> " + filepath.Join(e.home, ".gitconfig.d", "extra"), false},
		{"echo x > " + filepath.Join(e.home, ".gitconfig.d", "new"), true},
	} {
		r := e.sh(tc.script, "--allow-write", e.home)
		if (r.code == 0) != tc.ok {
			t.Errorf("%s: exit %d, want success %v\n%s", tc.script, r.code, tc.ok, r)
		}
	}
	if got := readFile(t, filepath.Join(e.ws, ".githooks", "README")); got != "hooks\n" {
		t.Errorf(".githooks/README changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.ws, ".githooks", "new")); err == nil {
		t.Error(".githooks/new was created")
	}
}
