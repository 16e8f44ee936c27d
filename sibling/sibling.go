// Package sibling finds the programs installed beside the running one
// (cordon's cordon-helper and cordon-mcp, beside cordon) and checks each
// on an open descriptor before it is used: the directory of the running
// executable (os.Executable, symlinks resolved) is opened, the program is
// opened relative to that descriptor without following a symlink, and both
// are checked with fstat: a regular, executable file, owned by root or by
// the effective user, and neither it nor its directory writable by group
// or others. The descriptor it returns is the one checked: callers pass
// it on (bwrap's --ro-bind-fd, exec through /proc/self/fd) and never open
// the path again.
//
// It owns finding and checking only. It must not fall back to another
// program (the running one, one in $PATH) when a sibling is missing or
// fails its check: the caller reports the error. It imports only the
// standard library and x/sys, so that every binary may use it.
package sibling

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"

	"golang.org/x/sys/unix"
)

// Binary is a sibling program, open and checked.
type Binary struct {
	// Path is the program's absolute path on the host, for messages and
	// for what must name it (an argv[0], a GOCACHEPROG).
	Path string
	// File is the checked descriptor, opened read-only, close-on-exec,
	// without following a symlink. It stays open for the life of the
	// process (Open caches it).
	File *os.File
}

// ExecPath is the path through which the kernel executes the checked file
// itself: /proc/self/fd/N.
func (b *Binary) ExecPath() string {
	return fmt.Sprintf("/proc/self/fd/%d", b.File.Fd())
}

// Error says which sibling is unusable, what is wrong and how to fix it.
type Error struct {
	// Path is the sibling (or, for its directory, the directory).
	Path string
	// What is wrong, e.g. "is missing".
	What string
	// Fix is what the user can do about it.
	Fix string
}

func (e *Error) Error() string { return e.Path + " " + e.What + ": " + e.Fix }

// Path is the path of the program name beside the running executable
// (os.Executable: on Linux the kernel's /proc/self/exe, every symlink
// already resolved, so a cordon reached through a symlink finds the
// programs beside its real file).
func Path(name string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding %s: cordon cannot name its own binary: %w", name, err)
	}
	return filepath.Join(filepath.Dir(exe), name), nil
}

var (
	mu     sync.Mutex
	opened = map[string]*Binary{}
)

// Find opens and checks the program name beside the running executable
// (Path and Open).
func Find(name string) (*Binary, error) {
	p, err := Path(name)
	if err != nil {
		return nil, err
	}
	return Open(p)
}

// Open opens the program at the absolute path p relative to a descriptor
// of its directory, without following a symlink, and checks both on
// their descriptors. A program that passed is kept open and returned
// again for the same path for the life of the process, its owner and mode
// checked again on the descriptor each time: what a later use runs is
// what was checked. An *Error says why one did not pass.
func Open(p string) (*Binary, error) {
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("sibling: %q is not an absolute path", p)
	}
	p = filepath.Clean(p)
	mu.Lock()
	defer mu.Unlock()
	if b := opened[p]; b != nil {
		// The file held may have been made writable by others since
		// (chmod): a long-lived process (cordon-mcp) checks it again.
		var st unix.Stat_t
		if err := unix.Fstat(int(b.File.Fd()), &st); err != nil {
			return nil, fmt.Errorf("checking %s: %w", p, err)
		}
		if err := owned(p, &st, ""); err != nil {
			return nil, err
		}
		return b, nil
	}
	f, err := open(p)
	if err != nil {
		return nil, err
	}
	b := &Binary{Path: p, File: f}
	opened[p] = b
	return b, nil
}

func open(p string) (*os.File, error) {
	dir, name := filepath.Split(p)
	dir = filepath.Clean(dir)
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, missing(p, err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return nil, fmt.Errorf("checking %s: %w", dir, err)
	}
	if err := owned(dir, &st, "directory "); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, &Error{p, "is a symbolic link", "cordon runs only a program that is a file of its own beside it; " + reinstall()}
	case err != nil:
		return nil, missing(p, err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("checking %s: %w", p, err)
	}
	if err := regular(p, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := owned(p, &st, ""); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// missing is the error for a sibling that could not be opened.
func missing(p string, err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return &Error{p, "is missing", reinstall()}
	}
	return &Error{p, fmt.Sprintf("cannot be opened (%v)", err), reinstall()}
}

// regular checks that st is an executable regular file.
func regular(p string, st *unix.Stat_t) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &Error{p, "is not a regular file", reinstall()}
	}
	if st.Mode&0o111 == 0 {
		return &Error{p, "is not executable", "chmod 755 " + p + ", or " + reinstall()}
	}
	return nil
}

// owned checks that st, of the file or directory p (kind names which, for
// messages), is owned by root or the effective user and not writable by
// group or others.
func owned(p string, st *unix.Stat_t, kind string) error {
	if euid := uint32(os.Geteuid()); st.Uid != 0 && st.Uid != euid {
		return &Error{kind + p, fmt.Sprintf("is owned by uid %d, neither root nor you (uid %d), so another user could replace what cordon runs", st.Uid, euid),
			fmt.Sprintf("install cordon's binaries into a directory of your own or root's (%s)", reinstall())}
	}
	if st.Mode&0o022 != 0 {
		return &Error{kind + p, fmt.Sprintf("is writable by group or others (mode %04o), so another user could replace what cordon runs", st.Mode&0o7777),
			"chmod go-w " + p}
	}
	return nil
}

// reinstall says how to install every binary of cordon together.
func reinstall() string {
	v := "latest"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	return "install all of cordon's binaries together: go install github.com/cordon-sandbox/cordon/cmd/...@" + v + ", or go build -o DIR ./cmd/... in its source"
}
