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
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
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
	return filepath.Join(filepath.Dir(exe), name+exeSuffix), nil
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
		if err := recheck(b); err != nil {
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

// reinstall says how to install every binary of cordon together.
func reinstall() string {
	v := "latest"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	return "install all of cordon's binaries together: go install github.com/cordon-sandbox/cordon/cmd/...@" + v + ", or go build -o DIR ./cmd/... in its source"
}
