//go:build unix

package planted

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
)

// TestCheckGitLooks: in a hooks directory that core.hooksPath names and a
// config file that include.path names (Before.Git), what the run added is
// disarmed as in .git/hooks and .git/config: a new or changed executable
// loses its execute bits, a new key that runs a program is commented out;
// what was there before stays; a hooks directory the run created counts
// whole; with KeptReadOnly (read-only during the run) too, since a file
// that changed is not the one the mount kept (another process that
// removes or renames the path takes the mount away): it is examined as
// any.
func TestCheckGitLooks(t *testing.T) {
	for _, trust := range []bool{false, true} {
		ws := t.TempDir()
		hooks, fresh, inc := filepath.Join(ws, ".githooks"), filepath.Join(ws, "new-hooks"), filepath.Join(ws, ".gitconfig-local")
		mustWrite(t, filepath.Join(hooks, "pre-push"), "#!/bin/sh\n", 0o755)
		mustWrite(t, inc, "[core]\n\tfsmonitor = user-monitor\n", 0o644)
		b := Snapshot(nil, nil).Git(policy.GitLooks{Hooks: []string{hooks, fresh}, Configs: []string{inc}})
		time.Sleep(10 * time.Millisecond)
		mustWrite(t, filepath.Join(hooks, "pre-commit"), "#!/bin/sh\ntouch pwned\n", 0o755)
		mustWrite(t, filepath.Join(fresh, "post-checkout"), "#!/bin/sh\ntouch pwned\n", 0o755)
		f, err := os.OpenFile(inc, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("[diff \"x\"]\n\ttextconv = touch pwned\n")
		f.Close()
		opts := Options{}
		if trust {
			// Read-only during the run: the existing ones, and the one
			// that did not exist (it is checked all the same).
			opts.KeptReadOnly = []string{hooks, fresh, inc}
		}
		rep, err := b.Check([]string{ws}, opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range rep.Findings {
			got = append(got, f.Rule+" "+f.Rel)
		}
		want := "planted:diff.*.textconv .gitconfig-local|planted:hook .githooks/pre-commit|planted:hook new-hooks/post-checkout"
		if strings.Join(got, "|") != want {
			t.Errorf("trust=%v: findings %q, want %q (%s)", trust, got, want, rep.Incomplete)
		}
		for _, h := range []string{filepath.Join(hooks, "pre-commit"), filepath.Join(fresh, "post-checkout"), filepath.Join(hooks, "pre-push")} {
			fi, err := os.Stat(h)
			armed := err == nil && fi.Mode()&0o111 != 0
			if wantArmed := strings.HasSuffix(h, "pre-push"); armed != wantArmed {
				t.Errorf("trust=%v: %s armed=%v", trust, h, armed)
			}
		}
		data, _ := os.ReadFile(inc)
		if disarmed := strings.Contains(string(data), "# cordon-disarmed: \ttextconv"); !disarmed || !strings.Contains(string(data), "\n\tfsmonitor = user-monitor") {
			t.Errorf("trust=%v: %s = %q", trust, inc, data)
		}
	}
}

func mustWrite(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// TestSinceGitLooks: for a run killed before its check, where else git
// looks is judged by when things changed: a hook older than the run is
// not reported, one written since is (and left armed: KeepArmed).
func TestSinceGitLooks(t *testing.T) {
	ws := t.TempDir()
	hooks := filepath.Join(ws, ".githooks")
	mustWrite(t, filepath.Join(hooks, "old"), "#!/bin/sh\n", 0o755)
	time.Sleep(ctimeSlack + 200*time.Millisecond)
	start := time.Now()
	mustWrite(t, filepath.Join(hooks, "pre-commit"), "#!/bin/sh\ntouch pwned\n", 0o755)
	rep, err := Since(start).Git(policy.GitLooks{Hooks: []string{hooks}}).Check([]string{ws}, Options{KeepArmed: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Rel != ".githooks/pre-commit" || rep.Findings[0].Disarmed {
		t.Errorf("findings %+v", rep.Findings)
	}
}

// TestGitLooksLinkNotTrusted: an included config that is a symbolic link
// is checked after the run even when listed in KeptReadOnly (a mount keeps only its
// target, when visible): a link the run replaced with a file of its own is
// disarmed.
func TestGitLooksLinkNotTrusted(t *testing.T) {
	ws := t.TempDir()
	inc := filepath.Join(ws, ".gitconfig-local")
	mustWrite(t, filepath.Join(ws, "real.cfg"), "[user]\n\tname = t\n", 0o644)
	if err := os.Symlink("real.cfg", inc); err != nil {
		t.Fatal(err)
	}
	b := Snapshot(nil, nil).Git(policy.GitLooks{Configs: []string{inc}})
	time.Sleep(10 * time.Millisecond)
	if err := os.Remove(inc); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, inc, "[core]\n\tfsmonitor = touch pwned\n", 0o644)
	rep, err := b.Check([]string{ws}, Options{KeptReadOnly: []string{inc}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Rule != "planted:core.fsmonitor" || !rep.Findings[0].Disarmed {
		t.Errorf("findings %+v", rep.Findings)
	}
}

// TestGitLooksPlaceholderTakenAway: the run's placeholder for a missing
// hooks directory that core.hooksPath names (ignored by the check) is
// trusted only while it is the directory the launcher made: removed by
// another process (which takes the mount on it away) and made anew with a
// hook, it is checked as the run's.
func TestGitLooksPlaceholderTakenAway(t *testing.T) {
	ws := t.TempDir()
	hooks := filepath.Join(ws, ".githooks")
	if err := os.Mkdir(hooks, 0o755); err != nil { // the placeholder
		t.Fatal(err)
	}
	b := Snapshot(nil, nil).Git(policy.GitLooks{Hooks: []string{hooks}})
	time.Sleep(10 * time.Millisecond)
	if err := os.Remove(hooks); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(hooks, "pre-commit"), "#!/bin/sh\ntouch pwned\n", 0o755)
	rep, err := b.Check([]string{ws}, Options{Ignore: []string{hooks}, KeptReadOnly: []string{hooks}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Rule != "planted:hook" || !rep.Findings[0].Disarmed {
		t.Fatalf("findings %+v, want the hook disarmed", rep.Findings)
	}
}
