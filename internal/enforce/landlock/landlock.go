// Package landlock applies cordon's Landlock rules inside the sandbox.
//
// The in-sandbox helper calls Apply after setting rlimits and before
// installing the seccomp filter and exec'ing the command. Apply works with
// whatever Landlock ABI the kernel offers (best effort) and returns a Report
// of what was really enforced, so cordon can print honest "degraded:" lines.
//
// Two shapes of Rules are expected:
//
//   - Under bubblewrap (the namespaces already hide what must be hidden):
//     ReadOnly ["/"], ReadWrite = the policy's write paths plus "/tmp" and
//     "/dev" (bwrap's minimal /dev: /dev/null, /dev/tty, ptys), and
//     DenyNetwork when the network is denied.
//   - Landlock-only backend (no bwrap): ReadOnly is the read allowlist
//     (system directories, workspace, tool caches, "/proc"), with denied
//     paths removed by CarveOut; ReadWrite the write paths; StdDevices for
//     /dev/null, /dev/tty and friends and the command's own terminal (never
//     another /dev/pts/N); RestrictUnix for pathname unix sockets (ABI 9).
//
// Landlock rules are hierarchical and only grant: a path denied inside an
// allowed tree cannot be expressed directly, hence CarveOut, which grants
// the allowed tree's other children instead.
package landlock

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// Rules is what the helper asks Landlock to enforce. It travels inside the
// helper's spec as JSON. A zero Rules restricts nothing.
type Rules struct {
	// ReadOnly lists files and directories that may be read, listed and
	// executed (the whole hierarchy under a directory). Everything not
	// listed here or in ReadWrite is unreadable once any file-system rule
	// is applied (see FS).
	ReadOnly []string `json:"read_only,omitempty"`
	// ReadWrite lists files and directories that may also be written,
	// truncated, created, removed, renamed within (ABI 2+) and have device
	// ioctls (ABI 5+). Creating character or block devices is never
	// granted.
	ReadWrite []string `json:"read_write,omitempty"`
	// StdDevices grants read, write and device ioctls on the standard
	// character devices (/dev/null, /dev/zero, /dev/full, /dev/random,
	// /dev/urandom, /dev/tty) and on the terminal devices the calling
	// process's stdin, stdout and stderr are open on (its own
	// /dev/pts/N); /dev itself, /dev/ptmx and the rest of /dev/pts stay
	// unlisted, so the user's other terminals cannot be opened. New
	// pseudo-terminals cannot be used either: Landlock checks their
	// /dev/pts/N at open, also through TIOCGPTPEER, and no rule can name a
	// terminal that does not exist yet. Use it for the
	// Landlock-only backend, where /dev is the host's; under bwrap put
	// "/dev" in ReadWrite instead.
	StdDevices bool `json:"std_devices,omitempty"`
	// RestrictUnix confines connect(2) and sendmsg(2) to pathname unix
	// sockets (ssh-agent, docker, D-Bus) to sockets beneath ReadWrite and
	// to sockets created inside the sandbox (ABI 9+: the "resolve unix"
	// right). Below ABI 9 Landlock cannot restrict them at all: Report
	// says so, and a caller that must refuse them falls back to refusing
	// socket(AF_UNIX) with seccomp. Abstract sockets are ScopeAbstractUnix.
	RestrictUnix bool `json:"restrict_unix,omitempty"`
	// DenyNetwork restricts TCP bind and connect (ABI 4+) to the ports
	// in BindTCP and ConnectTCP (none by default). Without DenyNetwork, TCP
	// is restricted only if BindTCP or ConnectTCP is non-empty.
	DenyNetwork bool `json:"deny_network,omitempty"`
	// ConnectTCP lists the TCP ports that may be connected to.
	ConnectTCP []int `json:"connect_tcp,omitempty"`
	// BindTCP lists the TCP ports that may be bound (0 for an ephemeral
	// port).
	BindTCP []int `json:"bind_tcp,omitempty"`
	// ScopeSignals forbids signalling processes outside the sandbox's
	// Landlock domain (ABI 6+).
	ScopeSignals bool `json:"scope_signals,omitempty"`
	// ScopeAbstractUnix forbids connecting to abstract unix sockets
	// created outside the sandbox's Landlock domain (ABI 6+).
	ScopeAbstractUnix bool `json:"scope_abstract_unix,omitempty"`
}

// FS reports whether r restricts the file system at all: it does as soon
// as any path (or StdDevices) is listed.
func (r Rules) FS() bool {
	return len(r.ReadOnly) > 0 || len(r.ReadWrite) > 0 || r.StdDevices
}

// Net reports whether r restricts TCP.
func (r Rules) Net() bool {
	return r.DenyNetwork || len(r.ConnectTCP) > 0 || len(r.BindTCP) > 0
}

// ResolveUnixABI is the first Landlock ABI that can restrict connecting to
// pathname unix sockets (Rules.RestrictUnix).
const ResolveUnixABI = 9

// stdDevices are granted by Rules.StdDevices, with the caller's own
// terminals (see ownTerminals). /dev/pts is deliberately absent: granting it
// would open every terminal of the user (read what is typed there, write
// into it).
var stdDevices = []string{
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/tty",
}

// Report says what Apply enforced on this kernel.
type Report struct {
	// ABI is the kernel's Landlock ABI version, 0 when Landlock is
	// unavailable (not built, or not enabled at boot).
	ABI int `json:"abi"`
	// Enforced is true when a Landlock domain was created.
	Enforced bool `json:"enforced"`
	// FS: reads, writes, executes and directory changes are confined to
	// the rules (ABI 1+, when file-system rules were given).
	FS bool `json:"fs"`
	// Refer: renames and links between directories of writable trees are
	// possible (ABI 2+). Without it every cross-directory rename or link
	// fails with EXDEV.
	Refer bool `json:"refer"`
	// Truncate: truncating a file outside the write paths is denied
	// (ABI 3+). Without it truncate(2) is unrestricted.
	Truncate bool `json:"truncate"`
	// TCP: bind and connect are confined to the listed ports (ABI 4+,
	// when requested). Multipath TCP is not covered by Landlock.
	TCP bool `json:"tcp"`
	// IoctlDev: device ioctls are confined to the write paths and
	// standard devices (ABI 5+). Without it ioctls are unrestricted.
	IoctlDev bool `json:"ioctl_dev"`
	// ScopeSignals: signals to processes outside the domain are denied
	// (ABI 6+, when requested).
	ScopeSignals bool `json:"scope_signals"`
	// ScopeAbstractUnix: connecting to abstract unix sockets outside the
	// domain is denied (ABI 6+, when requested).
	ScopeAbstractUnix bool `json:"scope_abstract_unix"`
	// ResolveUnix: connecting to pathname unix sockets outside ReadWrite
	// and the domain is denied (ABI 9+, when requested).
	ResolveUnix bool `json:"resolve_unix"`
	// Terminals lists the terminal devices StdDevices granted because the
	// caller's stdin, stdout or stderr is open on them.
	Terminals []string `json:"terminals,omitempty"`
	// Skipped lists the paths of the rules that do not exist and were
	// left out.
	Skipped []string `json:"skipped,omitempty"`
	// Degraded lists, in words, each requested restriction the kernel
	// could not enforce, for "cordon: degraded:" lines.
	Degraded []string `json:"degraded,omitempty"`
}

// Limits bounds CarveOut.
type Limits struct {
	// MaxEntries is the largest total number of directory entries
	// CarveOut may list over all the directories it expands; 0 means
	// DefaultMaxEntries.
	MaxEntries int
}

// DefaultMaxEntries is CarveOut's bound when Limits.MaxEntries is 0.
const DefaultMaxEntries = 10000

// ErrTooManyEntries is returned (wrapped) by CarveOut when expanding would
// list more directory entries than Limits.MaxEntries.
var ErrTooManyEntries = errors.New("landlock: carve-out exceeds the directory entry limit")

// CarveOut returns the paths to grant so that everything under allowed is
// reachable except the denied paths.
//
// Landlock can only grant whole hierarchies, so an allowed directory that
// contains a denied path is replaced by its children other than the one
// leading to the denied path, recursively down to the denied path itself:
// allowed ["/home/u"] with denied ["/home/u/.ssh"] grants every entry of
// /home/u except .ssh. A denied path that does not exist is still carved
// out as far as its existing ancestors go, so it stays unreachable if the
// host creates it later. The directories along the way are not granted
// themselves, so they cannot be listed inside the sandbox (ls /home/u
// fails), though the granted entries beneath them can be used by name.
//
// Symbolic links among the siblings are not granted: Landlock checks the
// file a link resolves to, so granting a link would grant its target
// (possibly the denied path). Access through a link still works when its
// target is granted by another rule. Allowed and denied paths must be
// absolute; they are resolved through symbolic links first. An allowed
// path equal to or beneath a denied path is dropped (the deny wins).
// Allowed paths untouched by any deny are returned as given (cleaned).
// Denied paths must be literal: expand globs such as **/.env first.
//
// Cost: one directory listing per directory on the path from each allowed
// root to each denied path (depth times entries), and one Landlock rule
// (an open and a landlock_add_rule at Apply) per granted entry. A home
// directory of a few hundred entries with a handful of denies costs a few
// hundred rules, well under a millisecond to list. The total number of
// entries listed is bounded by lim.MaxEntries; past it CarveOut returns an
// error wrapping ErrTooManyEntries and no paths, so the caller fails closed
// (for instance by not granting that allowed tree).
func CarveOut(allowed, denied []string, lim Limits) ([]string, error) {
	max := lim.MaxEntries
	if max <= 0 {
		max = DefaultMaxEntries
	}
	var deny []string
	for _, d := range denied {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("landlock: denied path %q is not absolute", d)
		}
		deny = append(deny, resolve(d))
	}
	c := carver{left: max, out: map[string]bool{}}
	for _, a := range allowed {
		if !filepath.IsAbs(a) {
			return nil, fmt.Errorf("landlock: allowed path %q is not absolute", a)
		}
		ra := resolve(a)
		var under []string
		dropped := false
		for _, d := range deny {
			switch {
			case subpath.Within(ra, d):
				dropped = true
			case subpath.Within(d, ra):
				under = append(under, d)
			}
		}
		if dropped {
			continue
		}
		if len(under) == 0 {
			c.out[filepath.Clean(a)] = true
			continue
		}
		if err := c.expand(ra, under); err != nil {
			return nil, err
		}
	}
	granted := make([]string, 0, len(c.out))
	for p := range c.out {
		granted = append(granted, p)
	}
	sort.Strings(granted)
	return granted, nil
}

type carver struct {
	left int
	out  map[string]bool
}

// expand grants the entries of dir except those leading to a path in
// denied, each strictly beneath dir.
func (c *carver) expand(dir string, denied []string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // nothing there to grant
		}
		return fmt.Errorf("landlock: carving out %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil // a file or link on the way to a deny: grant nothing
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("landlock: carving out %s: %w", dir, err)
	}
	// Read one more than allowed, to tell "exactly at the limit" apart.
	// The entries' types come with the listing (d_type; os.File.ReadDir
	// asks lstat where the file system gives none).
	ents, err := f.ReadDir(c.left + 1)
	f.Close()
	if err != nil && len(ents) == 0 && !errors.Is(err, io.EOF) {
		return fmt.Errorf("landlock: carving out %s: %w", dir, err)
	}
	if len(ents) > c.left {
		return fmt.Errorf("%w (%d entries left) while listing %s", ErrTooManyEntries, c.left, dir)
	}
	c.left -= len(ents)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		child := filepath.Join(dir, e.Name())
		var under []string
		skip := false
		for _, d := range denied {
			if d == child {
				skip = true
			} else if subpath.Within(d, child) {
				under = append(under, d)
			}
		}
		if skip {
			continue
		}
		if len(under) > 0 {
			if err := c.expand(child, under); err != nil {
				return err
			}
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			continue // a link (see CarveOut)
		}
		// One that vanishes from now on is skipped by Apply (Skipped).
		c.out[child] = true
	}
	return nil
}

// resolve cleans p and resolves its symbolic links as far as it exists.
func resolve(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, base := filepath.Split(p)
	if dir == "" || dir == "/" || base == "" {
		return p
	}
	return filepath.Join(resolve(filepath.Clean(dir)), base)
}

// StdDevices lists the devices Rules.StdDevices grants (the command's own
// terminals aside).
func StdDevices() []string { return slices.Clone(stdDevices) }
