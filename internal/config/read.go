package config

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// MaxFileSize is the largest config file ReadFile reads: 1 MiB.
const MaxFileSize = 1 << 20

// ReadOptions says how ReadFile may reach a config file.
type ReadOptions struct {
	// NoFollow refuses a symbolic link as the last component of the path.
	NoFollow bool
	// Beneath, if set, is an absolute directory that contains the file
	// and that a sandbox may write (the workspace, a writable root): no
	// component of the path below it, the file included, may be a
	// symbolic link, and the path may not leave it.
	Beneath string
}

// readBounded reads an opened config file of size bytes (as its fstat
// said): at most MaxFileSize, and one byte more to see that it grew past it
// after the fstat.
func readBounded(r io.Reader, path string, size int64) ([]byte, error) {
	if size > MaxFileSize {
		return nil, tooLarge(path)
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, tooLarge(path)
	}
	return data, nil
}

func tooLarge(path string) error {
	return fmt.Errorf("%s: larger than 1 MiB; a config file must be at most 1 MiB", path)
}

// pathError wraps an errno from opening path, keeping errors.Is working
// (fs.ErrNotExist for ENOENT).
func pathError(path string, err error) error {
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

// symlinkError is the error for a symbolic link met below a writable root.
func symlinkError(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s: is a symbolic link inside a writable directory; cordon does not follow links there, replace it with a regular file", path)
	}
	return fmt.Errorf("%s: a directory on its path is a symbolic link inside a writable directory; cordon does not follow links there, replace it with a real directory", path)
}

// beneathRel checks that path and root are absolute and that path lies
// strictly below root, and returns path relative to root.
func beneathRel(path, root string) (string, error) {
	if !filepath.IsAbs(path) || !filepath.IsAbs(root) {
		return "", fmt.Errorf("%s: reading beneath %s needs absolute paths", path, root)
	}
	// subpath works on "/": Windows paths are compared in that form.
	rel, ok := subpath.Rel(filepath.ToSlash(filepath.Clean(root)), filepath.ToSlash(filepath.Clean(path)))
	if !ok || rel == "." {
		return "", fmt.Errorf("%s: not inside %s", path, root)
	}
	return filepath.FromSlash(rel), nil
}
