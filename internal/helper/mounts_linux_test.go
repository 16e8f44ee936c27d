package helper

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
)

// TestApplyMountsRefuses: a mount the helper cannot make safely fails,
// naming its path, before any mount system call: a destination or a
// source that is a symbolic link (it would be followed) or is missing.
func TestApplyMountsRefuses(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "hooks")
	link := filepath.Join(dir, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    helperspec.Mount
		want string
	}{
		{"link destination", helperspec.Mount{Dst: link, ReadOnly: true}, "keeping read-only " + link + ": it is a symbolic link"},
		{"missing destination", helperspec.Mount{Dst: filepath.Join(dir, "gone")}, "binding " + filepath.Join(dir, "gone") + ": no such file"},
		{"link source", helperspec.Mount{Src: link, Dst: real, ReadOnly: true}, "its source " + link + ": it is a symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := applyMounts([]helperspec.Mount{tc.m}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("applyMounts(%+v) = %v, want an error with %q", tc.m, err, tc.want)
			}
		})
	}
}
