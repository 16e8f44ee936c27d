//go:build linux

package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// within fails the test if fn does not return within d (a hang on a FIFO).
func within(t *testing.T, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatal("operation hung")
	}
}

func TestSpecialFilesRefused(t *testing.T) {
	fsys, ws, _ := setup(t)
	fifo := filepath.Join(ws, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	mustLink(t, "fifo", filepath.Join(ws, "fifo-link"))
	specials := []string{"fifo", "fifo-link"}
	if os.Geteuid() == 0 {
		// A character device node inside the workspace (like /dev/null, 1:3).
		if err := syscall.Mknod(filepath.Join(ws, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
			specials = append(specials, "null")
		} else {
			t.Logf("mknod: %v", err)
		}
	}
	for _, p := range specials {
		within(t, 5*time.Second, func() {
			_, err := fsys.ReadFile(p, 0, 0)
			violation(t, err, KindSpecial)
			_, err = fsys.WriteFile(p, "x")
			violation(t, err, KindSpecial)
			_, err = fsys.EditFile(p, "a", "b")
			violation(t, err, KindSpecial)
		})
	}
	within(t, 5*time.Second, func() {
		if _, err := fsys.Grep("x", "", GrepOptions{}); err != nil {
			t.Error(err)
		}
		if _, err := fsys.Grep("x", "fifo", GrepOptions{}); err != nil {
			t.Error(err)
		}
		if _, err := fsys.Info("fifo"); err != nil {
			t.Error(err)
		}
	})
	// /dev/zero and /dev/null through a symlink are outside the root.
	mustLink(t, "/dev/zero", filepath.Join(ws, "zero"))
	within(t, 5*time.Second, func() {
		_, err := fsys.ReadFile("zero", 0, 0)
		violation(t, err, KindSymlink)
		_, err = fsys.WriteFile("zero", "x")
		violation(t, err, KindSymlink)
	})
	// A unix socket is refused too.
	if l, err := listenUnix(filepath.Join(ws, "sock")); err == nil {
		defer l.Close()
		within(t, 5*time.Second, func() {
			_, err := fsys.ReadFile("sock", 0, 0)
			violation(t, err, KindSpecial)
		})
	}
	// In mode off, FIFOs are still refused rather than hanging.
	off := newFS(t, ws, "off")
	within(t, 5*time.Second, func() {
		_, err := off.ReadFile("fifo", 0, 0)
		violation(t, err, KindSpecial)
		_, err = off.ReadFile("/dev/zero", 0, 0)
		violation(t, err, KindSpecial)
	})
}

func listenUnix(p string) (interface{ Close() error }, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: p}); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// TestSymlinkSwapRace flips a link between a directory inside the root and
// one outside while reads go through it: a read never returns outside
// content.
func TestSymlinkSwapRace(t *testing.T) {
	fsys, ws, base := setup(t)
	mustMkdir(t, filepath.Join(ws, "in"))
	mustWrite(t, filepath.Join(ws, "in", "secret"), "inside\n")
	link := filepath.Join(ws, "l")
	mustLink(t, "in", link)
	targets := []string{"in", filepath.Join(base, "outside")}

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tmp := filepath.Join(ws, "l.tmp")
		for i := 0; !stop.Load(); i++ {
			_ = os.Remove(tmp)
			if err := os.Symlink(targets[i%2], tmp); err != nil {
				continue
			}
			_ = os.Rename(tmp, link) // atomic swap
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	var ok, refused, other int
	for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
		r, err := fsys.ReadFile("l/secret", 0, 0)
		switch {
		case err == nil:
			if txt := r.Text(); strings.Contains(txt, "outside") {
				stop.Store(true)
				t.Fatalf("read outside content through the swapped link: %q", txt)
			}
			ok++
		case strings.HasPrefix(err.Error(), "sandbox violation:"):
			refused++
		default:
			other++ // e.g. the link was briefly missing
		}
		// Writes through the link must never land outside either.
		_, _ = fsys.WriteFile("l/secret", "inside\n")
	}
	stop.Store(true)
	wg.Wait()
	if b, _ := os.ReadFile(filepath.Join(base, "outside", "secret")); string(b) != "outside content\n" {
		t.Fatalf("outside file changed: %q", b)
	}
	ents, _ := os.ReadDir(filepath.Join(base, "outside"))
	if len(ents) != 1 {
		t.Fatalf("files created outside: %v", ents)
	}
	t.Logf("reads inside %d, refused %d, other errors %d", ok, refused, other)
}

// TestRenameRace moves a directory out of the root and back while reads go
// through a path below it with "..": nothing outside is ever read.
func TestRenameRace(t *testing.T) {
	fsys, ws, base := setup(t)
	mustMkdir(t, filepath.Join(ws, "d", "e"))
	mustWrite(t, filepath.Join(ws, "d", "e", "f"), "inside\n")
	mustMkdir(t, filepath.Join(base, "outside", "e"))
	mustWrite(t, filepath.Join(base, "outside", "e", "f"), "outside\n")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		in, out := filepath.Join(ws, "d"), filepath.Join(base, "d-moved")
		for !stop.Load() {
			_ = os.Rename(in, out)
			_ = os.Rename(out, in)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
		for _, p := range []string{"d/e/../e/f", "d/e/f", "d/../d/e/f"} {
			if r, err := fsys.ReadFile(p, 0, 0); err == nil && strings.Contains(r.Text(), "outside") {
				stop.Store(true)
				t.Fatalf("read outside content via %s", p)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
}
