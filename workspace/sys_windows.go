package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The system calls of the walk, on Windows: every name is opened with
// NtCreateFile relative to the handle of the directory that holds it
// (OBJECT_ATTRIBUTES.RootDirectory), never by a path string, and with
// FILE_OPEN_REPARSE_POINT, so that a symbolic link or a junction is opened
// itself rather than followed. Such a name surrogate is then refused
// (errLinkRefused): the file tools do not follow links on Windows. A
// rename and a delete act on the handle of the entry they were given
// (FileRenameInformation with the directory's handle as its root,
// FileDispositionInformation), not on a path. Package os's Root does the
// same, but follows links inside the root and gives no entry-by-entry
// control: the walk needs to decide on each component it opens.

// handle is an open file or directory.
type handle = windows.Handle

// noHandle is no handle.
const noHandle = windows.InvalidHandle

// errNoEnt and errNotDir are the errors of a missing path and of a
// directory expected where there is none, as the system words them.
var (
	errNoEnt  error = &sysError{windows.ERROR_FILE_NOT_FOUND, "no such file or directory"}
	errNotDir error = &sysError{windows.ERROR_DIRECTORY, "not a directory"}
)

// sysError is a Windows error worded as on the other systems, so that an
// agent reads the same "no such file or directory" everywhere; errors.Is
// still sees the Windows error (and so fs.ErrNotExist).
type sysError struct {
	errno windows.Errno
	text  string
}

func (e *sysError) Error() string { return e.text }
func (e *sysError) Unwrap() error { return e.errno }

// sysErr words the errors a walk meets as the other systems do.
func sysErr(err error) error {
	if st, ok := err.(windows.NTStatus); ok {
		err = st.Errno()
	}
	switch err {
	case windows.ERROR_FILE_NOT_FOUND, windows.ERROR_PATH_NOT_FOUND:
		return &sysError{err.(windows.Errno), "no such file or directory"}
	case windows.ERROR_DIRECTORY:
		return &sysError{windows.ERROR_DIRECTORY, "not a directory"}
	case windows.ERROR_ALREADY_EXISTS, windows.ERROR_FILE_EXISTS:
		return &sysError{err.(windows.Errno), "file exists"}
	}
	return err
}

// errLinkRefused is the error of a component that is a symbolic link or a
// junction (a reparse point that names another file): not followed.
var errLinkRefused = errors.New("the file tools do not follow links on Windows")

// fileAttributeTagInfo is FILE_ATTRIBUTE_TAG_INFO.
type fileAttributeTagInfo struct {
	FileAttributes uint32
	ReparseTag     uint32
}

// fileRenameInformation is FILE_RENAME_INFORMATION, FileName[1] at its end.
type fileRenameInformation struct {
	ReplaceIfExists uint32
	RootDirectory   windows.Handle
	FileNameLength  uint32
	FileName        [1]uint16
}

// sysStat is what GetFileInformationByHandle says of a file, with the tag
// of a reparse point.
type sysStat struct {
	info windows.ByHandleFileInformation
	tag  uint32
}

func (s *sysStat) isDir() bool {
	return s.info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0 && !s.isLink()
}

// isLink: a reparse point whose tag is a name surrogate (a symbolic link,
// a junction): another name for another file. Other reparse points (cloud
// files, deduplicated files) are the files they are.
func (s *sysStat) isLink() bool {
	return s.info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 && s.tag&0x20000000 != 0
}

func (s *sysStat) isReg() bool { return !s.isDir() && !s.isLink() }

// links is the number of hard links to the file.
func (s *sysStat) links() uint64 { return uint64(s.info.NumberOfLinks) }
func (s *sysStat) size() int64 {
	return int64(s.info.FileSizeHigh)<<32 | int64(s.info.FileSizeLow)
}
func (s *sysStat) modTime() time.Time { return time.Unix(0, s.info.LastWriteTime.Nanoseconds()) }
func (s *sysStat) sys() any           { return &s.info }

// mode is as package os sets it: read-only files lack the write bits.
func (s *sysStat) mode() fs.FileMode {
	m := fs.FileMode(0o666)
	if s.info.FileAttributes&windows.FILE_ATTRIBUTE_READONLY != 0 {
		m = 0o444
	}
	switch {
	case s.isLink():
		m |= fs.ModeSymlink
	case s.isDir():
		m |= fs.ModeDir | 0o111
	}
	return m
}

// sameFile reports whether two stats describe the same file.
func sameFile(a, b *sysStat) bool {
	return a.info.VolumeSerialNumber == b.info.VolumeSerialNumber &&
		a.info.FileIndexHigh == b.info.FileIndexHigh && a.info.FileIndexLow == b.info.FileIndexLow
}

// openRootDir opens the directory dir (an absolute, link-free path) as a
// root's handle: the only open by path string of the package.
func openRootDir(dir string) (handle, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return noHandle, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	h, err := windows.CreateFile(p, windows.FILE_LIST_DIRECTORY|windows.FILE_TRAVERSE|windows.FILE_READ_ATTRIBUTES|windows.SYNCHRONIZE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return noHandle, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	var st sysStat
	if err := fstat(h, &st); err != nil || !st.isDir() {
		windows.CloseHandle(h)
		return noHandle, &fs.PathError{Op: "open", Path: dir, Err: errNotDir}
	}
	return h, nil
}

// ntOpen opens name relative to dir with NtCreateFile. An open of an
// existing entry passes FILE_OPEN_REPARSE_POINT (see openExisting); a
// creation (FILE_CREATE) fails on any existing entry, a link included.
func ntOpen(dir handle, name string, access, disposition, options uint32) (handle, error) {
	if name == ".." || strings.ContainsAny(name, "\\/:\x00") {
		// One name, never a path: the walk gives nothing else, and this
		// keeps it so (NtCreateFile would take "a\\b" as two names).
		return noHandle, &sysError{windows.ERROR_INVALID_NAME, "not a single name"}
	}
	if name == "" || name == "." {
		name = "" // the directory itself: an empty name relative to it
	}
	var us *windows.NTUnicodeString
	if name != "" {
		var err error
		if us, err = windows.NewNTUnicodeString(name); err != nil {
			return noHandle, err
		}
	} else {
		us = &windows.NTUnicodeString{}
	}
	oa := windows.OBJECT_ATTRIBUTES{RootDirectory: dir, ObjectName: us, Attributes: windows.OBJ_CASE_INSENSITIVE}
	oa.Length = uint32(unsafe.Sizeof(oa))
	var h handle
	var iosb windows.IO_STATUS_BLOCK
	err := windows.NtCreateFile(&h, access|windows.SYNCHRONIZE, &oa, &iosb, nil, 0,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, disposition,
		options|windows.FILE_SYNCHRONOUS_IO_NONALERT|windows.FILE_OPEN_FOR_BACKUP_INTENT, 0, 0)
	if err != nil {
		return noHandle, sysErr(err)
	}
	return h, nil
}

// refuseLink closes h and fails when it is a symbolic link or a junction.
func refuseLink(h handle, err error) (handle, error) {
	if err != nil {
		return noHandle, err
	}
	var st sysStat
	if err := fstat(h, &st); err != nil {
		windows.CloseHandle(h)
		return noHandle, err
	}
	if st.isLink() {
		windows.CloseHandle(h)
		return noHandle, errLinkRefused
	}
	return h, nil
}

// openDirAt opens the directory name of dir; a link fails (metLink).
func openDirAt(dir handle, name string) (handle, error) {
	return refuseLink(ntOpen(dir, name, windows.FILE_LIST_DIRECTORY|windows.FILE_TRAVERSE|windows.FILE_READ_ATTRIBUTES,
		windows.FILE_OPEN, windows.FILE_DIRECTORY_FILE|windows.FILE_OPEN_REPARSE_POINT))
}

// openFileAt opens the file name of dir for reading; a link fails
// (metLink).
func openFileAt(dir handle, name string) (handle, error) {
	return refuseLink(ntOpen(dir, name, windows.FILE_READ_DATA|windows.FILE_READ_ATTRIBUTES,
		windows.FILE_OPEN, windows.FILE_NON_DIRECTORY_FILE|windows.FILE_OPEN_REPARSE_POINT))
}

// createFileAt creates the new file name of dir for writing: nothing that
// exists, a link included, is opened (FILE_CREATE).
func createFileAt(dir handle, name string, perm fs.FileMode) (*os.File, error) {
	h, err := ntOpen(dir, name, windows.FILE_WRITE_DATA|windows.FILE_READ_ATTRIBUTES|windows.DELETE,
		windows.FILE_CREATE, windows.FILE_NON_DIRECTORY_FILE)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(h), name), nil
}

// lstatAt describes the entry name of dir, not following a link.
func lstatAt(dir handle, name string, st *sysStat) error {
	h, err := ntOpen(dir, name, windows.FILE_READ_ATTRIBUTES, windows.FILE_OPEN, windows.FILE_OPEN_REPARSE_POINT)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return fstat(h, st)
}

// fstat describes the open file h.
func fstat(h handle, st *sysStat) error {
	if err := windows.GetFileInformationByHandle(h, &st.info); err != nil {
		return err
	}
	st.tag = 0
	if st.info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		var ti fileAttributeTagInfo
		if err := windows.GetFileInformationByHandleEx(h, windows.FileAttributeTagInfo, (*byte)(unsafe.Pointer(&ti)), uint32(unsafe.Sizeof(ti))); err != nil {
			return err
		}
		st.tag = ti.ReparseTag
	}
	return nil
}

// readlinkAt refuses: links are not followed on Windows.
func readlinkAt(handle, string) (string, error) { return "", errLinkRefused }

// mkdirAt makes the directory name in dir.
func mkdirAt(dir handle, name string) error {
	h, err := ntOpen(dir, name, windows.FILE_LIST_DIRECTORY, windows.FILE_CREATE, windows.FILE_DIRECTORY_FILE)
	if err != nil {
		return err
	}
	return windows.CloseHandle(h)
}

// renameAt replaces the entry to of dir by its entry from: the entry from
// is opened (not followed) and renamed by handle, relative to dir.
func renameAt(dir handle, from, to string) error {
	h, err := ntOpen(dir, from, windows.DELETE|windows.FILE_READ_ATTRIBUTES, windows.FILE_OPEN, windows.FILE_OPEN_REPARSE_POINT)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	name, err := windows.UTF16FromString(to)
	if err != nil {
		return err
	}
	name = name[:len(name)-1]
	var info fileRenameInformation
	// At least the struct's own size: the system refuses a shorter buffer
	// (a one-letter name) as an invalid parameter.
	size := max(int(unsafe.Offsetof(info.FileName))+2*len(name), int(unsafe.Sizeof(info)))
	buf := make([]uint64, (size+7)/8) // aligned for the handle field
	ri := (*fileRenameInformation)(unsafe.Pointer(&buf[0]))
	ri.ReplaceIfExists = 1
	ri.RootDirectory = dir
	ri.FileNameLength = uint32(2 * len(name))
	copy(unsafe.Slice(&ri.FileName[0], len(name)), name)
	var iosb windows.IO_STATUS_BLOCK
	if err := windows.NtSetInformationFile(h, &iosb, (*byte)(unsafe.Pointer(&buf[0])), uint32(size), windows.FileRenameInformation); err != nil {
		return sysErr(err)
	}
	return nil
}

// unlinkAt removes the file name of dir, by handle.
func unlinkAt(dir handle, name string) error {
	h, err := ntOpen(dir, name, windows.DELETE, windows.FILE_OPEN, windows.FILE_NON_DIRECTORY_FILE|windows.FILE_OPEN_REPARSE_POINT)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	del := uint32(1) // FILE_DISPOSITION_INFORMATION.DeleteFile
	var iosb windows.IO_STATUS_BLOCK
	if err := windows.NtSetInformationFile(h, &iosb, (*byte)(unsafe.Pointer(&del)), 4, windows.FileDispositionInformation); err != nil {
		return sysErr(err)
	}
	return nil
}

// closeHandle closes h.
func closeHandle(h handle) error { return windows.CloseHandle(h) }

// readHandle reads from h; the end of the file is 0, nil.
func readHandle(h handle, b []byte) (int, error) {
	var n uint32
	err := windows.ReadFile(h, b, &n, nil)
	if err == windows.ERROR_HANDLE_EOF || err == windows.ERROR_BROKEN_PIPE {
		return 0, nil
	}
	return int(n), err
}

// dirFile is h as an *os.File, for ReadDir; closing it closes h.
func dirFile(h handle, name string) *os.File { return os.NewFile(uintptr(h), name) }

// metLink reports whether an open failed because the last component is a
// symbolic link or a junction.
func metLink(err error) bool { return err == errLinkRefused }

// notDirOrLink reports whether openDirAt failed because the name is not a
// directory it may enter: a link, or not a directory at all.
func notDirOrLink(err error) bool {
	return err == errLinkRefused || errors.Is(err, windows.ERROR_DIRECTORY)
}

// linkGone reports whether readlinkAt failed because the name is no
// longer a link: never on Windows, where links are refused.
func linkGone(error) bool { return false }

// offRoot is the single root of mode off: the root of the workspace's
// volume ("C:\"). Other volumes are out of reach even then.
func offRoot(ws string) string { return filepath.VolumeName(ws) + `\` }

// linkRefused reports whether readlinkAt refused to read a link: always
// on Windows (errLinkRefused).
func linkRefused(err error) bool { return err == errLinkRefused }

// rootPath is the path of the open root directory h as Windows resolved
// it (GetFinalPathNameByHandle): through a junction or a mount point in
// dir, and with its names' own case and long names, so that the rules
// are matched against the directory the handle holds. When Windows does
// not say, or names a network share, it is dir as given (already through
// filepath.EvalSymlinks): the rules then match that name.
func rootPath(h handle, dir string) string {
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n, err := windows.GetFinalPathNameByHandle(h, &buf[0], uint32(len(buf)), 0) // FILE_NAME_NORMALIZED, VOLUME_NAME_DOS
	if err != nil || n == 0 || int(n) > len(buf) {
		return dir
	}
	p := windows.UTF16ToString(buf[:n])
	switch {
	case strings.HasPrefix(p, `\\?\UNC\`):
		return dir // a network share: keep the name it was given
	case strings.HasPrefix(p, `\\?\`):
		return p[4:]
	}
	return p
}
