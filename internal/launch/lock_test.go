//go:build linux

package launch

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
)

// lockFixture is a fake home with a workspace and a state directory, and
// the default policy on the bwrap backend, whose plan has placeholders
// (.envrc, .vscode, ...) at the workspace's top.
type lockFixture struct {
	ws, state string
	pol       *policy.Policy
	opts      plan.Options
}

func newLockFixture(t *testing.T) *lockFixture {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	f := &lockFixture{ws: filepath.Join(home, "src", "proj"), state: filepath.Join(home, ".local", "state", "cordon")}
	if err := os.MkdirAll(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PATH": "/usr/bin:/bin", "HOME": home}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	p, err := policy.Load(policy.Options{Host: policy.Host{Home: home, Cwd: f.ws, Getenv: getenv}, SkipUserConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	p.Backend = backend.Bwrap
	f.pol = p
	// plan.Build needs no bubblewrap when the host's facts are given.
	f.opts = plan.Options{Home: home, Cwd: f.ws, StateDir: f.state, Getenv: getenv,
		Host: plan.Host{Bwrap: "/opt/fake/bin/bwrap", LandlockABI: 6, Helper: "/opt/fake/bin/cordon-helper", HelperSibling: true}}
	return f
}

// lockFiles lists what is left in the state directory's locks.
func lockFiles(t *testing.T, state string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(state, "locks"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestPlanBuiltUnderLock: a run whose plan was built while another run's
// placeholders existed binds them as they are; if the other run ended
// before this one locked the workspace for its run, the other removed
// them and bwrap failed ("Can't find source path"). RunCommand's plan is
// built under the lock (buildLocked), so they stay until the last run
// ends, which removes them and the lock file.
func TestPlanBuiltUnderLock(t *testing.T) {
	f := newLockFixture(t)
	plA, heldA, err := buildLocked(f.pol, []string{"true"}, f.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := Prepare(plA); err != nil {
		t.Fatal(err)
	}
	a, err := lockWorkspace(plA, heldA)
	if err != nil {
		t.Fatal(err)
	}
	if len(plA.Placeholders) == 0 {
		t.Fatal("the default policy's plan has no placeholders in an empty workspace")
	}
	plB, heldB, err := buildLocked(f.pol, []string{"true"}, f.opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plA.PlaceholderPaths() {
		if slices.Contains(plB.PlaceholderPaths(), p) || !slices.Contains(plB.Argv, p) {
			t.Fatalf("the second plan does not bind %s as it is", p)
		}
	}
	a.release() // A ends before B has locked for its run
	for _, p := range plA.PlaceholderPaths() {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("the first run's end removed %s, which the second run's plan binds: %v", p, err)
		}
	}
	b, err := lockWorkspace(plB, heldB)
	if err != nil {
		t.Fatal(err)
	}
	b.release()
	heldB.release() // what RunCommand's defer does: nothing more
	for _, p := range plA.PlaceholderPaths() {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("placeholder %s left after the last run", p)
		}
	}
	if left := lockFiles(t, f.state); len(left) > 0 {
		t.Errorf("left in the lock directory after the last run: %v", left)
	}
}

// TestWorkspaceLockContention: runs taking and releasing one workspace's
// lock at once, as many cordon processes do (each lock is its own open
// file, as in another process): while a run holds it, its placeholder is
// never removed by another; after the last, neither the placeholder nor
// the lock file nor the record is left.
func TestWorkspaceLockContention(t *testing.T) {
	f := newLockFixture(t)
	ph := filepath.Join(f.ws, ".envrc")
	pl := &plan.Plan{StateDir: f.state, Workspace: f.ws, Placeholders: []plan.Placeholder{{Path: ph, Kind: plan.PlaceholderDir}}}
	const workers, rounds = 8, 60
	var wg sync.WaitGroup
	errs := make(chan string, workers*rounds)
	deadline := time.Now().Add(30 * time.Second)
	for range workers {
		wg.Go(func() {
			for range rounds {
				if time.Now().After(deadline) {
					errs <- "out of time"
					return
				}
				l, err := lockWorkspace(pl, nil)
				if err != nil {
					errs <- err.Error()
					return
				}
				for range 2 {
					if _, err := os.Lstat(ph); err != nil {
						errs <- "placeholder removed while its run held the lock: " + err.Error()
					}
					time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
				}
				l.release()
			}
		})
	}
	wg.Wait()
	close(errs)
	seen := map[string]int{}
	for e := range errs {
		seen[e]++
	}
	for e, n := range seen {
		t.Errorf("%d times: %s", n, e)
	}
	if _, err := os.Lstat(ph); err == nil {
		t.Error("placeholder left after the last run")
	}
	if left := lockFiles(t, f.state); len(left) > 0 {
		t.Errorf("left in the lock directory after the last run: %v", left)
	}
}

// TestCommondirPlaceholderAtomic: a commondir placeholder appears with its
// content ("."), never empty: another run's repository discovery (or git
// on the host) reading an empty commondir took the repository for broken,
// and that run locked the workspace under another key, so that its end
// removed placeholders the other runs still used.
func TestCommondirPlaceholderAtomic(t *testing.T) {
	dir := t.TempDir()
	ph := filepath.Join(dir, "commondir")
	pl := &plan.Plan{Placeholders: []plan.Placeholder{{Path: ph, Kind: plan.PlaceholderCommondir}}}
	const rounds = 3000
	done := make(chan struct{})
	seen := make(chan int, 1)
	go func() {
		empty := 0
		for {
			select {
			case <-done:
				seen <- empty
				return
			default:
			}
			if b, err := os.ReadFile(ph); err == nil && string(b) != ".\n" {
				empty++
			}
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < rounds && time.Now().Before(deadline); i++ {
		if err := createPlaceholders(pl); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(ph); err != nil || string(b) != ".\n" {
			t.Fatalf("the placeholder holds %q (%v)", b, err)
		}
		if err := os.Remove(ph); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if n := <-seen; n > 0 {
		t.Errorf("a reader found the commondir placeholder without its content %d times", n)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// TestPlaceholderRecordBounded: while a run goes on (a dev server) the
// runs beside it, however many, record each placeholder once.
func TestPlaceholderRecordBounded(t *testing.T) {
	f := newLockFixture(t)
	phs := []plan.Placeholder{{Path: filepath.Join(f.ws, ".envrc"), Kind: plan.PlaceholderDir}, {Path: filepath.Join(f.ws, ".vscode"), Kind: plan.PlaceholderDir}}
	pl := &plan.Plan{StateDir: f.state, Workspace: f.ws, Placeholders: phs}
	server, err := lockWorkspace(pl, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		l, err := lockWorkspace(pl, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.release()
	}
	b, err := os.ReadFile(server.record)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines != len(phs) {
		t.Errorf("the record holds %d lines after 51 runs, want %d:\n%s", lines, len(phs), b)
	}
	server.release()
	if left := lockFiles(t, f.state); len(left) > 0 {
		t.Errorf("left in the lock directory after the last run: %v", left)
	}
}

// TestRemoveIfEmptyFollowsNoSymlink: a placeholder path whose parent the
// command replaced by a symlink (a nested repository's directory pointing
// elsewhere) is left alone: the empty .git/hooks and commondir it would
// name outside are not the run's to remove. Without a symlink, the empty
// placeholders go.
func TestRemoveIfEmptyFollowsNoSymlink(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(root, "outside", ".git")
	ws := filepath.Join(root, "ws")
	for _, d := range []string{filepath.Join(outside, "hooks"), filepath.Join(ws, "real", ".git", "hooks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{outside, filepath.Join(ws, "real", ".git")} {
		if err := os.WriteFile(filepath.Join(d, "commondir"), []byte(".\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "outside"), filepath.Join(ws, "nested")); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"nested/.git/hooks", "nested/.git/commondir"} {
		removeIfEmpty(filepath.Join(ws, rel))
	}
	for _, p := range []string{filepath.Join(outside, "hooks"), filepath.Join(outside, "commondir")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s, reached through a symlink, was removed: %v", p, err)
		}
	}
	for _, rel := range []string{"real/.git/hooks", "real/.git/commondir"} {
		p := filepath.Join(ws, rel)
		removeIfEmpty(p)
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("the empty placeholder %s stayed", p)
		}
	}
}

// TestPlaceholdersRemovedInTwo: the removal of many placeholders (two
// goroutines, by parent directory) removes every one, a placeholder
// below another before it, both at the last run's end and when the next
// run sweeps a killed run's; those the next run's command names stay,
// and stay recorded.
func TestPlaceholdersRemovedInTwo(t *testing.T) {
	f := newLockFixture(t)
	var phs []plan.Placeholder
	for i := range 40 {
		git := filepath.Join(f.ws, fmt.Sprintf("r%02d", i), ".git")
		if err := os.MkdirAll(git, 0o755); err != nil {
			t.Fatal(err)
		}
		phs = append(phs, plan.Placeholder{Path: filepath.Join(git, "config.worktree"), Kind: plan.PlaceholderFile},
			plan.Placeholder{Path: filepath.Join(git, "commondir"), Kind: plan.PlaceholderCommondir})
	}
	nested := append(slices.Clone(phs), plan.Placeholder{Path: filepath.Join(f.ws, "new"), Kind: plan.PlaceholderDir},
		plan.Placeholder{Path: filepath.Join(f.ws, "new", "hooks"), Kind: plan.PlaceholderDir})
	gone := func(t *testing.T, phs []plan.Placeholder, except string) {
		t.Helper()
		for _, ph := range phs {
			_, err := os.Lstat(ph.Path)
			if ph.Path == except {
				if err != nil {
					t.Errorf("%s, named by the next run's command, was removed: %v", ph.Path, err)
				}
			} else if !os.IsNotExist(err) {
				t.Errorf("%s was not removed: %v", ph.Path, err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		phs  []plan.Placeholder
	}{{"by parent", phs}, {"one below another", nested}} {
		t.Run(tc.name, func(t *testing.T) {
			pl := &plan.Plan{StateDir: f.state, Workspace: f.ws, Placeholders: tc.phs}
			l, err := lockWorkspace(pl, nil)
			if err != nil {
				t.Fatal(err)
			}
			l.release()
			gone(t, tc.phs, "")

			// A killed run: its lock dropped, its placeholders left.
			l, err = lockWorkspace(pl, nil)
			if err != nil {
				t.Fatal(err)
			}
			record := l.record
			l.f.Close()
			named := tc.phs[7].Path
			next, err := acquireLock(f.state, f.ws, func(p string) bool { return p == named })
			if err != nil {
				t.Fatal(err)
			}
			gone(t, tc.phs, named)
			if b, err := os.ReadFile(record); err != nil || string(b) != named+"\n" {
				t.Errorf("the record holds %q (%v), want only %s", b, err, named)
			}
			next.release()
			gone(t, tc.phs, "")
		})
	}
}
