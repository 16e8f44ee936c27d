package workspace

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
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

// openRegular opens t for reading, refusing anything but a regular file
// without blocking: it Lstats first, opens with O_NONBLOCK and checks the
// opened descriptor's type and identity.
func (f *FS) openRegular(op string, t *target) (*os.File, fs.FileInfo, error) {
	fi, err := t.m.root.Lstat(t.rel)
	if err != nil {
		return nil, nil, f.wrapErr(op, t.user, t.m, err)
	}
	if fi.IsDir() {
		return nil, nil, fmt.Errorf("%s %s: is a directory", strings.TrimPrefix(op, "file-"), quote(t.user))
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, &Violation{Op: op, Path: t.user, Resolved: t.abs, Kind: KindSpecial, Detail: fileType(fi.Mode()), Workspace: f.workspace}
	}
	file, err := t.m.root.OpenFile(t.rel, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, nil, f.wrapErr(op, t.user, t.m, err)
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, nil, f.wrapErr(op, t.user, t.m, err)
	}
	if !st.Mode().IsRegular() {
		file.Close()
		return nil, nil, &Violation{Op: op, Path: t.user, Resolved: t.abs, Kind: KindSpecial, Detail: fileType(st.Mode()), Workspace: f.workspace}
	}
	if !os.SameFile(fi, st) {
		file.Close()
		return nil, nil, fmt.Errorf("%s %s: the file changed while it was opened; try again", strings.TrimPrefix(op, "file-"), quote(t.user))
	}
	return file, st, nil
}

// readAll reads t (a regular file) up to the read limit; truncated reports
// whether the file was longer.
func (f *FS) readAll(op string, t *target) (data []byte, fi fs.FileInfo, truncated bool, err error) {
	file, fi, err := f.openRegular(op, t)
	if err != nil {
		return nil, nil, false, err
	}
	defer file.Close()
	data, err = io.ReadAll(io.LimitReader(file, f.Limits.MaxReadBytes+1))
	if err != nil {
		return nil, nil, false, f.wrapErr(op, t.user, t.m, err)
	}
	if int64(len(data)) > f.Limits.MaxReadBytes {
		return data[:f.Limits.MaxReadBytes], fi, true, nil
	}
	return data, fi, false, nil
}

// ReadResult is the result of ReadFile.
type ReadResult struct {
	// Path is the resolved absolute path.
	Path string `json:"path"`
	// Lines are the lines returned, numbered from 1.
	Lines []Line `json:"lines"`
	// TotalLines is the number of lines in the file (in the part read,
	// when the file exceeded the read limit).
	TotalLines int `json:"total_lines"`
	// Truncated is set when lines were left out or cut because of a limit.
	Truncated bool `json:"truncated"`
}

// Text renders the result as one "N:hash|text" line per line, ending with
// the truncation marker when Truncated.
func (r *ReadResult) Text() string {
	var b strings.Builder
	for _, l := range r.Lines {
		b.WriteString(l.String())
		b.WriteByte('\n')
	}
	if r.Truncated {
		b.WriteString(strings.TrimPrefix(truncMarker, "\n"))
		b.WriteByte('\n')
	}
	return b.String()
}

// readChecked resolves p inside its root, applies the read rules and reads
// the file (size-bounded).
func (f *FS) readChecked(p string) (t *target, data []byte, trunc bool, err error) {
	if t, err = f.resolve("file-read", p); err != nil {
		return nil, nil, false, err
	}
	if err = f.checkRead("file-read", t); err != nil {
		return nil, nil, false, err
	}
	data, _, trunc, err = f.readAll("file-read", t)
	return t, data, trunc, err
}

// ReadFile reads lines startLine..endLine (1-based, inclusive) of a file as
// anchored lines. startLine < 1 means 1; endLine < 1 or past the end means
// the last line. At most Limits.MaxReadLines lines and MaxOutputBytes bytes
// are returned; lines longer than MaxLineBytes are cut on a UTF-8 boundary
// (their anchors still hash the whole line).
func (f *FS) ReadFile(p string, startLine, endLine int) (*ReadResult, error) {
	t, data, trunc, err := f.readChecked(p)
	if err != nil {
		return nil, err
	}
	res := &ReadResult{Path: t.abs, Truncated: trunc}
	res.TotalLines, res.Truncated = f.eachLine(string(data), startLine, endLine, trunc, func(n int, full, text string) {
		res.Lines = append(res.Lines, Line{N: n, Hash: LineHash(full), Text: text})
	})
	return res, nil
}

// ReadTextResult is a read rendered as text.
type ReadTextResult struct {
	// Path is the resolved absolute path.
	Path string
	// Text is what ReadResult.Text returns for the same read.
	Text string
	// First and Last are the numbers of the first and last line returned
	// (0 when none).
	First, Last int
	// TotalLines and Truncated are as in ReadResult.
	TotalLines int
	Truncated  bool
}

// ReadText is ReadFile rendered at once as ReadResult.Text renders it, without
// a Line per line: the fast path of the read_file tool.
func (f *FS) ReadText(p string, startLine, endLine int) (*ReadTextResult, error) {
	t, data, trunc, err := f.readChecked(p)
	if err != nil {
		return nil, err
	}
	res := &ReadTextResult{Path: t.abs}
	var b strings.Builder
	b.Grow(len(data) + 16*(bytes.Count(data, []byte{'\n'})+1) + len(truncMarker))
	var num [20]byte
	res.TotalLines, res.Truncated = f.eachLine(string(data), startLine, endLine, trunc, func(n int, full, text string) {
		if res.First == 0 {
			res.First = n
		}
		res.Last = n
		b.Write(strconv.AppendInt(num[:0], int64(n), 10))
		b.WriteByte(':')
		b.Write(appendLineHash(num[:0], full))
		b.WriteByte('|')
		b.WriteString(text)
		b.WriteByte('\n')
	})
	if res.Truncated {
		b.WriteString(strings.TrimPrefix(truncMarker, "\n"))
		b.WriteByte('\n')
	}
	res.Text = b.String()
	return res, nil
}

// eachLine calls emit for lines startLine..endLine (1-based, inclusive;
// startLine < 1 means 1, endLine < 1 or past the end means the last line)
// of s (full is the line, shown the line as returned: long lines are cut), until Limits.MaxReadLines lines or
// MaxOutputBytes bytes were emitted. It returns the number of lines in s and
// whether anything was left out or cut (or trunc, the file was cut).
func (f *FS) eachLine(s string, startLine, endLine int, trunc bool, emit func(n int, full, shown string)) (total int, truncated bool) {
	truncated = trunc
	if s != "" {
		total = strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
	}
	if startLine < 1 {
		startLine = 1
	}
	if endLine < 1 || endLine > total {
		endLine = total
	}
	out, emitted := 0, 0
	rest := s
	for n := 1; n <= endLine; n++ {
		text := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			text, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if n < startLine {
			continue
		}
		if emitted >= f.Limits.MaxReadLines {
			truncated = true
			break
		}
		shown := text
		if len(text) > f.Limits.MaxLineBytes {
			shown = truncUTF8(text, f.Limits.MaxLineBytes) + " [... line truncated]"
			truncated = true
		}
		out += len(shown) + 12
		if out > f.Limits.MaxOutputBytes && emitted > 0 {
			truncated = true
			break
		}
		emit(n, text, shown)
		emitted++
	}
	return total, truncated
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
	return f.write(t, content)
}

// checkExisting checks an existing write target: a regular file with one
// link. It returns its mode, or exists=false.
func (f *FS) checkExisting(t *target) (mode fs.FileMode, exists bool, err error) {
	fi, err := t.m.root.Lstat(t.rel)
	if errors.Is(err, os.ErrNotExist) {
		return 0o644, false, nil
	}
	if err != nil {
		return 0, false, f.wrapErr("file-write", t.user, t.m, err)
	}
	if fi.IsDir() {
		return 0, false, fmt.Errorf("write %s: is a directory", quote(t.user))
	}
	if !fi.Mode().IsRegular() {
		return 0, false, &Violation{Op: "file-write", Path: t.user, Resolved: t.abs, Kind: KindSpecial, Detail: fileType(fi.Mode()), Workspace: f.workspace}
	}
	if n := nlink(fi); n > 1 && !f.off {
		return 0, false, &Violation{Op: "file-write", Path: t.user, Resolved: t.abs, Kind: KindHardLink, Detail: fmt.Sprint(n), Workspace: f.workspace}
	}
	return fi.Mode().Perm(), true, nil
}

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
	dir, base := path.Split(t.rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	if dir != "." {
		if err := t.m.root.MkdirAll(dir, 0o755); err != nil {
			return nil, f.wrapErr("file-write", t.user, t.m, err)
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmpBase := ".cordon-tmp-" + hex.EncodeToString(rnd[:]) + "-" + truncUTF8(base, 100)
	tmp := path.Join(dir, tmpBase)
	file, err := t.m.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return nil, f.wrapErr("file-write", t.user, t.m, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = t.m.root.Remove(tmp)
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
	if err := t.m.root.Rename(tmp, t.rel); err != nil {
		return nil, f.wrapErr("file-write", t.user, t.m, err)
	}
	ok = true
	return &WriteResult{Path: t.abs, Bytes: len(content), Created: !exists}, nil
}

// readForEdit resolves and reads a file that is to be rewritten.
func (f *FS) readForEdit(p string) (*target, string, error) {
	t, err := f.resolve("file-write", p)
	if err != nil {
		return nil, "", err
	}
	if err := f.checkWrite(t); err != nil {
		return nil, "", err
	}
	if _, _, err := f.checkExisting(t); err != nil {
		return nil, "", err
	}
	data, _, trunc, err := f.readAll("file-read", t)
	if err != nil {
		return nil, "", err
	}
	if trunc {
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

// Mkdir creates a directory and its missing parents inside the root.
func (f *FS) Mkdir(p string) (*Entry, error) {
	t, err := f.resolve("file-write", p)
	if err != nil {
		return nil, err
	}
	if err := f.checkWrite(t); err != nil {
		return nil, err
	}
	if err := t.m.root.MkdirAll(t.rel, 0o755); err != nil {
		return nil, f.wrapErr("file-write", p, t.m, err)
	}
	fi, err := t.m.root.Lstat(t.rel)
	if err != nil {
		return nil, f.wrapErr("file-write", p, t.m, err)
	}
	e := entryOf(t.abs, fi)
	return &e, nil
}

// statChecked resolves p inside its root, applies the read rules and
// describes what it names (without following a final link).
func (f *FS) statChecked(p string) (*target, fs.FileInfo, error) {
	t, err := f.resolve("file-read", p)
	if err != nil {
		return nil, nil, err
	}
	if err := f.checkRead("file-read", t); err != nil {
		return nil, nil, err
	}
	fi, err := t.m.root.Lstat(t.rel)
	if err != nil {
		return nil, nil, f.wrapErr("file-read", p, t.m, err)
	}
	return t, fi, nil
}

// Info describes a file or directory; symbolic links are followed (inside
// the root), and Name is the resolved absolute path.
func (f *FS) Info(p string) (*Entry, error) {
	t, fi, err := f.statChecked(p)
	if err != nil {
		return nil, err
	}
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
	if !fi.IsDir() {
		return nil, fmt.Errorf("list %s: not a directory", quote(p))
	}
	dir, err := t.m.root.Open(t.rel)
	if err != nil {
		return nil, f.wrapErr("file-read", p, t.m, err)
	}
	defer dir.Close()
	if st, err := dir.Stat(); err != nil || !st.IsDir() || !os.SameFile(st, fi) {
		return nil, fmt.Errorf("list %s: the directory changed while it was opened; try again", quote(p))
	}
	res := &ListResult{Path: t.abs}
	for {
		des, err := dir.ReadDir(256)
		for _, de := range des {
			if f.deniedPath(t.m, path.Join(t.rel, de.Name())) != "" && !f.off {
				continue
			}
			if len(res.Entries) >= f.Limits.MaxResults {
				res.Truncated = true
				break
			}
			info, ierr := de.Info()
			if ierr != nil {
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
