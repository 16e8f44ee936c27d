//go:build unix

package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// keyMarker is a piece of fakeKey that no error may repeat.
const keyMarker = "FAKEKEYFAKEKEY"

func TestReadFile(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	secret := filepath.Join(dir, "id_rsa")
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	write(secret, fakeKey)
	write(filepath.Join(ws, "ok.yaml"), "sandbox: {}\n")
	write(filepath.Join(ws, "sub", "ok.yaml"), "sandbox: {}\n")
	link(secret, filepath.Join(ws, "key.yaml"))
	link("/dev/zero", filepath.Join(ws, "zero.yaml"))
	link(filepath.Join(ws, "sub"), filepath.Join(ws, "linkdir"))
	write(filepath.Join(dir, "outside", "c.yaml"), "sandbox: {}\n")
	link(filepath.Join(dir, "outside"), filepath.Join(ws, "out"))
	write(filepath.Join(ws, "big.yaml"), strings.Repeat("#", 2<<20))
	write(filepath.Join(ws, "max.yaml"), strings.Repeat("#", MaxFileSize))
	if err := unix.Mkfifo(filepath.Join(ws, "fifo.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}

	beneath := ReadOptions{Beneath: ws}
	for _, tc := range []struct {
		name string
		path string
		opts ReadOptions
		want string // "" means success; else a substring of the error
	}{
		{"regular", filepath.Join(ws, "ok.yaml"), ReadOptions{}, ""},
		{"regular beneath", filepath.Join(ws, "sub", "ok.yaml"), beneath, ""},
		{"exactly 1 MiB", filepath.Join(ws, "max.yaml"), beneath, ""},
		{"symlink followed without options", filepath.Join(ws, "key.yaml"), ReadOptions{}, ""},
		{"symlink beneath", filepath.Join(ws, "key.yaml"), beneath, "key.yaml: is a symbolic link inside a writable directory; cordon does not follow links there, replace it with a regular file"},
		{"symlink nofollow", filepath.Join(ws, "key.yaml"), ReadOptions{NoFollow: true}, "key.yaml: is a symbolic link; cordon does not follow it here"},
		{"symlinked parent beneath", filepath.Join(ws, "linkdir", "ok.yaml"), beneath, "a directory on its path is a symbolic link inside a writable directory"},
		{"symlinked parent leaving", filepath.Join(ws, "out", "c.yaml"), beneath, "a directory on its path is a symbolic link"},
		{"dev zero link", filepath.Join(ws, "zero.yaml"), ReadOptions{}, "zero.yaml: not a regular file (a character device)"},
		{"dev zero link beneath", filepath.Join(ws, "zero.yaml"), beneath, "is a symbolic link inside a writable directory"},
		{"char device", "/dev/zero", ReadOptions{}, "/dev/zero: not a regular file (a character device)"},
		{"fifo", filepath.Join(ws, "fifo.yaml"), ReadOptions{}, "fifo.yaml: not a regular file (a FIFO)"},
		{"fifo beneath", filepath.Join(ws, "fifo.yaml"), beneath, "fifo.yaml: not a regular file (a FIFO)"},
		{"directory", filepath.Join(ws, "sub"), ReadOptions{}, "not a regular file (a directory)"},
		{"2 MiB", filepath.Join(ws, "big.yaml"), beneath, "big.yaml: larger than 1 MiB"},
		{"not beneath", filepath.Join(dir, "outside", "c.yaml"), beneath, "not inside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type res struct {
				data []byte
				err  error
			}
			done := make(chan res, 1)
			go func() {
				d, err := ReadFile(tc.path, tc.opts)
				done <- res{d, err}
			}()
			var r res
			select {
			case r = <-done:
			case <-time.After(2 * time.Second):
				t.Fatalf("ReadFile(%s) blocked", tc.path)
			}
			if tc.want == "" {
				if r.err != nil {
					t.Fatalf("ReadFile(%s) = %v", tc.path, r.err)
				}
				return
			}
			if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
				t.Fatalf("ReadFile(%s) = %v, want an error containing %q", tc.path, r.err, tc.want)
			}
			if msg := r.err.Error(); strings.Contains(msg, keyMarker) || strings.Contains(msg, "\n") {
				t.Errorf("error is not one line without the file's content: %q", msg)
			}
		})
	}

	for _, opts := range []ReadOptions{{}, {NoFollow: true}, beneath} {
		_, err := ReadFile(filepath.Join(ws, "missing", "x.yaml"), opts)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(missing, %+v) = %v, want fs.ErrNotExist", opts, err)
		}
	}
}

// TestWalkBeneath checks the fallback for kernels without openat2.
func TestWalkBeneath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "c.yaml"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("c.yaml", filepath.Join(dir, "a", "b", "l.yaml")); err != nil {
		t.Fatal(err)
	}
	dfd, err := unix.Open(dir, dirOpenFlags, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	for _, tc := range []struct {
		rel  string
		want error
	}{
		{"a/b/c.yaml", nil},
		{"l/b/c.yaml", unix.ELOOP},
		{"a/b/l.yaml", unix.ELOOP},
		{"a/x/c.yaml", unix.ENOENT},
		{"a/../a/b/c.yaml", unix.EXDEV},
	} {
		fd, err := walkBeneath(dfd, tc.rel)
		if err == nil {
			unix.Close(fd)
		}
		if !errors.Is(err, tc.want) && (err != nil || tc.want != nil) {
			t.Errorf("walkBeneath(%s) = %v, want %v", tc.rel, err, tc.want)
		}
	}
}
