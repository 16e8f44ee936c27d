package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"strings"
	"time"
	"unicode/utf8"
)

// Entry describes one file or directory.
type Entry struct {
	// Name is the base name (List) or the path as resolved, relative to its
	// root (Info).
	Name string `json:"name"`
	// Type is "file", "dir", "symlink" or "other".
	Type string `json:"type"`
	// Size is the size in bytes.
	Size int64 `json:"size"`
	// Mode is the permission string, e.g. "-rw-r--r--".
	Mode string `json:"mode"`
	// ModTime is the modification time.
	ModTime time.Time `json:"mtime"`
}

func entryOf(name string, fi fs.FileInfo) Entry {
	t := "other"
	switch {
	case fi.Mode().IsRegular():
		t = "file"
	case fi.IsDir():
		t = "dir"
	case fi.Mode()&fs.ModeSymlink != 0:
		t = "symlink"
	}
	return Entry{Name: name, Type: t, Size: fi.Size(), Mode: fi.Mode().String(), ModTime: fi.ModTime()}
}

// fileType names a special file's type for a Violation.
func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file"
}

// truncMarker ends every truncated text.
const truncMarker = "\n[... truncated by cordon: output limit reached]"

// truncUTF8 cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	if i < len(s) && !utf8.RuneStart(s[i]) {
		i = n
	}
	return s[:i]
}

// openRegular opens the existing target t for reading, refusing anything
// but a regular file without blocking: the walk looked the last component
// up with fstatat (a special file is refused before any open), and it is
// opened with openat(parent, name, O_RDONLY|O_NOFOLLOW|O_NONBLOCK) relative
// to the directory the walk holds; the descriptor's fstat must show a
// regular file, the one the walk saw. The caller closes the descriptor.
func (f *FS) openRegular(op string, t *target) (handle, *fileStat, error) {
	if !t.exists {
		return noHandle, nil, f.wrapErr(op, t.user, t.m, &fs.PathError{Op: "open", Path: t.rel, Err: errNoEnt})
	}
	fi := &fileStat{name: path.Base(t.rel), st: t.st}
	if fi.IsDir() {
		return noHandle, nil, fmt.Errorf("%s %s: is a directory", strings.TrimPrefix(op, "file-"), quote(t.user))
	}
	if !fi.Mode().IsRegular() {
		return noHandle, nil, &Violation{Op: op, Path: t.user, Resolved: t.abs, Kind: KindSpecial, Detail: fileType(fi.Mode()), Workspace: f.workspace}
	}
	dirfd, name := t.leaf()
	fd, err := openFileAt(dirfd, name)
	if metLink(err) {
		return noHandle, nil, fmt.Errorf("%s %s: the file changed while it was opened; try again", strings.TrimPrefix(op, "file-"), quote(t.user))
	}
	if err != nil {
		return noHandle, nil, f.wrapErr(op, t.user, t.m, &fs.PathError{Op: "openat", Path: t.rel, Err: err})
	}
	st := &fileStat{name: fi.name}
	if err := fstat(fd, &st.st); err != nil {
		closeHandle(fd)
		return noHandle, nil, f.wrapErr(op, t.user, t.m, &fs.PathError{Op: "fstat", Path: t.rel, Err: err})
	}
	if !st.Mode().IsRegular() {
		closeHandle(fd)
		return noHandle, nil, &Violation{Op: op, Path: t.user, Resolved: t.abs, Kind: KindSpecial, Detail: fileType(st.Mode()), Workspace: f.workspace}
	}
	if !sameFile(&t.st, &st.st) {
		closeHandle(fd)
		return noHandle, nil, fmt.Errorf("%s %s: the file changed while it was opened; try again", strings.TrimPrefix(op, "file-"), quote(t.user))
	}
	return fd, st, nil
}

// readAll reads t (a regular file, see openRegular) up to the read limit;
// truncated reports whether the file was longer.
func (f *FS) readAll(op string, t *target) (data []byte, fi fs.FileInfo, truncated bool, err error) {
	fd, st, err := f.openRegular(op, t)
	if err != nil {
		return nil, nil, false, err
	}
	defer closeHandle(fd)
	limit := f.Limits.MaxReadBytes
	data = make([]byte, 0, min(st.Size(), limit)+1)
	for int64(len(data)) <= limit {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, rerr := readHandle(fd, data[len(data):min(int64(cap(data)), limit+1)])
		if rerr != nil {
			return nil, nil, false, f.wrapErr(op, t.user, t.m, &fs.PathError{Op: "read", Path: t.rel, Err: rerr})
		}
		if n <= 0 {
			break
		}
		data = data[:len(data)+n]
	}
	if int64(len(data)) > limit {
		return data[:limit], st, true, nil
	}
	return data, st, false, nil
}

// readChecked resolves p inside its root, applies the read rules and reads
// the file (size-bounded); size is the file's size.
func (f *FS) readChecked(p string) (t *target, data []byte, size int64, trunc bool, err error) {
	if t, err = f.resolve("file-read", p); err != nil {
		return nil, nil, 0, false, err
	}
	defer t.close()
	if err = f.checkRead("file-read", t); err != nil {
		return nil, nil, 0, false, err
	}
	data, fi, trunc, err := f.readAll("file-read", t)
	if err != nil {
		return nil, nil, 0, false, err
	}
	return t, data, fi.Size(), trunc, nil
}

// splitLines splits text into lines without their "\n"; final reports
// whether the text ended with a newline.
func splitLines(s string) (lines []string, final bool) {
	if s == "" {
		return nil, false
	}
	final = strings.HasSuffix(s, "\n")
	if final {
		s = s[:len(s)-1]
	}
	return strings.Split(s, "\n"), final
}

func joinLines(lines []string, final bool) string {
	s := strings.Join(lines, "\n")
	if final && len(lines) > 0 {
		s += "\n"
	}
	return s
}

// WriteResult is the result of a write or edit.
type WriteResult struct {
	// Path is the resolved absolute path.
	Path string `json:"path"`
	// Bytes is the size written.
	Bytes int `json:"bytes"`
	// Created is set when the file did not exist before.
	Created bool `json:"created"`
	// Replacements is the number of replacements or line edits applied
	// (edits only).
	Replacements int `json:"replacements,omitempty"`
}

// WriteFile replaces (or creates) a file with content, atomically: the
// content goes to a temporary file in the same directory, inside the root,
// which is then renamed over the target. Missing parent directories are
// created inside the root. An existing file keeps its permissions.
func (f *FS) WriteFile(p, content string) (*WriteResult, error) {
	t, err := f.resolve("file-write", p)
	if err != nil {
		return nil, err
	}
	defer t.close()
	return f.write(t, content)
}

// checkExisting checks an existing write target: a regular file with one
// link, looked up with fstatat(parent, name, AT_SYMLINK_NOFOLLOW) in the
// directory the walk holds, which is the entry the final renameat replaces.
// It returns its mode, or exists=false.
func (f *FS) checkExisting(t *target) (mode fs.FileMode, exists bool, err error) {
	if len(t.names) == 0 {
		return 0, false, fmt.Errorf("write %s: is a directory", quote(t.user))
	}
	if t.firstMissing() < len(t.names)-1 {
		return 0o644, false, nil // a parent directory is missing
	}
	dirfd, name := t.leaf()
	fi := &fileStat{name: name}
	err = lstatAt(dirfd, name, &fi.st)
	if errors.Is(err, fs.ErrNotExist) {
		return 0o644, false, nil
	}
	if err != nil {
		return 0, false, f.wrapErr("file-write", t.user, t.m, &fs.PathError{Op: "fstatat", Path: t.rel, Err: err})
	}
	if fi.IsDir() {
		return 0, false, fmt.Errorf("write %s: is a directory", quote(t.user))
	}
	if !fi.Mode().IsRegular() {
		return 0, false, &Violation{Op: "file-write", Path: t.user, Resolved: t.abs, Kind: KindSpecial, Detail: fileType(fi.Mode()), Workspace: f.workspace}
	}
	if n := fi.st.links(); n > 1 && !f.off {
		return 0, false, &Violation{Op: "file-write", Path: t.user, Resolved: t.abs, Kind: KindHardLink, Detail: fmt.Sprint(n), Workspace: f.workspace}
	}
	return fi.Mode().Perm(), true, nil
}

// tmpPrefix starts the name of a write's temporary file, which lives
// beside its target until the rename.
const tmpPrefix = ".cordon-tmp-"

// isTemp reports whether name is a write's temporary file: List, Find and
// Grep leave it out, so that a call running beside a write does not show
// the file half-way (the write's content under another name).
func isTemp(name string) bool { return strings.HasPrefix(name, tmpPrefix) }

// write replaces (or creates) the target t with content: the missing
// parent directories are made with mkdirat in the directories the walk
// holds, the content goes to a new temporary file created there with
// openat(O_CREAT|O_EXCL|O_NOFOLLOW), and renameat replaces the last
// component's entry in that same directory, never following a link.
func (f *FS) write(t *target, content string) (*WriteResult, error) {
	if err := f.checkWrite(t); err != nil {
		return nil, err
	}
	if t.rel == "." {
		return nil, fmt.Errorf("write %s: is a directory", quote(t.user))
	}
	if int64(len(content)) > f.Limits.MaxWriteBytes {
		return nil, fmt.Errorf("write %s: content of %d bytes exceeds the %d-byte limit", quote(t.user), len(content), f.Limits.MaxWriteBytes)
	}
	mode, exists, err := f.checkExisting(t)
	if err != nil {
		return nil, err
	}
	if err := t.makeParents(false); err != nil {
		return nil, f.wrapErr("file-write", t.user, t.m, err)
	}
	dirfd, base := t.leaf()
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmpBase := tmpPrefix + hex.EncodeToString(rnd[:]) + "-" + truncUTF8(base, 100)
	file, err := createFileAt(dirfd, tmpBase, mode)
	if err != nil {
		return nil, f.wrapErr("file-write", t.user, t.m, &fs.PathError{Op: "openat", Path: path.Join(path.Dir(t.rel), tmpBase), Err: err})
	}
	ok := false
	defer func() {
		if !ok {
			_ = unlinkAt(dirfd, tmpBase)
		}
	}()
	if _, err := io.WriteString(file, content); err != nil {
		file.Close()
		return nil, f.wrapErr("file-write", t.user, t.m, err)
	}
	if err := file.Sync(); err != nil {
		file.Close()
		return nil, f.wrapErr("file-write", t.user, t.m, err)
	}
	if err := file.Close(); err != nil {
		return nil, f.wrapErr("file-write", t.user, t.m, err)
	}
	// Re-check just before the rename: a FIFO or hard link may have appeared.
	if _, _, err := f.checkExisting(t); err != nil {
		return nil, err
	}
	if err := renameAt(dirfd, tmpBase, base); err != nil {
		return nil, f.wrapErr("file-write", t.user, t.m, &os.LinkError{Op: "renameat", Old: tmpBase, New: t.rel, Err: err})
	}
	ok = true
	return &WriteResult{Path: t.abs, Bytes: len(content), Created: !exists}, nil
}

// readForEdit resolves and reads a file that is to be rewritten; the
// caller closes the target.
func (f *FS) readForEdit(p string) (*target, string, error) {
	t, err := f.resolve("file-write", p)
	if err != nil {
		return nil, "", err
	}
	fail := func(err error) (*target, string, error) {
		t.close()
		return nil, "", err
	}
	if err := f.checkWrite(t); err != nil {
		return fail(err)
	}
	if _, _, err := f.checkExisting(t); err != nil {
		return fail(err)
	}
	data, _, trunc, err := f.readAll("file-read", t)
	if err != nil {
		return fail(err)
	}
	if trunc {
		t.close()
		return nil, "", fmt.Errorf("edit %s: the file is larger than the %d-byte limit", quote(p), f.Limits.MaxReadBytes)
	}
	return t, string(data), nil
}

// EditFile replaces the one occurrence of old with new. It fails when old is
// empty, is not found, or occurs more than once (saying how many times).
func (f *FS) EditFile(p, old, new string) (*WriteResult, error) {
	if old == "" {
		return nil, fmt.Errorf("edit %s: the text to replace is empty", quote(p))
	}
	t, data, err := f.readForEdit(p)
	if err != nil {
		return nil, err
	}
	defer t.close()
	switch n := strings.Count(data, old); n {
	case 0:
		return nil, fmt.Errorf("edit %s: the text to replace was not found; re-read the file and copy it exactly", quote(p))
	case 1:
	default:
		return nil, fmt.Errorf("edit %s: the text to replace occurs %d times; include more surrounding text so that it is unique", quote(p), n)
	}
	res, err := f.write(t, strings.Replace(data, old, new, 1))
	if err != nil {
		return nil, err
	}
	res.Replacements = 1
	return res, nil
}

// Mkdir creates a directory and its missing parents inside the root, each
// with mkdirat in the directory the walk holds.
func (f *FS) Mkdir(p string) (*Entry, error) {
	t, err := f.resolve("file-write", p)
	if err != nil {
		return nil, err
	}
	defer t.close()
	if err := f.checkWrite(t); err != nil {
		return nil, err
	}
	if t.exists && !t.st.isDir() {
		return nil, f.wrapErr("file-write", p, t.m, &fs.PathError{Op: "mkdir", Path: t.rel, Err: errNotDir})
	}
	if err := t.makeParents(true); err != nil {
		return nil, f.wrapErr("file-write", p, t.m, err)
	}
	dirfd, name := t.leaf()
	fi := &fileStat{name: name}
	if err := lstatAt(dirfd, name, &fi.st); err != nil {
		return nil, f.wrapErr("file-write", p, t.m, &fs.PathError{Op: "fstatat", Path: t.rel, Err: err})
	}
	e := entryOf(t.abs, fi)
	return &e, nil
}

// statChecked resolves p inside its root, applies the read rules and
// describes what it names (the walk's fstatat of the last component). The
// caller closes the target.
func (f *FS) statChecked(p string) (*target, fs.FileInfo, error) {
	t, err := f.resolve("file-read", p)
	if err != nil {
		return nil, nil, err
	}
	if err := f.checkRead("file-read", t); err != nil {
		t.close()
		return nil, nil, err
	}
	if !t.exists {
		t.close()
		return nil, nil, f.wrapErr("file-read", p, t.m, &fs.PathError{Op: "fstatat", Path: t.rel, Err: errNoEnt})
	}
	return t, &fileStat{name: path.Base(t.rel), st: t.st}, nil
}

// Info describes a file or directory; symbolic links are followed (inside
// the root), and Name is the resolved absolute path.
func (f *FS) Info(p string) (*Entry, error) {
	t, fi, err := f.statChecked(p)
	if err != nil {
		return nil, err
	}
	t.close()
	e := entryOf(t.abs, fi)
	return &e, nil
}

// ListResult is the result of List.
type ListResult struct {
	// Path is the resolved absolute directory.
	Path string `json:"path"`
	// Entries are the entries, sorted by name; denied entries are left out.
	Entries []Entry `json:"entries"`
	// Truncated is set when entries were left out because of MaxResults.
	Truncated bool `json:"truncated"`
}

// List lists a directory. Symbolic links are reported as links, not followed.
func (f *FS) List(p string) (*ListResult, error) {
	t, fi, err := f.statChecked(p)
	if err != nil {
		return nil, err
	}
	defer t.close()
	if !fi.IsDir() {
		return nil, fmt.Errorf("list %s: not a directory", quote(p))
	}
	dirfd, name := t.leaf()
	fd, err := openDirAt(dirfd, name)
	if err != nil {
		return nil, fmt.Errorf("list %s: the directory changed while it was opened; try again", quote(p))
	}
	dir := dirFile(fd, t.abs)
	defer dir.Close()
	var st sysStat
	if err := fstat(fd, &st); err != nil || !st.isDir() || !sameFile(&st, &t.st) {
		return nil, fmt.Errorf("list %s: the directory changed while it was opened; try again", quote(p))
	}
	res := &ListResult{Path: t.abs}
	for {
		des, err := dir.ReadDir(256)
		for _, de := range des {
			if isTemp(de.Name()) || f.deniedPath(t.m, path.Join(t.rel, de.Name())) != "" && !f.off {
				continue
			}
			if len(res.Entries) >= f.Limits.MaxResults {
				res.Truncated = true
				break
			}
			// Described by fstatat on the listed directory's descriptor.
			info := &fileStat{name: de.Name()}
			if lstatAt(fd, de.Name(), &info.st) != nil {
				continue
			}
			res.Entries = append(res.Entries, entryOf(de.Name(), info))
		}
		if err != nil || len(des) == 0 || res.Truncated {
			break
		}
	}
	sortEntries(res.Entries)
	return res, nil
}
