//go:build linux

package sibling

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpen: a sibling is usable only as a regular, executable file owned
// by root or this user, neither it nor its directory writable by group or
// others, and never through a symbolic link; each refusal is an *Error
// naming the path, what is wrong and the fix.
func TestOpen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir, p string)
		path  func(dir, p string) string // the path the error names
		what  string                     // "" when usable
		fix   string
	}{
		{"ok", func(*testing.T, string, string) {}, nil, "", ""},
		{"missing", func(t *testing.T, _, p string) { rm(t, p) }, nil, "is missing", "install all of cordon's binaries together"},
		{"missing directory", func(t *testing.T, dir, _ string) { rm(t, dir) }, nil, "is missing", "go build -o DIR ./cmd/..."},
		{"symlink", func(t *testing.T, dir, p string) {
			rm(t, p)
			if err := os.Symlink("/bin/true", p); err != nil {
				t.Fatal(err)
			}
		}, nil, "is a symbolic link", "a file of its own"},
		{"directory", func(t *testing.T, _, p string) {
			rm(t, p)
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, nil, "is not a regular file", "install all"},
		{"fifo", func(t *testing.T, _, p string) {
			rm(t, p)
			if err := unix.Mkfifo(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, nil, "is not a regular file", "install all"},
		{"not executable", func(t *testing.T, _, p string) { chmod(t, p, 0o644) }, nil, "is not executable", "chmod 755 "},
		{"group-writable", func(t *testing.T, _, p string) { chmod(t, p, 0o775) }, nil, "is writable by group or others (mode 0775)", "chmod go-w "},
		{"other-writable", func(t *testing.T, _, p string) { chmod(t, p, 0o757) }, nil, "is writable by group or others (mode 0757)", "chmod go-w "},
		{"directory group-writable", func(t *testing.T, dir, _ string) { chmod(t, dir, 0o770) },
			func(dir, _ string) string { return "directory " + dir }, "is writable by group or others (mode 0770)", "chmod go-w "},
		{"other owner", func(t *testing.T, _, p string) {
			if os.Geteuid() != 0 {
				t.Skip("only root can give a file to another user")
			}
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, nil, "is owned by uid 65534, neither root nor you", "install cordon's binaries into a directory of your own or root's"},
		{"directory of another owner", func(t *testing.T, dir, _ string) {
			if os.Geteuid() != 0 {
				t.Skip("only root can give a directory to another user")
			}
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, func(dir, _ string) string { return "directory " + dir }, "is owned by uid 65534", "directory of your own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bin")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "cordon-helper")
			if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, dir, p)
			b, err := Open(p)
			if tc.what == "" {
				if err != nil || b.Path != p {
					t.Fatalf("Open = %+v, %v; want %s usable", b, err, p)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Open: %v, want an *Error", err)
			}
			want := p
			if tc.path != nil {
				want = tc.path(dir, p)
			}
			if se.Path != want || !strings.HasPrefix(se.What, tc.what) || !strings.Contains(se.Fix, tc.fix) {
				t.Errorf("Open: %q %q %q; want %q, %q..., a fix with %q", se.Path, se.What, se.Fix, want, tc.what, tc.fix)
			}
			if err.Error() != se.Path+" "+se.What+": "+se.Fix || strings.Contains(err.Error(), "\n") {
				t.Errorf("error text %q is not one line of path, what and fix", err)
			}
		})
	}
}

// TestOpenKeepsChecked: what a later Open of the same path returns is the
// descriptor first checked, even once the path names another file; the
// kernel executes it as ExecPath.
func TestOpenKeepsChecked(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "prog")
	if err := os.WriteFile(p, []byte("first"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	var before unix.Stat_t
	if err := unix.Fstat(int(b.File.Fd()), &before); err != nil {
		t.Fatal(err)
	}
	rm(t, p)
	if err := os.WriteFile(p, []byte("second, group-writable"), 0o775); err != nil {
		t.Fatal(err)
	}
	again, err := Open(p)
	if err != nil || again != b {
		t.Fatalf("second Open = %+v, %v; want the first %+v", again, err, b)
	}
	var st unix.Stat_t
	if err := unix.Stat(b.ExecPath(), &st); err != nil || st.Ino != before.Ino {
		t.Errorf("%s: inode %d (%v), want the checked %d", b.ExecPath(), st.Ino, err, before.Ino)
	}
	if _, err := Open("relative/prog"); err == nil {
		t.Error("Open of a relative path succeeded")
	}
}

// TestFind: a sibling is looked for beside the running executable.
func TestFind(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Path("cordon-nothing")
	if want := filepath.Join(filepath.Dir(exe), "cordon-nothing"); err != nil || p != want {
		t.Errorf("Path = %q, %v; want %q", p, err, want)
	}
	var se *Error
	if _, err := Find("cordon-nothing"); !errors.As(err, &se) || se.Path != p || se.What != "is missing" {
		t.Errorf("Find of a missing sibling: %v", err)
	}
	if b, err := Find(filepath.Base(exe)); err != nil || b.Path != exe {
		t.Errorf("Find of the test binary itself = %+v, %v; want %s", b, err, exe)
	}
}

func rm(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRechecksHeld: the descriptor kept for a path is checked again at
// each Open: made writable by group or others since (chmod of the same
// file, which a long-lived cordon-mcp still holds), it is refused.
func TestOpenRechecksHeld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "prog")
	if err := os.WriteFile(p, []byte("first"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(p); err != nil {
		t.Fatal(err)
	}
	chmod(t, p, 0o775)
	var se *Error
	if _, err := Open(p); !errors.As(err, &se) || !strings.HasPrefix(se.What, "is writable by group or others") {
		t.Fatalf("Open of the held file made group-writable: %v; want an *Error", err)
	}
	chmod(t, p, 0o755)
	if _, err := Open(p); err != nil {
		t.Errorf("Open once fixed: %v", err)
	}
}
