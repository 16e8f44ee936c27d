//go:build unix

package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLock: a lock held (each Lock opens the file anew, so two in one
// process exclude each other as two processes do) makes another wait and
// fail after its bound with ErrTimeout naming the path; once released,
// the next is taken; a file lock and a directory lock alike.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		path string
		lock func(string, time.Duration) (func(), error)
	}{
		{"file", filepath.Join(dir, "x.lock"), Lock},
		{"dir", dir, LockDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release, err := tc.lock(tc.path, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = tc.lock(tc.path, 100*time.Millisecond)
			if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("second lock while held: %v, want ErrTimeout naming %s", err, tc.path)
			}
			if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
				t.Errorf("waited %s, want about 100ms", d)
			}
			got := make(chan error, 1)
			go func() {
				r, err := tc.lock(tc.path, 5*time.Second)
				if err == nil {
					r()
				}
				got <- err
			}()
			time.Sleep(50 * time.Millisecond)
			release()
			if err := <-got; err != nil {
				t.Errorf("lock after the release: %v", err)
			}
		})
	}
	if _, err := LockDir(filepath.Join(dir, "missing"), time.Second); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LockDir of a missing directory: %v", err)
	}
}
