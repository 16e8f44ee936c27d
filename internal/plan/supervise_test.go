package plan

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/monitor"
)

// TestSupervisionAllow: the supervisor's policy refuses what Landlock cannot
// (a denied file or glob inside the workspace, a protected path, a metadata
// change outside the write paths, removing a directory above a denied one)
// and what Landlock does (a read outside the read trees, a write outside
// the write trees), and allows the rest.
func TestSupervisionAllow(t *testing.T) {
	p, opts := testPolicy(t)
	p.Backend = backend.Landlock
	ws := p.Workspace
	vault := filepath.Join(ws, "sub", "vault")
	p.Deny = append(p.Deny, vault)
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := pl.Supervise.ForRun([]string{"/dev/pts/7"})
	s.start = time.Time{}
	home := opts.Home
	for _, c := range []struct {
		path string
		a    monitor.Access
		want bool
	}{
		{filepath.Join(ws, "main.go"), monitor.AccessRead, true},
		{filepath.Join(ws, "main.go"), monitor.AccessWrite, true},
		{filepath.Join(ws, "main.go"), monitor.AccessMeta, true},
		{filepath.Join(ws, "new.go"), monitor.AccessCreate, true},
		{"/usr/bin/sh", monitor.AccessRead, true},
		{"/usr/bin/sh", monitor.AccessWrite, false},
		{"/usr/bin/sh", monitor.AccessMeta, false},
		{"/usr/bin/sh", monitor.AccessPath, true},
		{filepath.Join(home, "notes.txt"), monitor.AccessRead, false},
		{filepath.Join(home, ".ssh", "id_rsa"), monitor.AccessMeta, false},
		{filepath.Join(home, ".ssh", "id_rsa"), monitor.AccessPath, false},
		{filepath.Join(ws, ".env"), monitor.AccessRead, false},
		{filepath.Join(ws, ".env"), monitor.AccessPath, false},
		{filepath.Join(ws, "sub", "x", ".env"), monitor.AccessCreate, false},
		{filepath.Join(ws, ".env"), monitor.AccessLink, false},
		{filepath.Join(ws, "sub", "secrets.yaml"), monitor.AccessRead, false},
		{filepath.Join(vault, "k"), monitor.AccessRead, false},
		{filepath.Join(ws, "sub"), monitor.AccessRemove, true},
		{filepath.Join(ws, "other"), monitor.AccessRemove, true},
		{filepath.Join(ws, ".git", "hooks", "pre-commit"), monitor.AccessCreate, false},
		{filepath.Join(ws, ".git", "hooks", "pre-commit"), monitor.AccessRead, true},
		{filepath.Join(ws, ".git", "config"), monitor.AccessWrite, false},
		{filepath.Join(ws, ".git", "index"), monitor.AccessWrite, true},
		{filepath.Join(ws, ".vscode", "tasks.json"), monitor.AccessCreate, false},
		{filepath.Join(ws, "a", ".git"), monitor.AccessRemove, false},
		{"/dev/null", monitor.AccessWrite, true},
		{"/dev/pts/7", monitor.AccessWrite, true},
		{"/dev/pts/8", monitor.AccessRead, false},
		{filepath.Join(pl.PrivateTmp, "x", ".git", "config"), monitor.AccessWrite, true},
	} {
		if got := s.Allow(c.path, c.a); got != c.want {
			t.Errorf("Allow(%s, %d) = %v, want %v", c.path, c.a, got, c.want)
		}
	}
	// sub holds a --deny directory (vault) and a glob's match
	// (secrets.yaml): moved, the glob still matches, the entry would not.
	if s.AllowMove(filepath.Join(ws, "sub"), filepath.Join(ws, "sub2")) {
		t.Errorf("sub, holding the --deny directory %s, may be renamed", vault)
	}
	// A repository cloned during the run is left to the check after it,
	// as bubblewrap leaves it; the workspace's own stays read-only.
	// The file clock is coarse (a tick): the fixture is made well before.
	time.Sleep(50 * time.Millisecond)
	r := pl.Supervise.ForRun(nil)
	time.Sleep(50 * time.Millisecond)
	cloned := filepath.Join(ws, "cloned", ".git")
	if err := os.MkdirAll(cloned, 0o755); err != nil {
		t.Fatal(err)
	}
	built := filepath.Join(ws, "built", "vendor")
	if err := os.MkdirAll(filepath.Dir(built), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := birthTime(cloned); ok {
		// A deny_write path is not left to the check after the run,
		// even inside a directory the run made.
		dw := *r
		dw.decider = func() *Supervision {
			q := *p
			q.DenyWrite = append(q.DenyWrite, built)
			return newSupervision(&q, opts.Home, pl.Spec.Landlock, nil)
		}().decider
		if dw.Allow(filepath.Join(built, "x.go"), monitor.AccessCreate) {
			t.Errorf("a deny_write path inside a directory made during the run is writable")
		}
		if !r.Allow(filepath.Join(cloned, "config"), monitor.AccessCreate) || r.Allow(filepath.Join(ws, ".git", "config"), monitor.AccessWrite) {
			t.Errorf("a repository made during the run: %v, the workspace's: %v", r.Allow(filepath.Join(cloned, "config"), monitor.AccessCreate), r.Allow(filepath.Join(ws, ".git", "config"), monitor.AccessWrite))
		}
	}
	q := *s
	q.denied = []string{filepath.Join(ws, "sub", "secrets.yaml")}
	if !q.AllowMove(filepath.Join(ws, "sub"), filepath.Join(ws, "sub2")) {
		t.Errorf("sub, holding only a glob's match, may not be renamed")
	}
}
