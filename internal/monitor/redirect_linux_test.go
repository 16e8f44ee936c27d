package monitor

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCommitInto: git's rename of config.lock onto a redirected config is
// written into the copy and the lock removed, the config itself left as
// it is; a rename of another name, from another directory, of a symbolic
// link or of a file with a second link, an exchange or a noreplace, and
// one the caller may not remove, is refused and changes nothing.
func TestCommitInto(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	open := func(d string) int {
		t.Helper()
		fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	config := filepath.Join(dir, "config")
	write(config, "[core]\n\thost = 1\n")
	cp, err := os.OpenFile(filepath.Join(t.TempDir(), "copy"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if _, err := cp.WriteString("[core]\n\tcopy = the old one, longer than the new\n"); err != nil {
		t.Fatal(err)
	}
	r := &Redirect{Copy: cp, Committed: new(atomic.Int64)}
	d, o := open(dir), open(other)
	yes, no := func() bool { return true }, func() bool { return false }
	for _, tc := range []struct {
		name  string
		prep  func()
		odir  int
		oname string
		flags uint
		allow func() bool
		want  unix.Errno
	}{
		{"another name", func() { write(filepath.Join(dir, "x.lock"), "[a]\n") }, d, "x.lock", 0, yes, unix.EACCES},
		{"another directory", func() { write(filepath.Join(other, "config.lock"), "[a]\n") }, o, "config.lock", 0, yes, unix.EACCES},
		{"a symbolic link", func() { _ = os.Symlink(filepath.Join(other, "config.lock"), filepath.Join(dir, "config.lock")) }, d, "config.lock", 0, yes, unix.ELOOP},
		{"a second link", func() {
			_ = os.Remove(filepath.Join(dir, "config.lock"))
			_ = os.Link(filepath.Join(other, "config.lock"), filepath.Join(dir, "config.lock"))
		}, d, "config.lock", 0, yes, unix.EACCES},
		{"an exchange", func() {}, d, "config.lock", unix.RENAME_EXCHANGE, yes, unix.EACCES},
		{"not to be removed", func() {
			_ = os.Remove(filepath.Join(dir, "config.lock"))
			write(filepath.Join(dir, "config.lock"), "[a]\n")
		}, d, "config.lock", 0, no, unix.EACCES},
		{"noreplace", func() {}, d, "config.lock", unix.RENAME_NOREPLACE, yes, unix.EEXIST},
	} {
		tc.prep()
		if got := commitInto(r, tc.odir, tc.oname, d, "config", tc.flags, tc.allow); got.kind != replyVal || got.errno != tc.want {
			t.Errorf("%s: %+v, want errno %v", tc.name, got, tc.want)
		}
	}
	if r.Committed.Load() != 0 {
		t.Fatalf("a refused rename was counted")
	}
	write(filepath.Join(dir, "config.lock"), "[user]\n\temail = x\n")
	if got := commitInto(r, d, "config.lock", d, "config", 0, yes); got.kind != replyVal || got.errno != 0 {
		t.Fatalf("git's rename: %+v", got)
	}
	b, _ := os.ReadFile(cp.Name())
	if string(b) != "[user]\n\temail = x\n" || r.Committed.Load() != 1 {
		t.Errorf("the copy holds %q, committed %d", b, r.Committed.Load())
	}
	if _, err := os.Lstat(filepath.Join(dir, "config.lock")); !os.IsNotExist(err) {
		t.Errorf("the lock is still there: %v", err)
	}
	if b, _ := os.ReadFile(config); string(b) != "[core]\n\thost = 1\n" {
		t.Errorf("the config itself changed: %q", b)
	}
}
