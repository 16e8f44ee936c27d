package planted

import (
	"os"

	"golang.org/x/sys/unix"
)

// prober looks names up in the directories at the top of a root: a
// descriptor of the root, each directory opened from it without following
// a link, each name an fstatat in it. A workspace of 200 repositories asks
// of each at every run, before and after the command (venvRoots): this
// spares os.Root's per-call descriptors and checks, which cost more than
// the system calls.
type prober struct {
	root *os.File
	fd   int // root's descriptor
}

// newProber returns a prober of r, or nil (then probe answers with r's
// own lookups).
func newProber(r *os.Root) *prober {
	f, err := r.Open(".")
	if err != nil {
		return nil
	}
	return &prober{root: f, fd: int(f.Fd())}
}

// probe reports, for each of names, whether it may exist (lstat) in the
// directory dir at the top of the root; ok is false when dir cannot be
// opened as a directory (a link, gone).
func (p *prober) probe(r *os.Root, dir string, names []string, present []bool) (ok bool) {
	if p == nil {
		return probeRoot(r, dir, names, present)
	}
	fd, err := unix.Openat(p.fd, dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	for i, n := range names {
		// As probeRoot: what fails otherwise than "does not exist" is
		// looked at.
		present[i] = unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != unix.ENOENT
	}
	return true
}

func (p *prober) close() {
	if p != nil {
		p.root.Close()
	}
}
