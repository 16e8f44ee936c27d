//go:build linux

package main

import (
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// monitorFixture is a workspace that is a git repository, a secret key in
// ~/.ssh and a unix socket in the home directory that a test listens on
// (an agent's socket the policy does not list).
func monitorFixture(t *testing.T) (*sandboxEnv, string) {
	t.Helper()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, ".ssh", "id_rsa"), "PRIVATE-KEY-4d1f")
	if out, err := exec.Command("git", "init", "-q", e.ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	sock := filepath.Join(e.home, "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return e, sock
}

// attacks is a script that tries what the policy denies: a secret read
// twice, a write beside the workspace, a hook planted in the workspace's
// repository, a connect to a unix socket the policy does not list, the
// secret again through a symbolic link made in the workspace; and what it
// allows (a write in the workspace, a mkdir -p of directories that are
// there).
const attacks = `cat ~/.ssh/id_rsa; cat ~/.ssh/id_rsa
ln -s ~/.ssh/id_rsa key && cat key
mkdir -p /usr/local/bin
echo x > ../other/out.txt
echo evil > .git/hooks/pre-commit
curl -s --max-time 5 --unix-socket ~/agent.sock http://agent/ >/dev/null
echo ok > allowed.txt
echo t > "$TMPDIR/t" && cat "$TMPDIR/t" >/dev/null
true`

// TestCordonTest: cordon test reports each denial once, with its count,
// the program, the rule that decided and, where one may, the flag that
// would allow it; a secret and a protected path get none. The command ran
// confined: nothing it was denied happened. The records are in the audit
// log, which cordon violations lists.
func TestCordonTest(t *testing.T) {
	t.Parallel()
	for _, b := range []string{"bwrap", "landlock"} {
		t.Run(b, func(t *testing.T) {
			e, _ := monitorFixture(t)
			if b == "landlock" {
				requireLandlock(t)
			}
			r := e.run("test", "--backend", b, "--", "sh", "-c", attacks)
			if r.code != 0 {
				t.Fatalf("cordon test: %s", r)
			}
			// On the Landlock-only backend the supervisor refuses the
			// hook as bubblewrap's read-only mount does.
			hook := "file-write ~/src/proj/.git/hooks/pre-commit by sh: protected: **/.git/hooks/ (not to be allowed)"
			want := []string{
				"file-read ~/.ssh/id_rsa by cat (3 times): filesystem.deny: ~/.ssh (not to be allowed)",
				"file-write ~/src/other/out.txt by sh: filesystem.write: not listed; to allow it: --allow-write ~/src/other",
				hook,
			}
			sock := "network-connect ~/agent.sock by curl: unix_sockets: not listed; to allow it: --allow-unix-socket ~/agent.sock"
			if b == "landlock" && !strings.Contains(r.stderr, sock) {
				// Below Landlock ABI 9 nothing confines the socket: the
				// connect happened, and the report says so.
				sock = "network-connect ~/agent.sock by curl: unix_sockets: not listed denies it, but it happened: this backend cannot confine pathname unix sockets"
			}
			want = append(want, sock)
			for _, w := range want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("the report lacks %q:\n%s", w, r.stderr)
				}
			}
			for _, once := range []string{"~/.ssh/id_rsa by", "out.txt by", "pre-commit by", "agent.sock by"} {
				if n := strings.Count(r.stderr, once); n != 1 {
					t.Errorf("%q reported %d times, want once:\n%s", once, n, r.stderr)
				}
			}
			report := r.stderr[strings.Index(r.stderr, "cordon: test:"):]
			if strings.Contains(report, "allowed.txt") || strings.Contains(report, "/t by") || strings.Contains(report, "/usr") || strings.Contains(r.stdout, "PRIVATE-KEY") {
				t.Errorf("an allowed write reported, or the secret read:\n%s", r)
			}
			if exists(filepath.Join(e.sibling, "out.txt")) || exists(filepath.Join(e.ws, ".git", "hooks", "pre-commit")) || !exists(filepath.Join(e.ws, "allowed.txt")) {
				t.Error("the command was not confined while watched")
			}
			if !strings.Contains(r.stderr, "read: [\"~/src/other\"]") && !strings.Contains(r.stderr, "write: [\"~/src/other\"]") {
				t.Errorf("no config snippet:\n%s", r.stderr)
			}

			v := e.run("violations", "--json")
			var recs []violation
			for l := range strings.SplitSeq(strings.TrimSpace(v.stdout), "\n") {
				var rec violation
				if err := json.Unmarshal([]byte(l), &rec); err != nil {
					t.Fatalf("not a record: %q: %v", l, err)
				}
				recs = append(recs, rec)
			}
			found := map[string]violation{}
			for _, rec := range recs {
				found[rec.Operation+" "+strings.TrimPrefix(rec.Path, e.home)] = rec
			}
			if rec := found["file-write /src/proj/.git/hooks/pre-commit"]; rec.Action != "denied" {
				t.Errorf("the hook's record: %+v, want the action denied", rec)
			}
			for _, k := range []string{"file-read /.ssh/id_rsa", "file-write /src/other/out.txt", "network-connect /agent.sock"} {
				rec, ok := found[k]
				action := "denied"
				if b == "landlock" && k == "network-connect /agent.sock" && strings.Contains(sock, "it happened") {
					action = "warned"
				}
				if !ok || rec.Action != action || rec.Rule == "" || rec.Mode != "standard" || rec.SessionID == "" || rec.Command != "sh -c "+attacks {
					t.Errorf("audit record %q: %+v (found: %v)", k, rec, recs)
				}
			}
		})
	}
}

// TestOnViolationWarn: on_violation: warn says each distinct denial at the
// end of a cordon run; block (the default) says nothing and runs no
// monitor.
func TestOnViolationWarn(t *testing.T) {
	t.Parallel()
	e, _ := monitorFixture(t)
	r := e.sh("cat ~/.ssh/id_rsa; true")
	if r.code != 0 || strings.Contains(r.stderr, "cordon: denied:") {
		t.Fatalf("on_violation: block: %s", r)
	}
	writeFile(t, filepath.Join(e.home, ".config", "cordon", "config.yaml"), "sandbox:\n  on_violation: warn\n")
	r = e.sh("cat ~/.ssh/id_rsa; true")
	if r.code != 0 || strings.Count(r.stderr, "cordon: denied: file-read ~/.ssh/id_rsa by cat: filesystem.deny: ~/.ssh") != 1 {
		t.Fatalf("on_violation: warn: %s", r)
	}
}

// TestPermissiveMode: mode permissive lets what the policy denies happen
// (a secret read, a write beside the workspace) and records each as
// warned; the seccomp filter stays, and under bubblewrap the pid
// namespace.
func TestPermissiveMode(t *testing.T) {
	t.Parallel()
	for _, b := range []string{"bwrap", "landlock"} {
		t.Run(b, func(t *testing.T) {
			e, _ := monitorFixture(t)
			if b == "landlock" {
				requireLandlock(t)
			}
			r := e.run("run", "--mode", "permissive", "--backend", b, "--", "sh", "-c", `cat ~/.ssh/id_rsa; echo x > ../other/out.txt; echo "pid $$"; unshare -U true && echo UNSHARED; true`)
			if r.code != 0 {
				t.Fatalf("permissive: %s", r)
			}
			for _, w := range []string{"PRIVATE-KEY-4d1f", "pid "} {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q: %s", w, r)
				}
			}
			if pid := strings.TrimSpace(strings.SplitN(strings.SplitN(r.stdout, "pid ", 2)[1], "\n", 2)[0]); b == "bwrap" && len(pid) > 2 {
				t.Errorf("the shell's pid %s: want a small one, in a pid namespace of its own", pid)
			}
			if strings.Contains(r.stdout, "UNSHARED") {
				t.Error("a new user namespace was created: the seccomp filter must stay in mode permissive")
			}
			if !exists(filepath.Join(e.sibling, "out.txt")) {
				t.Error("mode permissive must let the write beside the workspace happen")
			}
			note := "cordon: degraded: mode permissive: the filesystem and network rules are not enforced"
			if b == "landlock" {
				note = "cordon: degraded: mode permissive on the Landlock-only backend: nothing confines the files and the network"
			}
			for _, w := range []string{note,
				"cordon: warning: file-read ~/.ssh/id_rsa by cat: filesystem.deny: ~/.ssh denies it, but it happened: mode permissive",
				"cordon: warning: file-write ~/src/other/out.txt by sh: filesystem.write: not listed denies it, but it happened: mode permissive",
			} {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			v := e.run("violations", "--json")
			if n := strings.Count(v.stdout, `"action":"warned"`); n != 2 || strings.Count(v.stdout, `"mode":"permissive"`) != 2 {
				t.Errorf("want the two accesses recorded as warned in mode permissive:\n%s", v.stdout)
			}
			if b == "landlock" {
				if r := e.run("learn", "--backend", "landlock", "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "cordon learn needs bubblewrap") {
					t.Errorf("cordon learn on the Landlock-only backend: %s", r)
				}
				return
			}
			// Even permissive, a run cannot loosen the next: cordon's
			// config, made where there was none, is moved aside, and an
			// existing guarded file stays read-only.
			writeFile(t, filepath.Join(e.home, ".gitconfig"), "[user]\n\tname = me\n")
			cfg := filepath.Join(e.home, ".config", "cordon", "config.yaml")
			r = e.run("run", "--mode", "permissive", "--", "sh", "-c", `mkdir -p ~/.config/cordon && echo "sandbox: {mode: off}" > ~/.config/cordon/config.yaml; echo "[core]" >> ~/.gitconfig; true`)
			if exists(cfg) || !exists(filepath.Join(e.home, ".config", "cordon.cordon-disarmed", "config.yaml")) ||
				!strings.Contains(r.stderr, "cordon: warning: mode permissive: the run created "+filepath.Join(e.home, ".config", "cordon")) {
				t.Errorf("a config planted in mode permissive was not moved aside: %s", r)
			}
			if readFile(t, filepath.Join(e.home, ".gitconfig")) != "[user]\n\tname = me\n" {
				t.Error("~/.gitconfig was changed in mode permissive")
			}
		})
	}
}

// learnThenRun runs cordon learn with flags and script, writes the policy
// it printed to a file, and runs script again under it with cordon test,
// in mode standard: it must pass with nothing denied but what learn left
// denied on purpose (the secret) or left out (a tool's telemetry).
func learnThenRun(t *testing.T, e *sandboxEnv, flags []string, script string) (policyYAML string, test runResult) {
	t.Helper()
	args := append(append([]string{"learn"}, flags...), "--", "sh", "-c", script)
	r := e.runTimeout(3*time.Minute, nil, args...)
	if r.code != 0 {
		t.Fatalf("cordon learn: %s", r)
	}
	learned := filepath.Join(e.root, "learned.yaml")
	writeFile(t, learned, r.stdout)
	args = append(append(append([]string{"test"}, flags...), "--config", learned, "--"), "sh", "-c", script)
	test = e.runTimeout(3*time.Minute, nil, args...)
	if test.code != 0 {
		t.Fatalf("the command under the learnt policy:\n%s\n%s", r.stdout, test)
	}
	for _, l := range unlistedDenials(r.stdout, test.stderr) {
		t.Errorf("denied under the learnt policy, and not listed in it: %s\npolicy:\n%s", l, r.stdout)
	}
	return r.stdout, test
}

// TestLearn: cordon learn on real commands yields a policy under which the
// same command passes in mode standard, which allows no secret, and during
// which no secret was readable.
func TestLearn(t *testing.T) {
	t.Parallel()
	t.Run("go build to a directory outside the workspace", func(t *testing.T) {
		e, _ := monitorFixture(t)
		goBin := requireGo(t)
		seedGoCache(t, e)
		e.extra = append(e.extra, "PATH="+filepath.Dir(goBin)+":/usr/local/bin:/usr/bin:/bin", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
		writeFile(t, filepath.Join(e.ws, "go.mod"), "module example.com/learn\n\ngo 1.22\n")
		writeFile(t, filepath.Join(e.ws, "main.go"), "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"learnt\") }\n")
		mkdir(t, filepath.Join(e.home, "out"))
		script := `go build -o ~/out/app . && ~/out/app && cat ~/.ssh/id_rsa; true`
		y, test := learnThenRun(t, e, []string{"--env", "GOFLAGS", "--env", "GOPROXY", "--env", "GOTOOLCHAIN"}, script)
		if !strings.Contains(y, `"~/out"`) {
			t.Errorf("the learnt policy does not let the build write ~/out:\n%s", y)
		}
		if !strings.Contains(test.stdout, "learnt") || strings.Contains(y+test.all(), "PRIVATE-KEY") {
			t.Errorf("the build did not run, or the secret was read:\n%s\n%s", y, test)
		}
		for _, l := range strings.Split(y, "\n") {
			if !strings.HasPrefix(l, "#") && strings.Contains(l, ".ssh") {
				t.Errorf("the learnt policy allows the secret: %q", l)
			}
		}
		if !strings.Contains(y, "#     ~/.ssh/id_rsa") {
			t.Errorf("the secret is not listed as left denied:\n%s", y)
		}
	})
	t.Run("a script that reads a project beside the workspace and writes a cache", func(t *testing.T) {
		e, _ := monitorFixture(t)
		mkdir(t, filepath.Join(e.home, ".cache", "mytool"))
		script := `cat ../other/notes.txt && echo built > ~/.cache/mytool/stamp && cat ~/.cache/mytool/stamp`
		y, test := learnThenRun(t, e, nil, script)
		if !strings.Contains(y, `read: ["~/src/other"]`) || !strings.Contains(y, `write: ["~/.cache/mytool"]`) {
			t.Errorf("the learnt policy does not read ~/src/other and write ~/.cache/mytool:\n%s", y)
		}
		if !strings.Contains(test.stdout, "SIBLING-SECRET-7f3a") || !strings.Contains(test.stdout, "built") || !strings.Contains(test.stderr, "cordon: test: nothing was denied") {
			t.Errorf("the script under the learnt policy:\n%s", test)
		}
	})
	t.Run("git commit", func(t *testing.T) {
		e, _ := monitorFixture(t)
		writeFile(t, filepath.Join(e.ws, "a.txt"), "a\n")
		for _, args := range [][]string{{"-C", e.ws, "add", "a.txt"}, {"-C", e.ws, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "a"}} {
			if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
		script := `echo b >> a.txt && git -c user.name=t -c user.email=t@example.com commit -qam b && git log --oneline | wc -l`
		_, test := learnThenRun(t, e, nil, script)
		if !strings.Contains(test.stdout, "3") && !strings.Contains(test.stdout, "2") {
			t.Errorf("no commit under the learnt policy: %s", test)
		}
	})
	t.Run("npm install from a registry on 127.0.0.1 with the network denied", func(t *testing.T) {
		needProgram(t, "npm")
		e, _ := monitorFixture(t)
		reg := newRegistry(t)
		writeFile(t, filepath.Join(e.home, ".npmrc"), "registry="+reg.srv.URL+"/\nupdate-notifier=false\naudit=false\nfund=false\n")
		writeFile(t, filepath.Join(e.ws, "package.json"), `{"name":"proj","version":"1.0.0","dependencies":{"cordon-pad":"1.0.0"}}`)
		base := filepath.Join(e.root, "base.yaml")
		writeFile(t, base, "sandbox:\n  network:\n    mode: deny\n")
		script := `rm -rf node_modules package-lock.json; npm install --no-audit --no-fund && node -e 'console.log(require("cordon-pad")("ok"))'`
		y, test := learnThenRun(t, e, []string{"--config", base}, script)
		port := reg.srv.URL[strings.LastIndex(reg.srv.URL, ":")+1:]
		if !strings.Contains(y, "mode: loopback") || !strings.Contains(y, "forward_ports: ["+port+"]") {
			t.Errorf("the learnt policy does not forward the registry's port %s:\n%s", port, y)
		}
		if !strings.Contains(test.stdout, "[ok]") {
			t.Errorf("npm install under the learnt policy: %s", test)
		}
	})
}

// TestCordonTestConnect: with the network denied, a TCP connect (to a
// server the test runs on 127.0.0.1: nothing leaves the machine) is
// reported once with the network rule.
func TestCordonTestConnect(t *testing.T) {
	t.Parallel()
	e, _ := monitorFixture(t)
	l := testenv.Listen(t)
	defer l.Close()
	addr := l.Addr().String()
	r := e.run("test", "--net", "deny", "--", "sh", "-c", "curl -s --max-time 3 http://"+addr+"/; curl -s --max-time 3 http://"+addr+"/; true")
	want := "network-connect " + addr + " by curl (2 times): network: deny"
	if r.code != 0 || strings.Count(r.stderr, "network-connect "+addr) != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("want %q once: %s", want, r)
	}
}
