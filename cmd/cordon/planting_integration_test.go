//go:build linux

package main

import (
	"bytes"
	"context"
	"os"

	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// git runs the host's git in dir with the fake home, the way the user runs
// it after the sandbox: whatever it prints (a hook's or fsmonitor's marker)
// is returned.
func (e *sandboxEnv) git(dir string, args ...string) (string, error) {
	e.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + e.home, "GIT_CONFIG_NOSYSTEM=1", "LANG=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// mustGit is git that fails the test on error.
func (e *sandboxEnv) mustGit(dir string, args ...string) string {
	e.t.Helper()
	out, err := e.git(dir, args...)
	if err != nil {
		e.t.Fatalf("git %q in %s: %v\n%s", args, dir, err, out)
	}
	return out
}

// gitProject makes the workspace a repository with a commit, a nested
// repository sub/ (with its own .envrc and .vscode), a submodule lib and a
// linked worktree ../proj-wt, as real projects have them.
func gitProject(t *testing.T, e *sandboxEnv) {
	t.Helper()
	writeFile(t, filepath.Join(e.home, ".gitconfig"), "[user]\n\tname = T\n\temail = t@example.com\n[protocol \"file\"]\n\tallow = always\n[init]\n\tdefaultBranch = main\n")
	lib := filepath.Join(e.root, "lib")
	mkdir(t, lib)
	e.mustGit(lib, "init", "-q")
	writeFile(t, filepath.Join(lib, "l.txt"), "lib\n")
	e.mustGit(lib, "add", ".")
	e.mustGit(lib, "commit", "-qm", "lib")

	e.mustGit(e.ws, "init", "-q")
	writeFile(t, filepath.Join(e.ws, "main.go"), "package main\n")
	e.mustGit(e.ws, "add", ".")
	e.mustGit(e.ws, "commit", "-qm", "one")
	e.mustGit(e.ws, "submodule", "add", "-q", lib, "lib")
	e.mustGit(e.ws, "commit", "-qm", "submodule")
	e.mustGit(e.ws, "worktree", "add", "-q", filepath.Join(e.home, "src", "proj-wt"))

	sub := filepath.Join(e.ws, "sub")
	mkdir(t, sub)
	e.mustGit(sub, "init", "-q")
	writeFile(t, filepath.Join(sub, ".envrc"), "export A=1\n")
	writeFile(t, filepath.Join(sub, ".vscode", "tasks.json"), "{}\n")
	writeFile(t, filepath.Join(sub, "f"), "f\n")
	e.mustGit(sub, "add", ".")
	e.mustGit(sub, "commit", "-qm", "sub")
}

// TestPlantingRefused: the reproductions of the planting issue. Every git
// directory at any depth keeps its configuration and hooks read-only
// (nested repositories, submodules, worktrees, commondir and
// config.worktree), gitlinks and nested editor config stay read-only,
// and afterwards host git runs nothing the sandbox wrote and no
// placeholder is left. (Absent shell start-up files and .envrc at the top
// of a project get no placeholder: TestPlaceholdersNoClutter.)
func TestPlantingRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gitProject(t, e)
	before := listing(t, e.ws)
	hook := `printf '#!/bin/sh\necho HOOK-RAN\n' > %s/hooks/pre-commit && chmod +x %s/hooks/pre-commit`
	attempts := []string{
		// 1. nested repositories and submodules
		strings.ReplaceAll(hook, "%s", "sub/.git"),
		`git -C sub config core.fsmonitor "echo FSMON >&2"`,
		`printf '[core]\n\tfsmonitor = echo FSMON >&2\n' >> sub/.git/config`,
		strings.ReplaceAll(hook, "%s", ".git/modules/lib"),
		`git -C lib config core.fsmonitor "echo FSMON >&2"`,
		`printf '[core]\n\tfsmonitor = echo FSMON >&2\n' >> .git/modules/lib/config`,
		`echo 'export EVIL=1' >> sub/.envrc`,
		`echo '{"evil":1}' > sub/.vscode/tasks.json`,
		`mv sub/.git sub/.git.old`,
		`mv .git/modules .git/m2`,
		`mv .git/modules/lib .git/modules/lib2`,
		// 4. git's other ways in
		`mkdir -p cd && printf '[core]\n\tfsmonitor = echo FSMON >&2\n' > cd/config && echo ../cd > .git/commondir`,
		`echo '[core] fsmonitor = echo FSMON' > .git/config.worktree`,
		`echo ../../../cd > .git/worktrees/proj-wt/commondir`,
		`echo 'gitdir: ../cd' > lib/.git`,
	}
	for _, a := range attempts {
		r := e.sh(a)
		if r.code == 0 {
			t.Errorf("%q succeeded:\n%s", a, r)
		}
	}
	after := listing(t, e.ws)
	// cd/ may be created (only its use as a commondir is refused).
	if d := diffListing(before, filterListing(after, "cd/")); d != "" {
		t.Errorf("the workspace changed on the host (or a placeholder was left):\n%s", d)
	}
	// Host git in each repository runs nothing the sandbox wrote.
	e.hostGitRunsNothing(e.ws, filepath.Join(e.ws, "sub"), filepath.Join(e.ws, "lib"), filepath.Join(e.home, "src", "proj-wt"))
}

// hostGitRunsNothing runs the user's git (status, add, commit) in each
// directory on the host and fails if a planted fsmonitor or hook ran.
func (e *sandboxEnv) hostGitRunsNothing(dirs ...string) {
	e.t.Helper()
	for _, dir := range dirs {
		writeFile(e.t, filepath.Join(dir, "host-new.txt"), "n\n")
		out := e.mustGit(dir, "status")
		e.mustGit(dir, "add", "host-new.txt")
		out += e.mustGit(dir, "commit", "-qm", "host commit")
		if strings.Contains(out, "FSMON") || strings.Contains(out, "HOOK-RAN") {
			e.t.Errorf("host git in %s ran planted code:\n%s", dir, out)
		}
	}
}

// TestGitWorksInside: protecting every git directory keeps everyday git
// working inside the sandbox: status, add, commit, log, diff, submodule
// status and worktree list, in a repository with a submodule, a nested
// repository and a worktree, with commondir and hooks placeholders in place.
func TestGitWorksInside(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gitProject(t, e)
	script := `set -e
echo change >> main.go
git status --short
git add main.go
git commit -qm inside
git log --oneline | head -1
git diff HEAD~1 --stat
git submodule status
git worktree list
git -C sub status --short
echo x > sub/g && git -C sub add g && git -C sub commit -qm sub-inside
git -C lib log --oneline | head -1
echo done`
	r := e.sh(script)
	if r.code != 0 || !strings.Contains(r.stdout, "done") || !strings.Contains(r.stdout, "inside") {
		t.Fatalf("git inside failed:\n%s", r)
	}
	if out := e.mustGit(e.ws, "log", "--oneline", "-1"); !strings.Contains(out, "inside") {
		t.Errorf("the commit made inside is not on the host: %s", out)
	}
	if out := e.mustGit(e.ws, "status", "--porcelain"); strings.Contains(out, "commondir") || strings.Contains(out, ".profile") {
		t.Errorf("placeholders show in git status: %s", out)
	}
}

// TestHomeWritableKeepsAbsentPaths: with the home directory writable
// (--allow-write ~), what does not exist yet stays absent: cordon's own
// config, the PATH directories, services, autostart, git's global config
// and the credential files; existing shell start-up files stay read-only;
// nothing is left behind.
func TestHomeWritableKeepsAbsentPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, ".bashrc"), "# mine\n")
	// cordon's own state and the sandbox cache are made on first use.
	skip := []string{".cache", filepath.Join(".local", "state", "cordon")}
	before := listing(t, e.home, skip...)
	attempts := []string{
		`mkdir -p ~/.config/cordon && echo 'sandbox: {mode: off}' > ~/.config/cordon/config.yaml`,
		`mkdir -p ~/.local/bin && printf '#!/bin/sh\n' > ~/.local/bin/git`,
		`mkdir -p ~/bin && echo x > ~/bin/ls`,
		`mkdir -p ~/.config/systemd/user && echo x > ~/.config/systemd/user/evil.service`,
		`mkdir -p ~/.config/autostart && echo x > ~/.config/autostart/evil.desktop`,
		`printf '[core]\n\tpager = evil\n' >> ~/.gitconfig`,
		`mkdir -p ~/.config/git && echo x > ~/.config/git/config`,
		`echo //registry/:_authToken=x > ~/.npmrc`,
		`mkdir -p ~/.docker && echo {} > ~/.docker/config.json`,
		`mkdir -p ~/.kube && echo x > ~/.kube/config`,
		`mkdir -p ~/.ssh && echo key > ~/.ssh/authorized_keys`,
		`echo evil >> ~/.bashrc`,
		`echo evil > ~/.profile`,
		`echo evil > ~/.zshenv`,
		`mkdir -p ~/.config/fish && echo evil > ~/.config/fish/config.fish`,
		// Moving a parent away (taking the read-only mounts along) and
		// making it anew.
		`mv ~/.local ~/.x && mkdir -p ~/.local/bin && echo x > ~/.local/bin/ls`,
		`mv ~/.config ~/.c2 && mkdir -p ~/.config/cordon && echo 'sandbox: {mode: off}' > ~/.config/cordon/config.yaml`,
	}
	for _, a := range attempts {
		r := e.sh(a, "--allow-write", e.home)
		if r.code == 0 {
			t.Errorf("%q succeeded with the home directory writable:\n%s", a, r)
		}
	}
	// Ordinary files in the home directory are writable, as asked.
	if r := e.sh(`echo ok > ~/notes.txt`, "--allow-write", e.home); r.code != 0 {
		t.Errorf("writing ~/notes.txt failed:\n%s", r)
	}
	after := filterListing(listing(t, e.home, skip...), "notes.txt")
	if d := diffListing(before, after); d != "" {
		t.Errorf("the home directory changed (or a placeholder was left):\n%s", d)
	}
}

// filterListing drops the entries starting with prefix.
func filterListing(l []string, prefix string) []string {
	var out []string
	for _, s := range l {
		if !strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// TestPlantedWarningOnTerminal: on an interactive terminal (cordon gives
// the command a private pty and puts the host terminal in raw mode), the
// warnings about what the run planted are printed once the terminal is
// restored, so they are whole lines the user sees.
func TestPlantedWarningOnTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out, code := runOnPty(t, e, "", "", "run", "--", "sh", "-c", `git init -q x && git -C x config core.fsmonitor "echo PWNED"`)
	if code != 0 {
		t.Fatalf("exit %d: %q", code, out)
	}
	const want = "cordon: warning: planted git config x/.git/config: core.fsmonitor"
	i := strings.Index(out, want)
	if i < 0 {
		t.Fatalf("no warning on the terminal: %q", out)
	}
	if i > 0 && !strings.HasSuffix(out[:i], "\r\n") {
		t.Errorf("the warning does not start a line of a restored terminal: %q", out)
	}
}

// TestLandlockRefusesCordonConfigWrites: the Landlock-only backend cannot
// keep cordon's own config read-only inside a writable tree, so it refuses
// such a run (exit 125) instead of letting a command write `mode: off` for
// every later run.
func TestLandlockRefusesCordonConfigWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := filepath.Join(e.home, ".config", "cordon", "config.yaml")
	r := e.sh(`mkdir -p ~/.config/cordon && echo 'sandbox: {mode: off}' > ~/.config/cordon/config.yaml`,
		"--backend", "landlock", "--allow-write", filepath.Join(e.home, ".config"))
	if r.code != 125 || !strings.Contains(r.stderr, "cannot keep") || exists(cfg) {
		t.Errorf("want exit 125 and no config written:\n%s", r)
	}
}

// TestPlantedInSandboxCache: a repository planted in the sandbox cache
// (writable, not the workspace) and reached from the workspace through a
// gitlink or a symbolic link is disarmed after the run like one in the
// workspace: host git there runs nothing.
func TestPlantedInSandboxCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, ".gitconfig"), "[user]\n\tname = T\n\temail = t@example.com\n")
	script := `set -e
C=$(dirname "$GOCACHE")
git init -q "$C/y"
git -C "$C/y" config core.fsmonitor "echo FSMON"
printf '#!/bin/sh\necho HOOK-RAN\n' > "$C/y/.git/hooks/pre-commit"
chmod +x "$C/y/.git/hooks/pre-commit"
mkdir sub2
echo "gitdir: $C/y/.git" > sub2/.git
ln -s "$C/y" linkrepo`
	r := e.sh(script)
	if r.code != 0 {
		t.Fatalf("planting in the cache failed:\n%s", r)
	}
	if !strings.Contains(r.stderr, "core.fsmonitor") || !strings.Contains(r.stderr, "pre-commit") {
		t.Errorf("no warnings for the repository planted in the sandbox cache:\n%s", r)
	}
	// Outside the workspace, a warning names the whole path.
	if !strings.Contains(r.stderr, filepath.Join(e.home, ".cache", "cordon", "sandbox")) {
		t.Errorf("the warning does not say where the repository is:\n%s", r)
	}
	e.hostGitRunsNothing(filepath.Join(e.ws, "linkrepo"))
}

// TestKilledRunPlantedReported: a cordon killed with SIGKILL never runs its
// own check after the run; its journal makes the next run report what it
// may have planted (without disarming: the user may have changed things
// since).
func TestKilledRunPlantedReported(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := uniqueSleep(311)
	t.Cleanup(func() { killLeftovers(waitNoProcs([]string{"sleep " + s}, 0)) })
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd, _, _ := startCordon(t, e, ctx, "run", "--", "sh", "-c",
		`git init -q x && git -C x config core.fsmonitor "echo FSMON" && echo ready && exec sleep `+s)
	if b, _ := os.ReadFile(filepath.Join(e.ws, "x", ".git", "config")); !strings.Contains(string(b), "fsmonitor") {
		t.Fatalf("the planted key is not there: %q", b)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = waitCode(t, cmd)
	r := e.run("run", "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "a run killed before its check") || !strings.Contains(r.stderr, "core.fsmonitor") {
		t.Errorf("the next run does not report what the killed run planted:\n%s", r)
	}
	// Only that: not the killed run's own placeholders, and not as if the
	// user had asked to keep it armed.
	if n := strings.Count(r.stderr, "cordon: warning:"); n != 1 || strings.Contains(r.stderr, "--no-disarm") {
		t.Errorf("want exactly one warning, not mentioning --no-disarm:\n%s", r)
	}
	if r := e.run("run", "--", "true"); strings.Contains(r.stderr, "killed before its check") {
		t.Errorf("reported twice:\n%s", r)
	}
}

// TestPathSkipsUnexecutable: as execvp does, a command found first in a
// directory on PATH that the sandbox may not execute from (here one in the
// home directory, outside the Landlock-only backend's allowlist) gives way
// to the next one on PATH instead of failing with 126.
func TestPathSkipsUnexecutable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	requireLandlock(t)
	shims := filepath.Join(e.home, "shims")
	writeFile(t, filepath.Join(shims, "true"), "#!/bin/sh\nexit 3\n")
	if err := os.Chmod(filepath.Join(shims, "true"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := e.run("run", "--backend", "landlock", "--env", "PATH="+shims+":/usr/bin:/bin", "--", "true")
	if r.code != 0 {
		t.Errorf("want /usr/bin/true after the unexecutable shim:\n%s", r)
	}
}

// TestPlantedAcrossTwoRuns: one run leaves the pieces of a git directory
// that is not one yet; a later run renames them into place. The later run
// reports and disarms the config of the directory that became a git
// directory during it, however old that config is.
func TestPlantedAcrossTwoRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, ".gitconfig"), "[user]\n\tname = T\n\temail = t@example.com\n")
	r := e.sh(`mkdir -p sub/.stash/objects.tmp sub/.stash/refs
printf '[core]\n\tfsmonitor = echo FSMON\n' > sub/.stash/config
echo 'ref: refs/heads/main' > sub/.stash/HEAD.lock
echo 'gitdir: .stash' > sub/.git`)
	if r.code != 0 {
		t.Fatalf("first run:\n%s", r)
	}
	time.Sleep(1100 * time.Millisecond) // the pieces are older than the next run
	r = e.sh(`mv sub/.stash/HEAD.lock sub/.stash/HEAD && mv sub/.stash/objects.tmp sub/.stash/objects`)
	if r.code != 0 || !strings.Contains(r.stderr, "core.fsmonitor") {
		t.Errorf("the second run does not report the planted config:\n%s", r)
	}
	if out, _ := e.git(filepath.Join(e.ws, "sub"), "status"); strings.Contains(out, "FSMON") {
		t.Errorf("host git ran the planted fsmonitor:\n%s", out)
	}
}

// TestHostChangesDuringRunKept: under bubblewrap what existed before the
// run is read-only inside it, so what changes there meanwhile is the
// user's (an IDE rewriting .idea): the check after the run leaves it
// alone. Not so a git config the user rewrote meanwhile: git replaces the
// file (config.lock renamed onto it), and replacing a path takes away
// the sandbox's read-only mount on it (the kernel detaches a mount whose
// path another mount namespace removes), so the run could have written
// it after: a key that runs a program is disarmed, and the line says why
// and how to set it again.
func TestHostChangesDuringRunKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, ".gitconfig"), "[user]\n\tname = T\n\temail = t@example.com\n")
	e.mustGit(e.ws, "init", "-q")
	writeFile(t, filepath.Join(e.ws, ".idea", "workspace.xml"), "<old/>\n")
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd, errb, _ := startCordon(t, e, ctx, "run", "--", "sh", "-c", "echo ready; sleep 1")
	writeFile(t, filepath.Join(e.ws, ".idea", "workspace.xml"), "<new/>\n")
	writeFile(t, filepath.Join(e.ws, ".idea", "tasks.xml"), "<tasks/>\n")
	e.mustGit(e.ws, "config", "core.editor", "vim")
	if code := waitCode(t, cmd); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.Contains(errb.String(), ".idea") {
		t.Errorf("the user's own changes were taken for planted:\n%s", errb.String())
	}
	if got := readFile(t, filepath.Join(e.ws, ".idea", "workspace.xml")); got != "<new/>\n" {
		t.Errorf(".idea/workspace.xml = %q", got)
	}
	if !strings.Contains(errb.String(), "core.editor") || !strings.Contains(errb.String(), "make it again outside the sandbox") {
		t.Errorf("the config rewritten during the run was not checked, or the line does not say why:\n%s", errb.String())
	}
}

// TestRebaseLeftStopped: a run that leaves an interactive rebase stopped
// with exec lines in its to-do list (found by an attack: the host's
// `git rebase --continue`, the user's natural next step, ran them) has
// them commented out after the run, on both backends, and says so; the
// host's continue then finishes the rebase and runs nothing.
func TestRebaseLeftStopped(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		writeFile(t, filepath.Join(e.home, ".gitconfig"), "[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n")
		e.mustGit(e.ws, "init", "-q")
		for _, n := range []string{"a", "b", "c"} {
			writeFile(t, filepath.Join(e.ws, n), n+"\n")
			e.mustGit(e.ws, "add", n)
			e.mustGit(e.ws, "commit", "-qm", n)
		}
		marker := filepath.Join(e.root, "REBASE-EXEC-RAN")
		r := e.run("run", "--backend", backend, "--", "git", "-c", "sequence.editor=sed -i 1ibreak",
			"rebase", "-q", "-i", "--exec", "touch "+marker, "HEAD~2")
		if !strings.Contains(r.stderr, "git rebase --continue") || !strings.Contains(r.stderr, "disarmed (commented out)") {
			t.Errorf("the run did not say it disarmed the exec lines: %s", r)
		}
		out, err := e.git(e.ws, "rebase", "--continue")
		if err != nil {
			t.Errorf("the host's git rebase --continue failed: %v\n%s", err, out)
		}
		if exists(marker) {
			t.Errorf("the host's git rebase --continue ran the run's exec line:\n%s\n%s", out, r)
		}
		if got := e.mustGit(e.ws, "log", "--format=%s"); got != "c\nb\na\n" {
			t.Errorf("the rebase did not finish as it would have: %q", got)
		}
	})
}
