//go:build linux

package globscan

import (
	"encoding/binary"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// dirReader lists one directory with raw getdents64 calls: no per-entry
// stat, no poller registration, and one allocation per batch of names.
type dirReader struct {
	fd   int
	path string
	buf  []byte
	ents []dent
}

// getdentsBuf is the size of the getdents64 buffer (as in os.ReadDir it
// is a few pages; larger buffers mean fewer calls on big directories).
const getdentsBuf = 32 << 10

// open starts listing path; d's buffers are reused across directories.
// Below the root (follow false) a symlink is not followed: a directory
// swapped for a symlink after being listed fails with ELOOP or ENOTDIR
// instead of being walked.
func (d *dirReader) open(path string, follow bool) error {
	flags := syscall.O_RDONLY | syscall.O_DIRECTORY | syscall.O_CLOEXEC
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	var fd int
	var err error
	for {
		if fd, err = syscall.Open(path, flags, 0); err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if d.buf == nil {
		d.buf = make([]byte, getdentsBuf)
	}
	d.fd, d.path = fd, path
	return nil
}

func (d *dirReader) close() { syscall.Close(d.fd) }

// next returns the next batch of entries, or io.EOF.
func (d *dirReader) next() ([]dent, error) {
	var n int
	var err error
	for {
		if n, err = syscall.Getdents(d.fd, d.buf); err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "getdents", Path: d.path, Err: err}
	}
	if n <= 0 {
		return nil, io.EOF
	}
	// struct linux_dirent64 { u64 ino; s64 off; u16 reclen; u8 type; char name[]; }
	s := string(d.buf[:n]) // the names are substrings of this
	d.ents = d.ents[:0]
	for off := 0; off+19 <= n; {
		reclen := int(binary.NativeEndian.Uint16(d.buf[off+16:]))
		if reclen < 19 || off+reclen > n {
			return nil, &fs.PathError{Op: "getdents", Path: d.path, Err: syscall.EIO}
		}
		ino := binary.NativeEndian.Uint64(d.buf[off:])
		typ := d.buf[off+18]
		end := off + 19
		for end < off+reclen && d.buf[end] != 0 {
			end++
		}
		name := s[off+19 : end]
		off += reclen
		if ino == 0 || name == "." || name == ".." {
			continue
		}
		var mode fs.FileMode
		switch typ {
		case syscall.DT_REG:
		case syscall.DT_DIR:
			mode = fs.ModeDir
		case syscall.DT_LNK:
			mode = fs.ModeSymlink
		case syscall.DT_FIFO:
			mode = fs.ModeNamedPipe
		case syscall.DT_SOCK:
			mode = fs.ModeSocket
		case syscall.DT_CHR:
			mode = fs.ModeDevice | fs.ModeCharDevice
		case syscall.DT_BLK:
			mode = fs.ModeDevice
		default: // DT_UNKNOWN: some filesystems do not fill d_type
			fi, err := os.Lstat(d.path + "/" + name)
			if err != nil {
				continue // gone since it was listed
			}
			mode = fi.Mode().Type()
		}
		d.ents = append(d.ents, dent{name: name, typ: mode, ino: ino})
	}
	return d.ents, nil
}
