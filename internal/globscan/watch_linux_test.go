//go:build linux

package globscan

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testenv"
	"golang.org/x/sys/unix"
)

// watchedScan scans root with c and checks the result against a scan
// without a cache; it returns whether the scan was answered by the
// watcher (CacheStats.Reused went up).
func watchedScan(t *testing.T, c *Cache, root string) bool {
	t.Helper()
	before := c.Stats().Reused
	ms, _, err := c.ScanPatterns(root, cachePats, Limits{})
	if err != nil {
		t.Fatalf("watched scan: %v", err)
	}
	if got, want := rels(ms), plainScan(t, root); !slices.Equal(got, want) {
		t.Fatalf("watched scan: %q, want %q", got, want)
	}
	return c.Stats().Reused > before
}

// watchedTree makes the tree cacheTree0 and a cache of it (its clock
// ahead) watched with at most limit watches (0: the default), closed at
// the end of the test.
func watchedTree(t *testing.T, limit int) (root string, c *Cache) {
	t.Helper()
	root = t.TempDir()
	mkTree(t, root, cacheTree0...)
	c = newTestCache(t.TempDir(), ahead)
	testenv.Inotify(t, func() error { return c.Watch(limit) })
	t.Cleanup(func() { c.Close() })
	return root, c
}

// settle scans until the watcher answers: a scan that read watches the
// directories new to it, and the next, read with every directory
// watched, is vouched for.
func settle(t *testing.T, c *Cache, root string) {
	t.Helper()
	for range 4 {
		if watchedScan(t, c, root) {
			return
		}
	}
	t.Fatalf("the watcher never answered (%d watches)", c.Stats().Watches)
}

// firstSettle is settle on a cache that scans root the first time: the
// first two scans read.
func firstSettle(t *testing.T, c *Cache, root string) {
	t.Helper()
	for i := range 2 {
		if watchedScan(t, c, root) {
			t.Fatalf("scan %d answered by the watcher: the first two read", i+1)
		}
	}
	settle(t, c, root)
}

// TestWatchSeesChanges: a watched cache answers a scan without reading
// once every directory of the tree is watched, and every change of
// TestCacheSeesChanges made since (and a change below a directory made
// since the tree was watched) makes the next scan read, and find what
// a scan without a cache finds.
func TestWatchSeesChanges(t *testing.T) {
	for _, tc := range watchChanges {
		t.Run(tc.name, func(t *testing.T) {
			root, c := watchedTree(t, 0)
			firstSettle(t, c, root)
			if !watchedScan(t, c, root) {
				t.Fatal("an unchanged tree was read again")
			}
			tc.change(t, root)
			if watchedScan(t, c, root) {
				t.Fatal("the scan after the change was answered by the watcher")
			}
			// The new directories are watched in turn.
			settle(t, c, root)
			mkTree(t, root, "a/b/d/later/.env")
			if watchedScan(t, c, root) {
				t.Fatal("the scan after a .env made in a new directory was answered by the watcher")
			}
		})
	}
}

// TestWatchVouches: with no scan answered whole (noMemo), a watched
// cache takes every directory watched before the last scan began and
// unchanged since without an lstat (Stats.Vouched), and after each change
// of watchChanges still finds what a scan without a cache finds (the
// changed directory, a replaced one, an overflow and a mount are not
// vouched for), and vouches for the tree again once settled.
func TestWatchVouches(t *testing.T) {
	scan := func(t *testing.T, c *Cache, root string) Stats {
		t.Helper()
		ms, st, err := c.ScanPatterns(root, cachePats, Limits{})
		if err != nil {
			t.Fatalf("watched scan: %v", err)
		}
		if got, want := rels(ms), plainScan(t, root); !slices.Equal(got, want) {
			t.Fatalf("watched scan: %q, want %q", got, want)
		}
		return st
	}
	// settled scans until every directory but the root is vouched for.
	settled := func(t *testing.T, c *Cache, root string) {
		t.Helper()
		for range 4 {
			if st := scan(t, c, root); st.Vouched >= st.Dirs-1 && st.Dirs > 1 {
				return
			}
		}
		t.Fatalf("the watcher never vouched for the tree (%d watches)", c.Stats().Watches)
	}
	for _, tc := range watchChanges {
		t.Run(tc.name, func(t *testing.T) {
			root, c := watchedTree(t, 0)
			c.noMemo = true
			if st := scan(t, c, root); st.Vouched != 0 {
				t.Fatalf("the first scan vouched for %d directories", st.Vouched)
			}
			if st := scan(t, c, root); st.Vouched != 0 {
				t.Fatalf("the second scan vouched for %d directories, watched only after the first began", st.Vouched)
			}
			settled(t, c, root)
			tc.change(t, root)
			st := scan(t, c, root)
			switch {
			case stillVouched[tc.name] && st.Vouched != st.Dirs-1:
				// Read again, the root lists every subdirectory with
				// the inode number recorded, and the files changed
				// below match as recorded: the watches answer.
				t.Fatalf("%d of the %d directories below the root vouched for after a change that leaves every record as it was", st.Vouched, st.Dirs-1)
			case !stillVouched[tc.name] && st.Vouched >= st.Dirs-1:
				t.Fatalf("all %d directories but the root vouched for after the change", st.Vouched)
			}
			settled(t, c, root)
			mkTree(t, root, "a/b/d/later/.env")
			scan(t, c, root)
		})
	}
}

// watchChanges are the changes the watcher must see: those of
// TestCacheSeesChanges, a directory replaced, the root replaced and an
// overflow of the queue.
var watchChanges = []struct {
	name   string
	change func(t *testing.T, root string)
}{
	{"a .env created", func(t *testing.T, root string) { mkTree(t, root, "a/b/c/.env") }},
	{"a file renamed to .env", func(t *testing.T, root string) {
		must(t, os.Rename(filepath.Join(root, "sub", "plain.txt"), filepath.Join(root, "sub", ".env")))
	}},
	{"a .env removed", func(t *testing.T, root string) { must(t, os.Remove(filepath.Join(root, ".env"))) }},
	{"directories made and removed in the root (placeholders)", func(t *testing.T, root string) {
		for _, d := range []string{".vscode", ".idea"} {
			must(t, os.Mkdir(filepath.Join(root, d), 0o755))
			must(t, os.Remove(filepath.Join(root, d)))
		}
	}},
	{"files made and removed below (placeholders)", func(t *testing.T, root string) {
		for _, f := range []string{"repo/.git/config.worktree", "repo/.git/commondir", "a/b/c/.env"} {
			mkTree(t, root, f)
			must(t, os.Remove(filepath.Join(root, f)))
		}
	}},
	{"a file made below that matches nothing", func(t *testing.T, root string) { mkTree(t, root, "a/b/c/notes.txt") }},
	{"a .env replaced by a link", func(t *testing.T, root string) {
		must(t, os.Remove(filepath.Join(root, ".env")))
		must(t, os.Symlink("top.env.txt", filepath.Join(root, ".env")))
		mkTree(t, root, "sub/secrets.yaml")
		must(t, os.Remove(filepath.Join(root, "sub", "secrets.yaml")))
		must(t, os.Symlink("plain.txt", filepath.Join(root, "sub", "secrets.yaml")))
	}},
	{"a directory removed and made again (its inode number may come back)", func(t *testing.T, root string) {
		must(t, os.RemoveAll(filepath.Join(root, "sub")))
		mkTree(t, root, "sub/deep/secrets.yaml")
	}},
	{"a directory holding a .env moved in", func(t *testing.T, root string) {
		other := filepath.Join(filepath.Dir(root), filepath.Base(root)+"-other")
		mkTree(t, other, "x/y/.env")
		must(t, os.Rename(filepath.Join(other, "x"), filepath.Join(root, "a", "b", "d", "x")))
	}},
	{"a directory replaced by a link", func(t *testing.T, root string) {
		must(t, os.RemoveAll(filepath.Join(root, "a", "b", "c")))
		must(t, os.Symlink("/", filepath.Join(root, "a", "b", "c")))
	}},
	{"a directory replaced by another of the same name", func(t *testing.T, root string) {
		must(t, os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub.old")))
		mkTree(t, root, "sub/deep/secrets.yaml")
	}},
	{"a git directory made", func(t *testing.T, root string) { mkTree(t, root, "a/b/d/.git/HEAD") }},
	{"a mode changed (chmod)", func(t *testing.T, root string) { must(t, os.Chmod(filepath.Join(root, "sub", "deep"), 0o700)) }},
	{"a file's mode changed", func(t *testing.T, root string) { must(t, os.Chmod(filepath.Join(root, "sub", "plain.txt"), 0o755)) }},
	{"the root replaced", func(t *testing.T, root string) {
		must(t, os.Rename(root, root+".old"))
		mkTree(t, root, "new/.env")
	}},
	{"the queue overflowed", func(t *testing.T, root string) {
		b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
		must(t, err)
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		must(t, err)
		if n > 100_000 {
			t.Skipf("max_queued_events is %d: too many files to make", n)
		}
		// A chmod is an event (IN_ATTRIB), and the cheapest; of
		// two files in turn, so that none is merged with the one
		// queued before it.
		files := []string{filepath.Join(root, "sub", "plain.txt"), filepath.Join(root, "a", "b", "c", "f.txt")}
		for i := range n + 10 {
			must(t, os.Chmod(files[i%2], 0o600|fs.FileMode(i/2%2)<<6))
		}
		mkTree(t, root, "sub/.env")
	}},
}

// stillVouched are the watchChanges after which every directory but the
// root is still vouched for: only the root's entries changed, or below
// only files that match as recorded.
var stillVouched = map[string]bool{
	"a .env removed": true, "directories made and removed in the root (placeholders)": true,
	"a file's mode changed": true, "files made and removed below (placeholders)": true,
	"a file made below that matches nothing": true,
}

// TestWatchNewDirectory: a directory made after the tree was watched, and
// a .env made in it after the next scan (which watches it), are found.
func TestWatchNewDirectory(t *testing.T) {
	root, c := watchedTree(t, 0)
	firstSettle(t, c, root)
	mkTree(t, root, "fresh/deeper/")
	if watchedScan(t, c, root) {
		t.Fatal("the scan after a directory was made was answered by the watcher")
	}
	mkTree(t, root, "fresh/deeper/.env")
	if watchedScan(t, c, root) {
		t.Fatal("a .env made in a directory made since was not looked for")
	}
}

// TestWatchLimit: a tree with more directories than the watches left is
// read at every scan, and still found right, as without Watch; Watched
// says so (the walk server then does not repeat its scans for nothing).
func TestWatchLimit(t *testing.T) {
	root, c := watchedTree(t, 3)
	for i := range 4 {
		if watchedScan(t, c, root) {
			t.Fatalf("scan %d answered by the watcher, over its limit of 3 watches", i)
		}
		if c.Watched(root, cachePats) {
			t.Fatalf("scan %d: Watched, over the limit of 3 watches", i)
		}
	}
	if n := c.Stats().Watches; n != 0 {
		t.Errorf("%d watches, want none", n)
	}
	if root2, c2 := watchedTree(t, 0); watchedScan(t, c2, root2) || !c2.Watched(root2, cachePats) {
		t.Error("a tree within the limit: not Watched after its first scan")
	}
	mkTree(t, root, "sub/deep/.env")
	if watchedScan(t, c, root) {
		t.Fatal("answered by the watcher")
	}
}

// asMounter runs the calling test again, alone, as uid 0 of a user and
// mount namespace of its own, when this process is not root: mounting
// needs it, and an unprivileged user gets it there. It returns true in
// the process that should go on with the test (root, or the test run
// again inside the namespaces); false when the test ran in the child.
// Without user namespaces the test skips, or fails under CI=true.
func asMounter(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() == 0 {
		return true
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	if err != nil && len(out) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mounting needs root or a user namespace: %v", err)
		}
		t.Skipf("mounting needs root or a user namespace: %v", err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s as uid 0 of a user namespace: %v\n%s", t.Name(), err, out)
	}
	return false
}

// TestWatchMount: a file system mounted over a directory of the tree
// (which sends no inotify event) makes the next scan read. Mounting
// needs root, or a user and mount namespace of the test's own
// (asMounter).
func TestWatchMount(t *testing.T) {
	if !asMounter(t) {
		return
	}
	root, c := watchedTree(t, 0)
	firstSettle(t, c, root)
	over := filepath.Join(root, "a", "b")
	if err := unix.Mount("tmpfs", over, "tmpfs", 0, ""); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	defer unix.Unmount(over, unix.MNT_DETACH)
	if watchedScan(t, c, root) {
		t.Fatal("the scan after a mount was answered by the watcher")
	}
}

// TestWatchHoldMounts: while the mount table is held (HoldMounts), the
// scans after the first do not read it again: a mount made then is seen
// by the first scan after the release, not before. Mounting needs root
// (asMounter).
func TestWatchHoldMounts(t *testing.T) {
	if !asMounter(t) {
		return
	}
	root, c := watchedTree(t, 0)
	firstSettle(t, c, root)
	release := c.HoldMounts()
	if !watchedScan(t, c, root) {
		t.Fatal("the first scan of a hold was not answered by the watcher")
	}
	over := filepath.Join(root, "a", "b")
	if err := unix.Mount("tmpfs", over, "tmpfs", 0, ""); err != nil {
		release()
		t.Skipf("mounting a tmpfs: %v", err)
	}
	defer unix.Unmount(over, unix.MNT_DETACH)
	// Within the hold the table is not read again: the scan is answered
	// (reading what the tree held when the hold's first scan began).
	before := c.Stats().Reused
	if _, _, err := c.ScanPatterns(root, cachePats, Limits{}); err != nil {
		t.Fatal(err)
	}
	if c.Stats().Reused == before {
		t.Error("a scan within the hold read the mount table again")
	}
	release()
	release() // once only
	if watchedScan(t, c, root) {
		t.Fatal("the scan after the release, after a mount, was answered by the watcher")
	}
}

// TestWatchBounds: scans of one root and patterns under other bounds
// (the plan's and the check's) share what the watcher vouches for while
// it lies within their bounds; a scan whose bound the earlier one passed
// ends at its bound, as without Watch.
func TestWatchBounds(t *testing.T) {
	root, c := watchedTree(t, 0)
	firstSettle(t, c, root)
	_, st, err := c.ScanPatterns(root, cachePats, Limits{})
	must(t, err)
	before := c.Stats().Reused
	if _, _, err := c.ScanPatterns(root, cachePats, Limits{MaxEntries: st.Entries}); err != nil {
		t.Fatal(err)
	}
	if c.Stats().Reused != before+1 {
		t.Error("a scan within its bound was not answered by the watcher")
	}
	if _, _, err := c.ScanPatterns(root, cachePats, Limits{MaxEntries: st.Entries - 1}); err == nil {
		t.Error("a scan past its bound ended without its error")
	}
}

// TestWatchVouchesRacy: directories read in the tick of their last change
// (a tree made just now, read with the real clock: no ctime can tell a
// later change in the same tick) are read again by a cache without a
// watcher, but a watched cache vouches for them once watched: their
// watches see any change, whatever the clock. A file made and removed
// in one of them since (a run's placeholder) keeps it vouched for; a
// .env made in it is found.
func TestWatchVouchesRacy(t *testing.T) {
	root := t.TempDir()
	mkTree(t, root, cacheTree0...)
	c := newTestCache(t.TempDir(), time.Now)
	testenv.Inotify(t, func() error { return c.Watch(0) })
	t.Cleanup(func() { c.Close() })
	c.noMemo = true
	scan := func() Stats {
		t.Helper()
		ms, st, err := c.ScanPatterns(root, cachePats, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := rels(ms), plainScan(t, root); !slices.Equal(got, want) {
			t.Fatalf("watched scan: %q, want %q", got, want)
		}
		return st
	}
	for range 2 {
		scan() // read, then read with every directory watched
	}
	if st := scan(); st.Vouched != st.Dirs-1 {
		t.Fatalf("%d of the %d directories below the root vouched for, read in the tick of their change", st.Vouched, st.Dirs-1)
	}
	mkTree(t, root, "a/b/c/placeholder")
	must(t, os.Remove(filepath.Join(root, "a", "b", "c", "placeholder")))
	if st := scan(); st.Vouched != st.Dirs-1 {
		t.Fatalf("%d of the %d directories below the root vouched for after a file made and removed", st.Vouched, st.Dirs-1)
	}
	mkTree(t, root, "a/b/c/.env")
	if st := scan(); st.Vouched >= st.Dirs-1 {
		t.Fatal("a/b/c vouched for after a .env was made in it")
	}
}

// TestWatchAddedToTheScannedDirectory: a directory exchanged with another
// between its scan and the watch's addition (RENAME_EXCHANGE) is not
// watched under the scanned one's identity: the watch added by the path
// sat on the other directory, which then vouched for the first one's
// listing while its own changes went unseen (found by an attack). Back in
// place, it is watched through its descriptor, on the scanned directory.
func TestWatchAddedToTheScannedDirectory(t *testing.T) {
	root := t.TempDir()
	p, q := filepath.Join(root, "p"), filepath.Join(root, "q")
	mkTree(t, root, "p/", "q/")
	idOf := func(path string) dirID {
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			t.Fatal(err)
		}
		return dirID{dev: uint64(st.Dev), ino: st.Ino}
	}
	idP := idOf(p)
	var w *watcher
	testenv.Inotify(t, func() (err error) { w, err = newWatcher(0); return err })
	t.Cleanup(w.close)
	exchange := func() {
		if err := unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, q, unix.RENAME_EXCHANGE); err != nil {
			t.Skipf("RENAME_EXCHANGE: %v", err)
		}
	}

	exchange() // p's directory now stands at q, q's at p
	if had, full := w.watchDirs([]watchCand{{path: p, id: idP}}, root); had || full {
		t.Errorf("watchDirs of an exchanged directory = %v, %v; want not had", had, full)
	}
	if wi := w.byID[dirKey{idP.dev, idP.ino}]; wi != nil {
		t.Fatalf("p's directory is vouched for by the watch of the directory now at its path")
	}

	exchange() // back in place
	w.watchDirs([]watchCand{{path: p, id: idP}}, root)
	wi := w.byID[dirKey{idP.dev, idP.ino}]
	if wi == nil {
		t.Fatal("p's directory, back in place, is not watched")
	}
	// The watch is on p's directory: a change in q's is not its event,
	// and one in p's is, wherever the two stand.
	exchange()
	bumped := func(dir string) bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.drain()
		before := wi.last
		if err := os.WriteFile(filepath.Join(dir, "new"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		w.drain()
		return wi.last > before
	}
	if bumped(p) { // q's directory, at p
		t.Error("a change in q's directory was taken for p's")
	}
	if !bumped(q) { // p's directory, at q
		t.Error("a change in p's directory was not seen by its watch")
	}
}
