//go:build linux

package main

import (
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
// repository, a connect to a unix socket the policy does not list; and
// what it allows (a write in the workspace).
const attacks = `cat ~/.ssh/id_rsa; cat ~/.ssh/id_rsa
echo x > ../other/out.txt
echo evil > .git/hooks/pre-commit
curl -s --max-time 5 --unix-socket ~/agent.sock http://agent/ >/dev/null
echo ok > allowed.txt
true`

// TestCordonTest: cordon test reports each denial once, with its count,
// the program, the rule that decided and, where one may, the flag that
// would allow it; a secret and a protected path get none. The command ran
// confined: nothing it was denied happened. The records are in the audit
// log, which cordon violations lists.
func TestCordonTest(t *testing.T) {
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
			hook := "file-write ~/src/proj/.git/hooks/pre-commit by sh: protected: **/.git/hooks/ (not to be allowed)"
			if b == "landlock" {
				// Landlock cannot carve a read-only path out of a
				// writable root: the hook is written (and would be
				// disarmed were it executable), and the report says so.
				hook = "file-write ~/src/proj/.git/hooks/pre-commit by sh: protected: **/.git/hooks/; it happened all the same: this backend cannot enforce it"
			}
			want := []string{
				"file-read ~/.ssh/id_rsa by cat (2 times): filesystem.deny: ~/.ssh (not to be allowed)",
				"file-write ~/src/other/out.txt by sh: filesystem.write: not listed; to allow it: --allow-write ~/src/other",
				hook,
				"network-connect ~/agent.sock by curl: unix_sockets: not listed; to allow it: --allow-unix-socket ~/agent.sock",
			}
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
			if strings.Contains(r.stderr, "allowed.txt") || strings.Contains(r.stdout, "PRIVATE-KEY") {
				t.Errorf("an allowed write reported, or the secret read:\n%s", r)
			}
			if exists(filepath.Join(e.sibling, "out.txt")) || b == "bwrap" && exists(filepath.Join(e.ws, ".git", "hooks", "pre-commit")) || !exists(filepath.Join(e.ws, "allowed.txt")) {
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
			hookAction := map[string]string{"bwrap": "denied", "landlock": "warned"}[b]
			if rec := found["file-write /src/proj/.git/hooks/pre-commit"]; rec.Action != hookAction {
				t.Errorf("the hook's record: %+v, want the action %s", rec, hookAction)
			}
			for _, k := range []string{"file-read /.ssh/id_rsa", "file-write /src/other/out.txt", "network-connect /agent.sock"} {
				rec, ok := found[k]
				if !ok || rec.Action != "denied" || rec.Rule == "" || rec.Mode != "standard" || rec.SessionID == "" || rec.Command != "sh -c "+attacks {
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
