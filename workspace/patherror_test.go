package workspace

import (
	"errors"
	"io/fs"
	"testing"
)

// TestPathErrorAPI: a failure that is no sandbox violation comes back as a
// *PathError a caller can inspect with errors.As and errors.Is, naming the
// operation and the path as given.
func TestPathErrorAPI(t *testing.T) {
	fsys, _, _ := setup(t)
	for _, tc := range []struct {
		name, op, path string
		call           func(string) error
	}{
		{"read", "read", "missing.txt", func(p string) error { _, err := fsys.ReadFile(p, 0, 0); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(tc.path)
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("%s %s: %v (%T), want a *PathError", tc.op, tc.path, err, err)
			}
			if pe.Op != tc.op || pe.Path != tc.path || !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("PathError{Op: %q, Path: %q, Err: %v}, want op %q path %q and fs.ErrNotExist", pe.Op, pe.Path, pe.Err, tc.op, tc.path)
			}
			if want := tc.op + " '" + tc.path + "': no such file or directory"; err.Error() != want {
				t.Errorf("message %q, want %q", err.Error(), want)
			}
		})
	}
}
