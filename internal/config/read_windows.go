package config

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ReadFile reads a config file: it checks on the open file that it is a
// regular file of at most MaxFileSize bytes and reads at most that much.
// With opts it also refuses symbolic links and other reparse points (see
// ReadOptions). On Windows the checks below a Beneath root are made with
// Lstat before the open, through an os.Root that cannot leave the root:
// a link swapped in between the check and the open is not caught, as it
// is on Linux and macOS, which is in keeping with Windows runs, where the
// command's files are not confined at all. A missing file gives an error
// satisfying errors.Is(err, fs.ErrNotExist). Every error is one line
// starting with path; none contains the file's content.
func ReadFile(path string, opts ReadOptions) ([]byte, error) {
	var (
		f   *os.File
		err error
	)
	switch {
	case opts.Beneath != "":
		f, err = openBeneath(path, opts.Beneath)
	default:
		if opts.NoFollow {
			if fi, lerr := os.Lstat(path); lerr == nil && !regularOrDir(fi) {
				if fi.Mode()&fs.ModeSymlink != 0 {
					return nil, fmt.Errorf("%s: is a symbolic link; cordon does not follow it here, replace it with a regular file", path)
				}
			}
		}
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s); a config file must be a regular file", path, fileKind(fi.Mode()))
	}
	return readBounded(f, path, fi.Size())
}

// regularOrDir reports whether fi is a plain file or directory, not a
// link or another reparse point.
func regularOrDir(fi fs.FileInfo) bool {
	return fi.Mode().IsRegular() || fi.Mode().IsDir()
}

// fileKind names the type of a file for messages.
func fileKind(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeDir != 0:
		return "a directory"
	case mode&fs.ModeSymlink != 0:
		return "a symbolic link"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case mode&fs.ModeCharDevice != 0, mode&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a file"
}

// openBeneath opens path, which must lie below root, refusing a symbolic
// link or other reparse point on any component below root.
func openBeneath(path, root string) (*os.File, error) {
	rel, err := beneathRel(path, root)
	if err != nil {
		return nil, err
	}
	cur := filepath.Clean(root)
	parts := strings.Split(rel, string(filepath.Separator))
	for _, part := range parts {
		if part == ".." {
			return nil, fmt.Errorf("%s: leaves %s; cordon does not follow links there, replace it with a regular file", path, root)
		}
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return nil, pathError(path, err)
		}
		if !regularOrDir(fi) && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, symlinkError(path)
		}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, pathError(root, err)
	}
	defer r.Close()
	f, err := r.Open(rel)
	if err != nil {
		return nil, pathError(path, err)
	}
	return f, nil
}
