//go:build unix

package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
	"golang.org/x/sys/unix"
)

// TestDropShadowed: of the mounts at one destination only the last is
// kept (it covers the others, and nothing inside can unmount it); what
// makes no mount (a symlink, an unreadable directory made in a tmpfs, a
// remount) is never dropped, nor does it drop anything.
func TestDropShadowed(t *testing.T) {
	tests := []struct {
		name string
		ops  []mountOp
		want []mountOp
	}{
		{"module cache shown over the host's",
			[]mountOp{{opRead, "/h/go/pkg/mod", "/h/go/pkg/mod"}, {opWrite, "/c/gomod", "/h/go/pkg/mod"}},
			[]mountOp{{opWrite, "/c/gomod", "/h/go/pkg/mod"}}},
		{"a pinned directory bound read-only",
			[]mountOp{{opPin, "/w/a", "/w/a"}, {opReadOnly, "/w/a", "/w/a"}, {opReadOnly, "/w/a/b", "/w/a/b"}},
			[]mountOp{{opReadOnly, "/w/a", "/w/a"}, {opReadOnly, "/w/a/b", "/w/a/b"}}},
		{"a write path pinned as a git directory",
			[]mountOp{{opRead, "/m", "/m"}, {opWrite, "/m/.git", "/m/.git"}, {opPin, "/m/.git", "/m/.git"}, {opReadOnly, "/m/.git/config", "/m/.git/config"}},
			[]mountOp{{opRead, "/m", "/m"}, {opWrite, "/m/.git", "/m/.git"}, {opReadOnly, "/m/.git/config", "/m/.git/config"}}},
		{"three at one path, a sibling between",
			[]mountOp{{opPin, "/w/a", "/w/a"}, {opWrite, "/w/b", "/w/b"}, {opReadOnly, "/w/a", "/w/a"}, {opMask, "/s/deny-dir", "/w/a"}},
			[]mountOp{{opWrite, "/w/b", "/w/b"}, {opMask, "/s/deny-dir", "/w/a"}}},
		{"a tmpfs and its remount stay",
			[]mountOp{{opTmpfs, "", "/h"}, {opMaskDir, "", "/h/.ssh"}, {opRemountRO, "", "/h"}},
			[]mountOp{{opTmpfs, "", "/h"}, {opMaskDir, "", "/h/.ssh"}, {opRemountRO, "", "/h"}}},
		{"distinct destinations stay",
			[]mountOp{{opSymlink, "usr/bin", "/bin"}, {opRead, "/usr", "/usr"}, {opWrite, "/w", "/w"}, {opReadOnly, "/w/.git/config", "/w/.git/config"}},
			[]mountOp{{opSymlink, "usr/bin", "/bin"}, {opRead, "/usr", "/usr"}, {opWrite, "/w", "/w"}, {opReadOnly, "/w/.git/config", "/w/.git/config"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := dropShadowed(slices.Clone(tc.ops))
			if !slices.Equal(got, tc.want) {
				t.Errorf("dropShadowed(%v) = %v, want %v", tc.ops, got, tc.want)
			}
		})
	}
}

// TestDropInsideReadOnly: inside a read-only mount, pins, read-only
// re-binds and placeholders are dropped (nothing there can be renamed or
// created, and a pin would make its tree writable); masks and write paths
// stay, and what lies inside a writable mount below keeps its protections.
func TestDropInsideReadOnly(t *testing.T) {
	tests := []struct {
		name string
		ops  []mountOp
		want []mountOp
	}{
		{"a repository inside a protected directory",
			[]mountOp{{opWrite, "/w", "/w"}, {opReadOnly, "/w/.vscode", "/w/.vscode"}, {opReadOnly, "/w/.vscode/.envrc", "/w/.vscode/.envrc"},
				{opPin, "/w/.vscode/s/.git", "/w/.vscode/s/.git"}, {opReadOnly, "/w/.vscode/s/.git/config", "/w/.vscode/s/.git/config"},
				{opReadOnly, "/st/commondir", "/w/.vscode/s/.git/commondir"}},
			[]mountOp{{opWrite, "/w", "/w"}, {opReadOnly, "/w/.vscode", "/w/.vscode"}}},
		{"masks and write paths stay, and what is inside them",
			[]mountOp{{opRead, "/r", "/r"}, {opMask, "/st/deny-file", "/r/.env"}, {opWrite, "/r/out", "/r/out"},
				{opPin, "/r/out/.git", "/r/out/.git"}, {opReadOnly, "/r/out/.git/config", "/r/out/.git/config"}},
			[]mountOp{{opRead, "/r", "/r"}, {opMask, "/st/deny-file", "/r/.env"}, {opWrite, "/r/out", "/r/out"},
				{opPin, "/r/out/.git", "/r/out/.git"}, {opReadOnly, "/r/out/.git/config", "/r/out/.git/config"}}},
		{"a tmpfs is writable while it is set up",
			[]mountOp{{opTmpfs, "", "/h"}, {opPin, "/h/c", "/h/c"}, {opReadOnly, "/h/c/x", "/h/c/x"}, {opRemountRO, "", "/h"}},
			[]mountOp{{opTmpfs, "", "/h"}, {opPin, "/h/c", "/h/c"}, {opReadOnly, "/h/c/x", "/h/c/x"}, {opRemountRO, "", "/h"}}},
		{"protections in a writable tree stay",
			[]mountOp{{opWrite, "/w", "/w"}, {opPin, "/w/.git", "/w/.git"}, {opReadOnly, "/w/.git/config", "/w/.git/config"}, {opReadOnly, "/st/empty-dir", "/w/.envrc"}},
			[]mountOp{{opWrite, "/w", "/w"}, {opPin, "/w/.git", "/w/.git"}, {opReadOnly, "/w/.git/config", "/w/.git/config"}, {opReadOnly, "/st/empty-dir", "/w/.envrc"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := dropInsideReadOnly(slices.Clone(tc.ops))
			if !slices.Equal(got, tc.want) {
				t.Errorf("dropInsideReadOnly(%v) = %v, want %v", tc.ops, got, tc.want)
			}
		})
	}
}

// TestFewerMounts pins the mounts a plan no longer makes, each where it is
// equivalent to what replaced it, and those it still makes where it is
// not: the argv must contain every want and none of the gone.
func TestFewerMounts(t *testing.T) {
	type paths struct{ home, ws, state, hostMod, gomod string }
	tests := []struct {
		name   string
		change func(t *testing.T, p *policy.Policy, at paths)
		want   func(at paths) [][]string
		gone   func(at paths) [][]string
	}{
		{"the host's module cache under the sandbox's", nil,
			func(at paths) [][]string {
				return [][]string{{"--bind", at.gomod, at.hostMod}, {"--ro-bind", at.hostMod, HostModCache}}
			},
			func(at paths) [][]string { return [][]string{{"--ro-bind", at.hostMod, at.hostMod}} }},
		{"a denied directory in the empty home", nil,
			func(at paths) [][]string {
				return [][]string{{"--perms", "0000", "--dir", filepath.Join(at.home, ".ssh")}, {"--remount-ro", at.home}}
			},
			func(at paths) [][]string {
				return [][]string{{"--ro-bind", filepath.Join(at.state, maskDir), filepath.Join(at.home, ".ssh")}}
			}},
		{"a denied file in the empty home is still bound",
			func(t *testing.T, p *policy.Policy, at paths) {
				writeFile(t, filepath.Join(at.home, ".netrc"), 0o600)
				p.Deny = append(p.Deny, filepath.Join(at.home, ".netrc"))
			},
			func(at paths) [][]string {
				return [][]string{{"--ro-bind", filepath.Join(at.state, maskFile), filepath.Join(at.home, ".netrc")}}
			}, nil},
		{"a denied directory in a visible home is still bound",
			func(t *testing.T, p *policy.Policy, at paths) { p.Read = append(p.Read, at.home) },
			func(at paths) [][]string {
				return [][]string{{"--ro-bind", filepath.Join(at.state, maskDir), filepath.Join(at.home, ".ssh")}}
			},
			func(at paths) [][]string {
				return [][]string{{"--perms", "0000", "--dir", filepath.Join(at.home, ".ssh")}, {"--tmpfs", at.home}}
			}},
		{"a repository inside a protected directory",
			func(t *testing.T, p *policy.Policy, at paths) {
				for _, d := range []string{".vscode/s/.git/hooks", ".vscode/s/.git/objects"} {
					if err := os.MkdirAll(filepath.Join(at.ws, d), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				writeFile(t, filepath.Join(at.ws, ".vscode", "s", ".git", "config"), 0o644)
				writeFile(t, filepath.Join(at.ws, ".vscode", ".envrc"), 0o644)
			},
			func(at paths) [][]string {
				return [][]string{{"--ro-bind", filepath.Join(at.ws, ".vscode"), filepath.Join(at.ws, ".vscode")}}
			},
			func(at paths) [][]string {
				g := filepath.Join(at.ws, ".vscode", "s", ".git")
				return [][]string{{"--bind", g, g}, {"--ro-bind", filepath.Join(g, "config"), filepath.Join(g, "config")},
					{"--ro-bind", filepath.Join(g, "hooks"), filepath.Join(g, "hooks")},
					{"--ro-bind", filepath.Join(at.state, commondirFile), filepath.Join(g, "commondir")},
					{"--ro-bind", filepath.Join(at.ws, ".vscode", ".envrc"), filepath.Join(at.ws, ".vscode", ".envrc")}}
			}},
		{"a denied file this user may read is still bound",
			func(t *testing.T, p *policy.Policy, at paths) {
				f := filepath.Join(at.home, "etc", "secret")
				writeFile(t, f, 0o000) // its owner could chmod it
				p.Read = append(p.Read, filepath.Dir(f))
				p.Deny = append(p.Deny, f)
			},
			func(at paths) [][]string {
				return [][]string{{"--ro-bind", filepath.Join(at.state, maskFile), filepath.Join(at.home, "etc", "secret")}}
			}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, opts, cache, _, hostMod := goPolicy(t)
			at := paths{home: opts.Home, ws: p.Workspace, state: opts.StateDir, hostMod: hostMod, gomod: policy.GoModCacheDir(cache)}
			if tc.change != nil {
				tc.change(t, p, at)
			}
			pl, err := Build(p, []string{"true"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want(at) {
				if !hasSeq(pl.Argv, w...) {
					t.Errorf("argv lacks %q:\n%s", w, strings.Join(pl.Argv, " "))
				}
			}
			if tc.gone != nil {
				for _, g := range tc.gone(at) {
					if hasSeq(pl.Argv, g...) {
						t.Errorf("argv has %q:\n%s", g, strings.Join(pl.Argv, " "))
					}
					if slices.Contains(pl.PlaceholderPaths(), g[len(g)-1]) {
						t.Errorf("the launcher would make the placeholder %s", g[len(g)-1])
					}
				}
			}
		})
	}
}

// TestUnreadableDeniedFile: a denied file outside every writable tree that
// this user cannot read on the host (not its owner, no permission) gets no
// mask when cordon is not root; as root, which reads everything on the
// host and owns the file inside, it is masked.
func TestUnreadableDeniedFile(t *testing.T) {
	f := "/etc/shadow"
	if _, err := os.Stat(f); err != nil {
		t.Skipf("no %s on this host", f)
	}
	p, opts := testPolicy(t)
	p.Deny = append(p.Deny, f)
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	masked := hasSeq(pl.Argv, "--ro-bind", filepath.Join(opts.StateDir, maskFile), f)
	if want := !unreadable(f); masked != want {
		t.Errorf("%s masked = %v, want %v (euid %d):\n%s", f, masked, want, os.Geteuid(), strings.Join(pl.Argv, " "))
	}
	if os.Geteuid() == 0 && !masked {
		t.Errorf("as root %s must be masked", f)
	}
	if os.Geteuid() != 0 {
		if fh, err := os.Open(f); err == nil {
			fh.Close()
			if masked {
				t.Logf("%s is readable here: masked", f)
			}
		} else if masked {
			t.Errorf("%s is unreadable here (%v), yet masked", f, err)
		}
	}
}

func writeFile(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestInaccessibleNeedsNoMask: only a regular file this user may neither
// read, write nor execute, owned by another user, goes without a mask; an
// exec-only program, a write-only FIFO or socket, one's own file and
// anything as root are masked.
func TestInaccessibleNeedsNoMask(t *testing.T) {
	const other, me = 0, 1001
	tests := []struct {
		name      string
		mode      uint32
		uid, euid int
		can       uint32 // the accesses allowed (R_OK|W_OK|X_OK)
		noMask    bool
	}{
		{"root's 0600 file", unix.S_IFREG | 0o600, other, me, 0, true},
		{"root's exec-only program", unix.S_IFREG | 0o711, other, me, unix.X_OK, false},
		{"root's write-only file", unix.S_IFREG | 0o622, other, me, unix.W_OK, false},
		{"root's readable file", unix.S_IFREG | 0o644, other, me, unix.R_OK, false},
		{"a write-only FIFO", unix.S_IFIFO | 0o622, other, me, unix.W_OK, false},
		{"a FIFO nobody may use", unix.S_IFIFO | 0o600, other, me, 0, false},
		{"a socket", unix.S_IFSOCK | 0o600, other, me, 0, false},
		{"one's own 0000 file", unix.S_IFREG, me, me, 0, false},
		{"cordon as root", unix.S_IFREG | 0o600, 5, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := inaccessible(tt.mode, tt.uid, tt.euid, func(how uint32) bool { return tt.can&how != 0 })
			if got != tt.noMask {
				t.Errorf("inaccessible = %v, want %v", got, tt.noMask)
			}
		})
	}
}

// TestWriteInsideDenyWrite: a write path inside a deny_write path stays
// read-only (the deny wins, as cordon's warning says): it is bound
// read-only, never writable, and is no writable root.
func TestWriteInsideDenyWrite(t *testing.T) {
	p, opts := testPolicy(t)
	vendor := filepath.Join(p.Workspace, "vendor")
	lib := filepath.Join(vendor, "lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	p.DenyWrite = append(p.DenyWrite, vendor)
	p.Write = append(p.Write, lib)
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(pl.Argv, " ")
	if hasSeq(pl.Argv, "--bind", lib, lib) {
		t.Errorf("%s is bound writable inside deny_write %s:\n%s", lib, vendor, argv)
	}
	if !hasSeq(pl.Argv, "--ro-bind", vendor, vendor) {
		t.Errorf("deny_write %s is not bound read-only:\n%s", vendor, argv)
	}
	if slices.Contains(pl.Guard.Roots, lib) {
		t.Errorf("%s is a writable root of the guard: %v", lib, pl.Guard.Roots)
	}
}
