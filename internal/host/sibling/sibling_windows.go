package sibling

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// exeSuffix ends a program's file name on Windows.
const exeSuffix = ".exe"

// recheck has nothing to check again on Windows: owner and mode bits are
// Unix notions, and Windows ACLs are not examined (see open).
func recheck(*Binary) error { return nil }

// open opens the program at p after checking with Lstat that it is a
// regular file, not a symbolic link or another reparse point, and checks
// the open file again. Windows has no owner and mode bits to check: who
// may replace the program is left to the ACLs of its directory, which
// cordon does not examine.
func open(p string) (*os.File, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, missing(p, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &Error{p, "is a symbolic link", "cordon runs only a program that is a file of its own beside it; " + reinstall()}
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, missing(p, err)
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, fmt.Errorf("checking %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &Error{p, "is not a regular file", reinstall()}
	}
	return f, nil
}

// missing is the error for a sibling that could not be opened.
func missing(p string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &Error{p, "is missing", reinstall()}
	}
	return &Error{p, fmt.Sprintf("cannot be opened (%v)", err), reinstall()}
}
