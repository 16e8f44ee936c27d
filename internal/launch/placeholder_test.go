//go:build linux

package launch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/plan"
)

// TestPlaceholdersByParentDescriptor: placeholders are created and removed
// through one descriptor per parent directory, with the guarantees of one
// resolution per path: creation never follows a symlink at the last
// component, removal follows none anywhere (a parent replaced by a symlink
// leaves what it points to alone), nested placeholders go deepest first
// even though their parent's descriptor is shared, and a placeholder that
// is no longer empty stays.
func TestPlaceholdersByParentDescriptor(t *testing.T) {
	type entry struct {
		rel     string // below the workspace, or "outside/..." below the test's root
		dir     bool
		content string
		link    string // a symlink to this path below the test's root
	}
	for _, tc := range []struct {
		name string
		// before is what exists before the placeholders are made.
		before []entry
		// create: the plan's placeholders, created in order.
		create []plan.Placeholder
		// record: paths (below the workspace) the record lists, removed
		// by cleanup.
		record []string
		// present and absent are checked at the end (below the test's root).
		present, absent []string
	}{{
		name:    "create in shared parents",
		before:  []entry{{rel: "ws/.git", dir: true}},
		create:  []plan.Placeholder{{Path: ".envrc", Kind: plan.PlaceholderDir}, {Path: ".vscode", Kind: plan.PlaceholderDir}, {Path: ".bashrc", Kind: plan.PlaceholderFile}, {Path: ".git/config.worktree", Kind: plan.PlaceholderFile}, {Path: ".git/commondir", Kind: plan.PlaceholderCommondir}},
		present: []string{"ws/.envrc", "ws/.vscode", "ws/.bashrc", "ws/.git/config.worktree", "ws/.git/commondir"},
	}, {
		name:    "create nested in a placeholder made just before",
		create:  []plan.Placeholder{{Path: ".git", Kind: plan.PlaceholderDir}, {Path: ".git/hooks", Kind: plan.PlaceholderDir}, {Path: ".envrc", Kind: plan.PlaceholderDir}},
		present: []string{"ws/.git/hooks", "ws/.envrc"},
	}, {
		name:    "create follows no symlink at the last component",
		before:  []entry{{rel: "outside", dir: true}, {rel: "ws/.envrc", link: "outside/envrc"}, {rel: "ws/.bashrc", link: "outside/bashrc"}},
		create:  []plan.Placeholder{{Path: ".envrc", Kind: plan.PlaceholderDir}, {Path: ".bashrc", Kind: plan.PlaceholderFile}, {Path: ".vscode", Kind: plan.PlaceholderDir}},
		present: []string{"ws/.vscode"},
		absent:  []string{"outside/envrc", "outside/bashrc"},
	}, {
		name: "removal refuses a symlinked parent",
		before: []entry{
			{rel: "outside/.git/hooks", dir: true}, {rel: "outside/.git/commondir", content: ".\n"}, {rel: "outside/.git/config.worktree", content: ""},
			{rel: "ws/real/.git/hooks", dir: true}, {rel: "ws/real/.git/commondir", content: ".\n"},
			{rel: "ws/nested", link: "outside"},
		},
		record:  []string{"real/.git/hooks", "nested/.git/hooks", "nested/.git/commondir", "nested/.git/config.worktree", "real/.git/commondir"},
		present: []string{"outside/.git/hooks", "outside/.git/commondir", "outside/.git/config.worktree", "ws/real/.git"},
		absent:  []string{"ws/real/.git/hooks", "ws/real/.git/commondir"},
	}, {
		name:    "removal of nested placeholders through a shared parent",
		before:  []entry{{rel: "ws/.git/hooks", dir: true}, {rel: "ws/.git/commondir", content: ".\n"}, {rel: "ws/.envrc", dir: true}, {rel: "ws/.bashrc"}},
		record:  []string{".git", ".git/hooks", ".git/commondir", ".envrc", ".bashrc"},
		absent:  []string{"ws/.git", "ws/.envrc", "ws/.bashrc"},
		present: []string{"ws"},
	}, {
		name:    "removal leaves what the user filled",
		before:  []entry{{rel: "ws/.vscode/settings.json", content: "{}"}, {rel: "ws/.bashrc", content: "echo hi\n"}, {rel: "ws/.git/commondir", content: "../main/.git\n"}, {rel: "ws/.envrc", dir: true}},
		record:  []string{".vscode", ".bashrc", ".git/commondir", ".envrc"},
		present: []string{"ws/.vscode/settings.json", "ws/.bashrc", "ws/.git/commondir"},
		absent:  []string{"ws/.envrc"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			ws := filepath.Join(root, "ws")
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, e := range tc.before {
				p := filepath.Join(root, e.rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				var err error
				switch {
				case e.link != "":
					err = os.Symlink(filepath.Join(root, e.link), p)
				case e.dir:
					err = os.MkdirAll(p, 0o755)
				default:
					err = os.WriteFile(p, []byte(e.content), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if len(tc.create) > 0 {
				pl := &plan.Plan{}
				for _, ph := range tc.create {
					pl.Placeholders = append(pl.Placeholders, plan.Placeholder{Path: filepath.Join(ws, ph.Path), Kind: ph.Kind})
				}
				if err := createPlaceholders(pl); err != nil {
					t.Fatal(err)
				}
				for _, ph := range pl.Placeholders {
					fi, err := os.Lstat(ph.Path)
					if err != nil {
						t.Fatal(err)
					}
					if fi.Mode()&os.ModeSymlink != 0 {
						continue
					}
					if fi.IsDir() != (ph.Kind == plan.PlaceholderDir) {
						t.Errorf("%s: directory %v, want kind %s", ph.Path, fi.IsDir(), ph.Kind)
					}
				}
			}
			if len(tc.record) > 0 {
				var b strings.Builder
				for _, rel := range tc.record {
					b.WriteString(filepath.Join(ws, rel) + "\n")
				}
				rec := filepath.Join(root, "record")
				if err := os.WriteFile(rec, []byte(b.String()), 0o600); err != nil {
					t.Fatal(err)
				}
				(&workspaceLock{record: rec}).cleanup(nil)
				if _, err := os.Lstat(rec); err == nil {
					t.Error("the record stayed after a cleanup that kept nothing")
				}
			}
			for _, rel := range tc.present {
				if _, err := os.Lstat(filepath.Join(root, rel)); err != nil {
					t.Errorf("%s is missing: %v", rel, err)
				}
			}
			for _, rel := range tc.absent {
				if _, err := os.Lstat(filepath.Join(root, rel)); err == nil {
					t.Errorf("%s exists", rel)
				}
			}
		})
	}
}

// TestPlaceholderFailureEndsSetup: the placeholders are created while the
// rest of the host side is set up; one that cannot be created is a setup
// error before anything starts, and the run leaves neither the
// placeholders it made nor its lock behind.
func TestPlaceholderFailureEndsSetup(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  plan.Placeholder // relative to the workspace
		want string
	}{
		{"missing parent", plan.Placeholder{Path: "no/such/dir", Kind: plan.PlaceholderDir}, "creating placeholder"},
		{"unknown kind", plan.Placeholder{Path: ".sock", Kind: "socket"}, "unknown kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, pl, made := placeholderPlan(t)
			pl.Placeholders = append(pl.Placeholders, plan.Placeholder{Path: filepath.Join(f.ws, tc.bad.Path), Kind: tc.bad.Kind})
			res, err := Run(t.Context(), pl, Stdio{})
			var se *SetupError
			if !errors.As(err, &se) || res != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %+v, %v; want a setup error about %q", res, err, tc.want)
			}
			for _, p := range made {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("placeholder %s left after the failed run", p)
				}
			}
			if left := lockFiles(t, f.state); len(left) > 0 {
				t.Errorf("left in the lock directory after the failed run: %v", left)
			}
		})
	}
}

// TestWrapMakesPlaceholders: Wrap returns with the placeholders made, since
// its caller starts bwrap as soon as it returns, and a placeholder that
// cannot be made is Wrap's error, with nothing left behind.
func TestWrapMakesPlaceholders(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  *plan.Placeholder // relative to the workspace
	}{
		{"all made", nil},
		{"missing parent", &plan.Placeholder{Path: "no/such/dir", Kind: plan.PlaceholderDir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, pl, made := placeholderPlan(t)
			if tc.bad != nil {
				pl.Placeholders = append(pl.Placeholders, plan.Placeholder{Path: filepath.Join(f.ws, tc.bad.Path), Kind: tc.bad.Kind})
			}
			release, err := Wrap(pl, exec.Command("true"))
			if tc.bad != nil {
				if err == nil || !strings.Contains(err.Error(), "creating placeholder") {
					release()
					t.Fatalf("Wrap = %v; want an error about the placeholder", err)
				}
				for _, p := range made {
					if _, err := os.Lstat(p); err == nil {
						t.Errorf("placeholder %s left after the failed Wrap", p)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range made {
				if _, err := os.Lstat(p); err != nil {
					t.Errorf("placeholder %s not made when Wrap returned: %v", p, err)
				}
			}
			release()
			for _, p := range made {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("placeholder %s left after release", p)
				}
			}
		})
	}
}

// placeholderPlan builds the default policy's plan in a lock fixture and
// returns it with the placeholders it makes, the test binary standing in
// for the helper (the fixture's helper is a name only).
func placeholderPlan(t *testing.T) (*lockFixture, *plan.Plan, []string) {
	t.Helper()
	f := newLockFixture(t)
	pl, err := plan.Build(f.pol, []string{"true"}, f.opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Placeholders) == 0 || !pl.LockWorkspace {
		t.Fatal("the default policy's plan locks no workspace or has no placeholders")
	}
	pl.Helper = ""
	return f, pl, pl.PlaceholderPaths()
}

// TestPlaceholdersInTwo: from parallelPlaceholdersFrom placeholders on,
// createPlaceholders shares them between two goroutines by parent
// directory (each list in the plan's order, no parent in both), keeps a
// placeholder below another in one list after it, and creates every one,
// of its kind, on a real file system; a failure in either list fails the
// whole with one line naming the placeholder.
func TestPlaceholdersInTwo(t *testing.T) {
	root := t.TempDir()
	var many []plan.Placeholder
	for i := range 40 {
		git := filepath.Join(root, fmt.Sprintf("r%02d", i), ".git")
		if err := os.MkdirAll(git, 0o755); err != nil {
			t.Fatal(err)
		}
		many = append(many, plan.Placeholder{Path: filepath.Join(git, "config.worktree"), Kind: plan.PlaceholderFile},
			plan.Placeholder{Path: filepath.Join(git, "commondir"), Kind: plan.PlaceholderCommondir})
	}
	nested := append(slices.Clone(many[:len(many)-2]), plan.Placeholder{Path: filepath.Join(root, "new"), Kind: plan.PlaceholderDir},
		plan.Placeholder{Path: filepath.Join(root, "new", "hooks"), Kind: plan.PlaceholderDir})
	tests := []struct {
		name  string
		phs   []plan.Placeholder
		lists int
	}{
		{"few", many[:parallelPlaceholdersFrom-1], 1},
		{"many", many, 2},
		{"one below another", nested, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lists := splitPlaceholders(tc.phs)
			if len(lists) != tc.lists {
				t.Fatalf("%d lists, want %d", len(lists), tc.lists)
			}
			var all []plan.Placeholder
			parents := map[string]int{}
			for i, l := range lists {
				for _, ph := range l {
					if j, ok := parents[filepath.Dir(ph.Path)]; ok && j != i {
						t.Errorf("%s is in both lists", filepath.Dir(ph.Path))
					}
					parents[filepath.Dir(ph.Path)] = i
				}
				all = append(all, l...)
			}
			if len(all) != len(tc.phs) {
				t.Fatalf("%d placeholders in the lists, want %d", len(all), len(tc.phs))
			}
			for _, l := range lists {
				if !isSubsequence(l, tc.phs) {
					t.Errorf("a list is not in the plan's order: %v", l)
				}
			}
			if err := createPlaceholders(&plan.Plan{Placeholders: tc.phs}); err != nil {
				t.Fatal(err)
			}
			// A file placeholder is a link to the first of its kind in
			// its list: as many inodes of a kind as lists, not one per
			// repository.
			inodes := map[plan.PlaceholderKind]map[uint64]bool{}
			for _, ph := range tc.phs {
				fi, err := os.Lstat(ph.Path)
				if err != nil {
					t.Fatal(err)
				}
				if ph.Kind != plan.PlaceholderDir {
					if inodes[ph.Kind] == nil {
						inodes[ph.Kind] = map[uint64]bool{}
					}
					inodes[ph.Kind][fi.Sys().(*syscall.Stat_t).Ino] = true
				}
				if fi.IsDir() != (ph.Kind == plan.PlaceholderDir) {
					t.Errorf("%s: directory %v, want kind %s", ph.Path, fi.IsDir(), ph.Kind)
				}
				if ph.Kind == plan.PlaceholderCommondir {
					if b, _ := os.ReadFile(ph.Path); string(b) != ".\n" {
						t.Errorf("%s holds %q", ph.Path, b)
					}
				}
			}
			for kind, in := range inodes {
				if len(in) > len(lists) {
					t.Errorf("%d inodes for the %s placeholders of %d lists", len(in), kind, len(lists))
				}
			}
			for _, ph := range slices.Backward(tc.phs) {
				removeIfEmpty(ph.Path)
			}
			for _, ph := range tc.phs {
				if _, err := os.Lstat(ph.Path); err == nil {
					t.Errorf("%s is left after its removal", ph.Path)
				}
			}
		})
	}
	// A parent that cannot be opened, in one list: the whole fails.
	bad := slices.Clone(many)
	bad[3].Path = filepath.Join(root, "missing", "config.worktree")
	err := createPlaceholders(&plan.Plan{Placeholders: bad})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), bad[3].Path) {
		t.Errorf("err = %v, want one line naming %s", err, bad[3].Path)
	}
}

// isSubsequence reports whether sub holds elements of all in their order.
func isSubsequence(sub, all []plan.Placeholder) bool {
	i := 0
	for _, p := range all {
		if i < len(sub) && sub[i] == p {
			i++
		}
	}
	return i == len(sub)
}

// TestParentDirsBounded: parentDirs keeps at most maxParentDirs
// descriptors, closing the one used longest ago, and each descriptor it
// returns, kept or opened again, is its directory's. A run in 200 nested
// repositories held one per git directory, and growing the descriptor
// table of a threaded process waits for an RCU grace period.
func TestParentDirsBounded(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for i := range 3 * maxParentDirs {
		d := filepath.Join(root, fmt.Sprintf("d%02d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	opened := map[string]int{}
	d := newParentDirs(func(dir string) (int, error) {
		opened[dir]++
		return openDirFollowing(dir)
	})
	defer d.close()
	check := func(dir string) {
		t.Helper()
		fd, err := d.get(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got, want syscall.Stat_t
		if err := syscall.Fstat(fd, &got); err != nil {
			t.Fatalf("%s: descriptor %d: %v", dir, fd, err)
		}
		if err := syscall.Stat(dir, &want); err != nil {
			t.Fatal(err)
		}
		if got.Ino != want.Ino {
			t.Errorf("%s: descriptor %d is inode %d, want %d", dir, fd, got.Ino, want.Ino)
		}
		if len(d.fds) > maxParentDirs {
			t.Fatalf("%d descriptors kept, want at most %d", len(d.fds), maxParentDirs)
		}
	}
	// The first directory stays in use throughout (the workspace, whose
	// placeholders come first and last): it is opened once.
	for _, dir := range dirs {
		check(dirs[0])
		check(dir)
		check(dir)
	}
	check(dirs[0])
	if opened[dirs[0]] != 1 {
		t.Errorf("%s opened %d times, want once", dirs[0], opened[dirs[0]])
	}
	for _, dir := range dirs[1:] {
		if opened[dir] != 1 {
			t.Errorf("%s opened %d times, want once", dir, opened[dir])
		}
	}
	// One used longest ago is opened again.
	check(dirs[1])
	if opened[dirs[1]] != 2 {
		t.Errorf("%s opened %d times after it was closed, want twice", dirs[1], opened[dirs[1]])
	}
}
