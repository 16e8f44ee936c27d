//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsUnreadable: secrets in the home directory and in the workspace
// cannot be read, directly or through symlinks.
func TestSecretsUnreadable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	secrets := map[string]string{
		filepath.Join(e.home, ".ssh", "id_rsa"):        "SSH-SECRET-a1b2",
		filepath.Join(e.home, ".aws", "credentials"):   "AWS-SECRET-c3d4",
		filepath.Join(e.ws, ".env"):                    "ENV-SECRET-e5f6",
		filepath.Join(e.ws, "secrets.yaml"):            "YAML-SECRET-g7h8",
		filepath.Join(e.ws, "sub", "dir", ".env"):      "SUBENV-SECRET-i9j0",
		filepath.Join(e.ws, ".env.local"):              "ENVLOCAL-SECRET-k1l2",
		filepath.Join(e.ws, "private", "token.txt"):    "DENYFLAG-SECRET-m3n4",
		filepath.Join(e.home, ".config", "other", "x"): "HOMECFG-SECRET-o5p6",
		filepath.Join(e.sibling, "deep", "secret.txt"): "SIBLING-SECRET-q7r8",
	}
	for p, s := range secrets {
		writeFile(t, p, s)
	}
	writeFile(t, filepath.Join(e.ws, "README"), "PUBLIC-README")
	// A link inside the workspace to the denied ~/.ssh, and a link that is
	// itself denied with --deny.
	if err := os.Symlink(filepath.Join(e.home, ".ssh"), filepath.Join(e.ws, "sshlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(e.home, ".aws", "credentials"), filepath.Join(e.ws, "awslink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("private/token.txt", filepath.Join(e.ws, "tokenlink")); err != nil {
		t.Fatal(err)
	}
	denyFlag := []string{"--deny", filepath.Join(e.ws, "tokenlink")}

	paths := []string{
		filepath.Join(e.home, ".ssh", "id_rsa"),
		"~/.ssh/id_rsa",
		filepath.Join(e.home, ".aws", "credentials"),
		"./.env",
		"./secrets.yaml",
		"./sub/dir/.env",
		"./.env.local",
		"./sshlink/id_rsa",
		"./awslink",
		"./tokenlink",
		"./private/token.txt",
		filepath.Join(e.home, ".config", "other", "x"),
		filepath.Join(e.sibling, "deep", "secret.txt"),
		filepath.Join(e.sibling, "notes.txt"),
	}
	for _, p := range paths {
		t.Run(strings.ReplaceAll(p, "/", "_"), func(t *testing.T) {
			r := e.sh(fmt.Sprintf("cat %s", p), denyFlag...)
			if r.code == 0 {
				t.Errorf("cat %s succeeded inside the sandbox:\n%s", p, r)
			}
			msg := userStderr(r.stderr)
			if !strings.Contains(msg, "Permission denied") && !strings.Contains(msg, "No such file") && !strings.Contains(msg, "Not a directory") {
				t.Errorf("cat %s: want Permission denied or No such file, got:\n%s", p, r)
			}
			for _, s := range secrets {
				if strings.Contains(r.all(), s) {
					t.Errorf("secret %q leaked through cat %s:\n%s", s, p, r)
				}
			}
		})
	}

	// A sweeping search finds nothing, but the public file is readable.
	t.Run("sweep", func(t *testing.T) {
		r := e.sh(`grep -r . . ~ 2>/dev/null; ls -la sshlink/ ~/.ssh ~/.aws 2>&1; cat ./README`, denyFlag...)
		for _, s := range secrets {
			if strings.Contains(r.all(), s) {
				t.Errorf("secret %q leaked in a recursive grep:\n%s", s, r)
			}
		}
		if strings.Contains(r.all(), "id_rsa") || strings.Contains(r.all(), "credentials") {
			t.Errorf("a denied directory's listing leaked:\n%s", r)
		}
		if !strings.Contains(r.stdout, "PUBLIC-README") {
			t.Errorf("the workspace's public README was not readable:\n%s", r)
		}
	})

	// Denied files cannot be overwritten either.
	t.Run("no-write", func(t *testing.T) {
		r := e.sh(`echo pwned > ./.env; echo pwned > ./secrets.yaml; echo pwned > ./tokenlink; echo pwned > ./private/token.txt; echo pwned > ~/.ssh/id_rsa; true`, denyFlag...)
		for p, s := range secrets {
			if got := readFile(t, p); got != s {
				t.Errorf("%s changed to %q on the host (%s)", p, got, r)
			}
		}
	})
}

// TestWrites: writes outside the workspace fail and leave nothing on the
// host; writes inside succeed; --allow-write adds a writable directory.
func TestWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	extra := filepath.Join(e.home, "extra")
	mkdir(t, extra)
	etcName := filepath.Join("/etc", fmt.Sprintf("cordon-itest-%d", os.Getpid()))
	t.Cleanup(func() { os.Remove(etcName) })

	denied := []struct {
		name, script, hostPath string
	}{
		{"home", `touch "$HOME/x"`, filepath.Join(e.home, "x")},
		{"home-config", `mkdir -p "$HOME/.config/autostart" && touch "$HOME/.config/autostart/x"`, filepath.Join(e.home, ".config", "autostart")},
		{"bashrc", `echo evil >> "$HOME/.bashrc"`, filepath.Join(e.home, ".bashrc")},
		{"etc", "touch " + etcName, etcName},
		{"usr", "touch /usr/cordon-itest-x", "/usr/cordon-itest-x"},
		{"sibling", "echo x > " + filepath.Join(e.sibling, "x"), filepath.Join(e.sibling, "x")},
		{"sibling-rel", "echo x > ../other/y", filepath.Join(e.sibling, "y")},
		{"extra-without-flag", "echo x > " + filepath.Join(extra, "f"), filepath.Join(extra, "f")},
	}
	for _, c := range denied {
		t.Run("outside/"+c.name, func(t *testing.T) {
			r := e.sh(c.script)
			if r.code == 0 {
				t.Errorf("%s succeeded:\n%s", c.script, r)
			}
			if exists(c.hostPath) {
				t.Errorf("%s appeared on the host after %s", c.hostPath, c.script)
			}
		})
	}
	if got := readFile(t, filepath.Join(e.sibling, "notes.txt")); got != "SIBLING-SECRET-7f3a" {
		t.Errorf("sibling project changed: %q", got)
	}

	t.Run("inside", func(t *testing.T) {
		r := e.sh(`printf 'hello\nworld\n' > out.txt && mkdir -p a/b && echo deep > a/b/c.txt && echo abs > "` + e.ws + `/abs.txt"`)
		if r.code != 0 {
			t.Fatalf("writing inside the workspace failed:\n%s", r)
		}
		for p, want := range map[string]string{"out.txt": "hello\nworld\n", "a/b/c.txt": "deep\n", "abs.txt": "abs\n"} {
			if got := readFile(t, filepath.Join(e.ws, p)); got != want {
				t.Errorf("%s on the host = %q, want %q", p, got, want)
			}
		}
		// Modifying and deleting existing files works too.
		writeFile(t, filepath.Join(e.ws, "old.txt"), "old")
		r = e.sh(`echo new > old.txt && rm a/b/c.txt`)
		if r.code != 0 {
			t.Fatalf("modifying inside the workspace failed:\n%s", r)
		}
		if got := readFile(t, filepath.Join(e.ws, "old.txt")); got != "new\n" {
			t.Errorf("old.txt = %q", got)
		}
		if exists(filepath.Join(e.ws, "a", "b", "c.txt")) {
			t.Errorf("a/b/c.txt not deleted")
		}
	})

	t.Run("allow-write", func(t *testing.T) {
		f := filepath.Join(extra, "f")
		r := e.sh("echo extra-ok > "+f, "--allow-write", extra)
		if r.code != 0 {
			t.Fatalf("--allow-write %s: write failed:\n%s", extra, r)
		}
		if got := readFile(t, f); got != "extra-ok\n" {
			t.Errorf("%s = %q", f, got)
		}
		// Only that directory: its parent stays unwritable.
		beside := filepath.Join(e.home, "beside")
		r = e.sh("echo x > "+beside, "--allow-write", extra)
		if r.code == 0 || exists(beside) {
			t.Errorf("writing beside the --allow-write directory succeeded:\n%s", r)
		}
	})
}

// TestProtectedPaths: .git/hooks, .git/config and editor/agent config stay
// read-only whether or not they exist, and no placeholder remains after the
// run.
func TestProtectedPaths(t *testing.T) {
	t.Parallel()

	t.Run("existing", func(t *testing.T) {
		e := newEnv(t)
		hook := filepath.Join(e.ws, ".git", "hooks", "pre-commit")
		cfg := filepath.Join(e.ws, ".git", "config")
		vs := filepath.Join(e.ws, ".vscode", "settings.json")
		envrc := filepath.Join(e.ws, ".envrc")
		writeFile(t, hook, "#!/bin/sh\necho original hook\n")
		writeFile(t, cfg, "[core]\n\tbare = false\n")
		writeFile(t, filepath.Join(e.ws, ".git", "HEAD"), "ref: refs/heads/main\n")
		writeFile(t, vs, "{}\n")
		writeFile(t, envrc, "export A=1\n")
		writeFile(t, filepath.Join(e.ws, ".bashrc"), "# project bashrc\n")
		writeFile(t, filepath.Join(e.ws, "main.go"), "package main\n")
		before := listing(t, e.ws)
		attempts := []string{
			`echo evil >> .git/hooks/pre-commit`,
			`echo evil > .git/hooks/pre-commit`,
			`rm -f .git/hooks/pre-commit && test ! -e .git/hooks/pre-commit`,
			`echo evil > .git/hooks/post-checkout`,
			`rm -rf .git/hooks && test ! -e .git/hooks`,
			`mv .git/hooks .git/hooks.old`,
			`echo '[core] hooksPath = /tmp' >> .git/config`,
			`rm -f .git/config && test ! -e .git/config`,
			`mv .git/config .git/config.old`,
			`mv .git .git2`,
			`mv .git .git2 ; mkdir -p .git/hooks && echo evil > .git/hooks/x`,
			`echo '{"evil":1}' > .vscode/settings.json`,
			`echo evil > .vscode/tasks.json`,
			`echo evil >> .envrc`,
			`echo evil >> .bashrc`,
			`ln -sf /tmp/x .git/hooks/pre-push`,
		}
		for _, a := range attempts {
			r := e.sh(a)
			if r.code == 0 {
				t.Errorf("%q succeeded:\n%s", a, r)
			}
		}
		after := listing(t, e.ws)
		if d := diffListing(before, after); d != "" {
			t.Errorf("the workspace changed on the host:\n%s", d)
		}
		// Removing .git removes what is not protected, never hooks or config.
		if r := e.sh(`rm -rf .git && test ! -e .git`); r.code == 0 {
			t.Errorf("rm -rf .git succeeded:\n%s", r)
		}
		if got := readFile(t, hook); got != "#!/bin/sh\necho original hook\n" {
			t.Errorf("hook changed: %q", got)
		}
		if got := readFile(t, cfg); got != "[core]\n\tbare = false\n" {
			t.Errorf(".git/config changed: %q", got)
		}
		// Ordinary work in the workspace and in .git still works.
		r := e.sh(`echo ok > ok.txt && echo ref > .git/HEAD.new && mkdir -p .git/objects && echo o > .git/objects/x`)
		if r.code != 0 {
			t.Errorf("writing ordinary files (also inside .git) failed:\n%s", r)
		}
		if !exists(filepath.Join(e.ws, ".git", "objects", "x")) {
			t.Errorf(".git/objects/x not written")
		}
	})

	t.Run("missing", func(t *testing.T) {
		e := newEnv(t)
		writeFile(t, filepath.Join(e.ws, "main.go"), "package main\n")
		before := listing(t, e.ws)
		attempts := []string{
			`mkdir -p .vscode && echo '{}' > .vscode/settings.json`,
			`mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit`,
			`mkdir -p .git && echo evil > .git/config`,
			`mkdir -p .claude && echo '{}' > .claude/settings.json`,
			`mkdir -p .cursor && echo x > .cursor/mcp.json`,
			`rmdir .git && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit`,
			`mv .git .git2 && mkdir -p .git/hooks && echo evil > .git/hooks/x`,
			`mv .vscode .vs2 && mkdir .vscode && echo evil > .vscode/settings.json`,
		}
		for _, a := range attempts {
			r := e.sh(a)
			if r.code == 0 {
				t.Errorf("%q succeeded:\n%s", a, r)
			}
		}
		// A missing .envrc or .mcp.json has no placeholder (their tools
		// ask before trusting a new one): made inside, it is renamed
		// aside after the run.
		for _, name := range []string{".envrc", ".mcp.json"} {
			r := e.sh(`echo evil > ` + name)
			if exists(filepath.Join(e.ws, name)) || !strings.Contains(r.stderr, "planted "+name) {
				t.Errorf("%s made inside was not disarmed after the run:\n%s", name, r)
			}
			if err := os.Remove(filepath.Join(e.ws, name+".cordon-disarmed")); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		after := listing(t, e.ws)
		if d := diffListing(before, after); d != "" {
			t.Errorf("placeholders or files were left in the workspace:\n%s", d)
		}
		// Inside, the placeholders look like empty read-only entries; an
		// ordinary file beside them can still be created.
		r := e.sh(`echo ok > ok.txt`)
		if r.code != 0 || readFile(t, filepath.Join(e.ws, "ok.txt")) != "ok\n" {
			t.Errorf("ordinary write beside placeholders failed:\n%s", r)
		}
		os.Remove(filepath.Join(e.ws, "ok.txt"))
		if d := diffListing(before, listing(t, e.ws)); d != "" {
			t.Errorf("placeholders were left in the workspace:\n%s", d)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		// A second sandbox on the same workspace ends while the first
		// still runs: the first one's placeholders must stay in force,
		// and none may remain once both ended.
		e := newEnv(t)
		writeFile(t, filepath.Join(e.ws, "main.go"), "package main\n")
		before := listing(t, e.ws)
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		defer cancel()
		first, errb, out := startCordon(t, e, ctx, "run", "--", "sh", "-c",
			`echo ready; i=0; while [ ! -e go-on ] && [ $i -lt 400 ]; do sleep 0.02; i=$((i+1)); done
			mkdir -p .claude && echo evil > .claude/settings.json && echo WROTE-CLAUDE; mkdir -p .vscode && echo x > .vscode/settings.json && echo WROTE-VSCODE; true`)
		if r := e.sh(`true`); r.code != 0 {
			t.Fatalf("second sandbox: %s", r)
		}
		writeFile(t, filepath.Join(e.ws, "go-on"), "")
		rest := readAllTimeout(t, out, cmdTimeout)
		code := waitCode(t, first)
		if strings.Contains(string(rest), "WROTE") {
			t.Errorf("a protected path became writable in a running sandbox after another one ended: %q (exit %d, stderr %q)", rest, code, errb.String())
		}
		os.Remove(filepath.Join(e.ws, "go-on"))
		if d := diffListing(before, listing(t, e.ws)); d != "" {
			t.Errorf("the workspace changed on the host (first sandbox said %q):\n%s", rest, d)
		}
	})

	t.Run("root-in-a-foreign-workspace", func(t *testing.T) {
		// sudo cordon in a checkout that another user owns: inside its
		// user namespace root may not create the placeholders there, so
		// cordon creates them before bwrap starts, and removes them after.
		if !isRoot() {
			t.Skip("only root can run cordon in a workspace another user owns")
		}
		e := newEnv(t)
		if err := os.Chown(e.ws, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		before := listing(t, e.ws)
		if r := e.sh(`test -d .vscode && test -d .claude && ! echo evil > .vscode/settings.json`); r.code != 0 {
			t.Errorf("run in a workspace owned by uid 65534:\n%s", r)
		}
		if d := diffListing(before, listing(t, e.ws)); d != "" {
			t.Errorf("the workspace changed on the host:\n%s", d)
		}
	})

	t.Run("git-status-clean", func(t *testing.T) {
		// The placeholders for a missing .vscode, .claude, .idea, ...
		// must not show in git status inside: an agent would commit them.
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git not installed")
		}
		e := newEnv(t)
		writeFile(t, filepath.Join(e.ws, "main.go"), "package main\n")
		for _, args := range [][]string{{"init", "-q"}, {"add", "main.go"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "init"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = e.ws
			cmd.Env = e.environ()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
		r := e.sh(`git status --porcelain --untracked-files=all; test -d .vscode && ! echo x > .vscode/settings.json`)
		if r.code != 0 || r.stdout != "" {
			t.Errorf("git status inside shows cordon's placeholders (or a placeholder is writable):\n%s", r)
		}
	})

	t.Run("git-without-hooks", func(t *testing.T) {
		// .git exists but .git/hooks and .git/config do not: the
		// placeholders go inside .git and must be removed afterwards.
		e := newEnv(t)
		writeFile(t, filepath.Join(e.ws, ".git", "HEAD"), "ref: refs/heads/main\n")
		before := listing(t, e.ws)
		for _, a := range []string{
			`mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit`,
			`echo evil > .git/config`,
			`mv .git .git2 && mkdir -p .git/hooks && echo evil > .git/hooks/x`,
		} {
			if r := e.sh(a); r.code == 0 {
				t.Errorf("%q succeeded:\n%s", a, r)
			}
		}
		if d := diffListing(before, listing(t, e.ws)); d != "" {
			t.Errorf("the workspace changed on the host:\n%s", d)
		}
	})
}

// TestPrivateTmp: the host's /tmp is invisible inside, and files created
// in /tmp inside do not appear on the host.
func TestPrivateTmp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	host, err := os.CreateTemp("/tmp", "cordon-itest-host-*")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(host, "HOST-TMP-SECRET-5e6f")
	host.Close()
	t.Cleanup(func() { os.Remove(host.Name()) })
	inner := fmt.Sprintf("/tmp/cordon-itest-inner-%d-%d", os.Getpid(), len(host.Name()))
	t.Cleanup(func() { os.Remove(inner) })

	r := e.sh(fmt.Sprintf(`ls -a /tmp; cat %s; echo inner > %s && cat %s`, host.Name(), inner, inner))
	if strings.Contains(r.all(), "HOST-TMP-SECRET-5e6f") || strings.Contains(r.stdout, filepath.Base(host.Name())) {
		t.Errorf("the host's /tmp file is visible inside:\n%s", r)
	}
	if !strings.Contains(r.stdout, "inner\n") {
		t.Errorf("writing /tmp inside failed:\n%s", r)
	}
	if exists(inner) {
		t.Errorf("%s, created inside, appeared on the host", inner)
	}
	r = e.sh(`echo "$TMPDIR"; d=$(mktemp -d) && echo ok > "$d/f" && cat "$d/f"`)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "/tmp\n") || !strings.Contains(r.stdout, "ok") {
		t.Errorf("TMPDIR/mktemp inside: \n%s", r)
	}
}

// TestWorkspaceConfig: a .cordon.yaml inside the workspace may add a deny
// but may not allow a write.
func TestWorkspaceConfig(t *testing.T) {
	t.Parallel()
	t.Run("write-refused", func(t *testing.T) {
		e := newEnv(t)
		writeFile(t, filepath.Join(e.ws, ".cordon.yaml"), "sandbox:\n  filesystem:\n    write:\n      - \"${HOME}\"\n")
		marker := filepath.Join(e.ws, "marker")
		r := e.sh("touch " + marker)
		if r.code != 125 {
			t.Errorf("exit %d, want 125:\n%s", r.code, r)
		}
		checkOneCordonLine(t, r)
		if !strings.Contains(r.stderr, ".cordon.yaml:") {
			t.Errorf("the error does not name .cordon.yaml:\n%s", r)
		}
		if exists(marker) {
			t.Errorf("the command ran")
		}
	})
	t.Run("deny-added", func(t *testing.T) {
		e := newEnv(t)
		writeFile(t, filepath.Join(e.ws, ".cordon.yaml"), "sandbox:\n  filesystem:\n    deny:\n      - \"**/*.pem\"\n      - \"${PROJECT_DIR}/internal-notes.txt\"\n")
		writeFile(t, filepath.Join(e.ws, "certs", "server.pem"), "PEM-SECRET-9a8b")
		writeFile(t, filepath.Join(e.ws, "internal-notes.txt"), "NOTES-SECRET-7c6d")
		writeFile(t, filepath.Join(e.ws, "public.txt"), "PUBLIC-OK")
		r := e.sh(`cat certs/server.pem; cat internal-notes.txt; cat public.txt`)
		if strings.Contains(r.all(), "PEM-SECRET-9a8b") || strings.Contains(r.all(), "NOTES-SECRET-7c6d") {
			t.Errorf("a file denied by .cordon.yaml was readable:\n%s", r)
		}
		if !strings.Contains(r.stdout, "PUBLIC-OK") {
			t.Errorf("public file not readable:\n%s", r)
		}
	})
}

// checkOneCordonLine checks that a setup failure printed exactly one line
// on stderr, starting "cordon:".
func checkOneCordonLine(t *testing.T, r runResult) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "cordon: ") {
		t.Errorf("want exactly one stderr line starting \"cordon: \", got %d:\n%s", len(lines), r.stderr)
	}
}

// TestHomeLinksIntoWorkspace: a dotfiles repository as the workspace, its
// files linked from the home under other names (~/.bashrc -> bashrc,
// ~/.config/nvim -> nvim): what the home's start-up files name is
// read-only under bubblewrap, so the shell the user opens next runs
// nothing the command wrote.
func TestHomeLinksIntoWorkspace(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			e := newEnv(t)
			if backend == "landlock" {
				requireLandlock(t)
			}
			marker := filepath.Join(e.root, "marker")
			writeFile(t, filepath.Join(e.ws, "bashrc"), "# rc\n")
			writeFile(t, filepath.Join(e.ws, "nvim", "init.lua"), "-- init\n")
			writeFile(t, filepath.Join(e.ws, "tools", "envrc"), "# envrc\n")
			mkdir(t, filepath.Join(e.home, ".config"))
			for link, target := range map[string]string{".bashrc": "bashrc", ".config/nvim": "nvim"} {
				if err := os.Symlink(filepath.Join(e.ws, target), filepath.Join(e.home, link)); err != nil {
					t.Fatal(err)
				}
			}
			// A protected name in the workspace that is a link into it.
			if err := os.Symlink("tools/envrc", filepath.Join(e.ws, ".envrc")); err != nil {
				t.Fatal(err)
			}
			r := e.sh(fmt.Sprintf(`echo "touch %s" >> bashrc; echo 'os.execute("touch %s")' > nvim/init.lua; echo "touch %s" >> tools/envrc; echo ok > notes.txt`, marker, marker, marker), "--backend", backend)
			for file, want := range map[string]string{"bashrc": "# rc\n", "nvim/init.lua": "-- init\n", "tools/envrc": "# envrc\n"} {
				if got := readFile(t, filepath.Join(e.ws, file)); got != want {
					t.Errorf("%s, which a protected path names, changed: %q\n%s", file, got, r)
				}
			}
			if readFile(t, filepath.Join(e.ws, "notes.txt")) != "ok\n" {
				t.Errorf("the rest of the workspace is not writable:\n%s", r)
			}
			sh := exec.Command("sh", "-c", `. ~/.bashrc`)
			sh.Env = e.environ()
			if out, err := sh.CombinedOutput(); err != nil || exists(marker) {
				t.Fatalf("the host's shell ran what the command wrote (%v):\n%s\nrun: %s", err, out, r)
			}
		})
	}
}
