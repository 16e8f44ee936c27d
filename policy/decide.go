package policy

import (
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
)

// The decision function of the violation monitor: what the policy says of
// one access a confined command tried, which entry decides, and which flag
// would allow it. The kernel layers (bubblewrap's mounts, Landlock,
// seccomp) enforce; this only labels, so it follows what the bwrap backend
// makes of the policy (see package plan): the paths it binds at the same
// location inside, the private /tmp, the sandbox's own /proc and /dev, the
// masks over denied paths, and what it keeps read-only in every writable
// root. A label names the policy entry as the MCP file tools do (see
// package workspace).

// Op is the kind of access; its values are the audit record's operation
// names.
type Op string

// The operations Decide judges.
const (
	// OpRead is reading a file or listing a directory.
	OpRead Op = "file-read"
	// OpWrite is any change: create, open for writing, truncate, mkdir,
	// unlink, rename, link, symlink, chmod, chown.
	OpWrite Op = "file-write"
	// OpExec is executing a file; it is decided as a read.
	OpExec Op = "file-exec"
	// OpConnect is, for Decide, connecting to the unix socket at a path
	// (see DecideConnect for an internet address).
	OpConnect Op = "network-connect"
)

// Decision is the policy's verdict on one access.
type Decision struct {
	// Denied says that the policy refuses the access.
	Denied bool
	// Rule is the entry that decides, with its key, paths absolute (the
	// caller may shorten the home directory to ~). A denial is one of
	//
	//	filesystem.deny: ENTRY             a secret (Secret is set)
	//	filesystem.deny_write: ENTRY       kept read-only, cordon's own config and HomeProtected too
	//	protected: RULE                    a rule of Protected, relative to a writable root
	//	git directory: ENTRY in DIR        an entry of GitDirProtected in the git directory DIR
	//	filesystem.read: not listed        no read or write path covers it
	//	filesystem.write: not listed       no write path covers it, nor any read path
	//	filesystem.write: not listed (read-only)
	//	                                   a read path covers it, or the sandbox's own /proc
	//	filesystem.write: not listed (the private /tmp is read-only)
	//	unix_sockets: not listed           a socket neither listed nor in a writable tree
	//	network: deny (...), network: loopback (...), network: filtered (...)
	//
	// and an allowed access names what allows it: "filesystem.read: DIR",
	// "filesystem.write: DIR", "unix_sockets: PATH", "private /tmp",
	// "sandbox: /proc", "sandbox: /dev", "sandbox: /run/cordon",
	// "sandbox: a directory above an allowed path", "network: open",
	// "network: loopback address" or "sandbox.mode: off".
	Rule string
	// Fix is the flag that would allow the access ("--allow-read DIR",
	// "--allow-write DIR", "--allow-unix-socket PATH"), or "" when no flag
	// should: a secret, a protected, read-only or guarded path, a system
	// directory, or a network connect (which needs the host's name).
	Fix string
	// Secret says that a deny entry or glob refused the access: no
	// suggestion may loosen it, and Fix is "".
	Secret bool
}

// Rules of allowed accesses and of denials that name no entry.
const (
	ruleOff         = "sandbox.mode: off"
	ruleTmp         = "private /tmp"
	ruleAbove       = "sandbox: a directory above an allowed path"
	ruleProc        = "sandbox: /proc"
	ruleDev         = "sandbox: /dev"
	ruleHelper      = "sandbox: /run/cordon"
	ruleNotAbs      = "not an absolute path (not decided)"
	ruleReadNo      = "filesystem.read: not listed"
	ruleWriteNo     = "filesystem.write: not listed"
	ruleWriteRO     = "filesystem.write: not listed (read-only)"
	ruleWriteTmp    = "filesystem.write: not listed (the private /tmp is read-only)"
	ruleSocketNo    = "unix_sockets: not listed"
	ruleNetOpen     = "network: open"
	ruleNetLoopback = "network: loopback address"
	// ruleNetDeny and the others below are a denied connect to a
	// non-loopback address, by network mode. No flag is suggested: one
	// host needs its name (--allow-net HOST[:PORT], which also only goes
	// through the proxy), and opening the whole network is the user's
	// call, not a fix.
	ruleNetDeny     = "network: deny (no network inside; --allow-net HOST[:PORT] lets a program that uses HTTP_PROXY reach that host through cordon's proxy, --net open shares the host's network)"
	ruleNetLoop     = "network: loopback (only the sandbox's own loopback and its forwarded ports; --allow-net HOST[:PORT] lets a program that uses HTTP_PROXY reach that host through cordon's proxy)"
	ruleNetFiltered = "network: filtered (only through cordon's proxy, HTTP_PROXY)"
)

// The trees the bwrap backend always provides, besides the policy's paths.
const (
	procDir   = "/proc"
	devDir    = "/dev"
	helperDir = "/run/cordon" // cordon's helper, and the host's Go module cache when remapped
)

// noWriteFix are the trees a write is never suggested in, nor in a
// directory above one: the system directories, the kernel's, and the
// system's state (/var, /run). The profiles' home tool caches and configs
// (DevelopmentHomeReads) are added for the home directory: a cache a
// sandbox could write would plant code in the user's next build (the
// sandbox cache is their writable stand-in).
var noWriteFix = append(slices.Clone(SystemReads), procDir, "/sys", devDir, "/boot", "/run", "/var")

// Decider is a Policy's decision function, compiled for one home
// directory: Decide and DecideConnect cost no system call for an allowed
// access (a write into a writable root whose path holds a git directory
// entry's name, such as hooks or config, looks the git directory up). It
// is safe for concurrent use. The Policy must not change after Decider.
type Decider struct {
	off  bool
	home string
	// workspace is the policy's: a directory above it is never
	// suggested (it holds the user's other projects).
	workspace string
	// reads and writes are the host trees bound inside, with their
	// rules: the read paths but the private /tmp, and the write paths
	// but the private /tmp (HostWrites).
	reads, writes []ruleRoot
	// exempt are the write roots that a deny_write entry at or above
	// them leaves writable (the workspace, the repository's git
	// directories: the bwrap backend binds them writable all the same).
	exempt map[string]bool
	// protRoots are the writable roots the Protected rules are relative
	// to: the host write paths but the sandbox cache.
	protRoots []string
	protected []string
	// git is where git looks for the workspace's repository (see
	// GitLooks), read once.
	git GitLooks
	// protHint[i] is text every path that protected[i] matches contains
	// (a literal part of the rule), or "".
	protHint []string
	// tmpWritable says that the private /tmp is writable.
	tmpWritable bool
	// emptyHome says that the home directory is an empty, read-only
	// directory inside (no read or write path covers it).
	emptyHome bool
	// system are the trees the sandbox always has: /proc, /dev, the
	// helper's, and the resolver's file with an open network.
	system []ruleRoot
	// above are the directories that exist inside because something
	// below them is bound, and the empty home.
	above   map[string]bool
	sockets map[string]string
	// deniedLoopback are the ports of the loopback that a denied network
	// still reaches: its name server (53, which answers "not found") and
	// the forwarded ports.
	deniedLoopback []uint16
	// absDeny are the absolute deny entries (paths and globs); relDeny
	// the relative globs, matched in globRoots.
	absDeny   []*DenyRule
	relDeny   []*DenyRule
	relHint   []string
	globRoots []globRoot
	denyWrite []*DenyRule
	guarded   []string
	// noWriteFix are the trees (system directories, home tool caches and
	// configs) in which no write is suggested.
	noWriteFix []string
	net        Decision // a connect to a non-loopback address
}

// ruleRoot is a tree and the rule that makes it visible.
type ruleRoot struct {
	path, rule string
}

// globRoot is a tree in which the backends search the relative deny globs
// (DenyGlobReadRoots and the writable roots).
type globRoot struct {
	path string
	// skip are the trees of DenyGlobSkipped strictly below path: what a
	// glob matches in them is not masked.
	skip []string
	// fileGlob is, for a read path that is a file, the glob that denies
	// it whole (DenyGlobForFile).
	fileGlob string
}

// Decider compiles the policy's decision function for the user's home
// directory home (absolute; the relative deny globs' roots and the empty
// home inside depend on it). It reads the file system a little: whether
// each read path is a file (a file is denied whole by a glob that matches
// its name), and with an open network where /etc/resolv.conf points.
// Entries that do not compile (Load refuses them) are left out.
func (p *Policy) Decider(home string) *Decider {
	d := &Decider{off: p.Mode == ModeOff, workspace: p.Workspace, exempt: map[string]bool{}, above: map[string]bool{"/": true}, sockets: map[string]string{}}
	if home != "" {
		d.home = filepath.Clean(home)
	}
	hostWrites := p.HostWrites()
	for _, r := range p.Read {
		if r != SandboxTmpDir {
			d.reads = append(d.reads, ruleRoot{r, "filesystem.read: " + r})
		}
	}
	for _, w := range hostWrites {
		d.writes = append(d.writes, ruleRoot{w, "filesystem.write: " + w})
		if w != p.SandboxCache {
			d.protRoots = append(d.protRoots, w)
		}
	}
	d.exempt[p.Workspace] = true
	if p.Repo != nil {
		for _, w := range p.Repo.Write {
			d.exempt[w] = true
		}
	}
	d.tmpWritable = slices.Contains(p.Write, SandboxTmpDir)
	h := d.home
	d.emptyHome = h != "" && h != "/" && h != SandboxTmpDir && !CoveredBy(h, p.Read) && !CoveredBy(h, hostWrites)
	d.protected = p.Protected
	d.git = p.workspaceGitLooks()
	for _, r := range p.Protected {
		d.protHint = append(d.protHint, literalHint(r))
	}
	for _, s := range p.UnixSockets {
		d.sockets[s] = "unix_sockets: " + s
	}
	d.system = []ruleRoot{{procDir, ruleProc}, {devDir, ruleDev}, {helperDir, ruleHelper}}
	if mode, _ := p.Network.Effective(); mode == NetOpen {
		// The bwrap backend binds the resolver's file where it lies
		// (often in /run) when the network is open.
		if t, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && t != "/etc/resolv.conf" {
			d.system = append(d.system, ruleRoot{t, "network: open (the resolver's file, /etc/resolv.conf)"})
		}
	}
	visible := []string{SandboxTmpDir}
	for _, rs := range [][]ruleRoot{d.reads, d.writes, d.system} {
		for _, r := range rs {
			visible = append(visible, r.path)
		}
	}
	visible = append(visible, p.UnixSockets...)
	if d.emptyHome {
		visible = append(visible, h)
		d.above[h] = true
	}
	for _, v := range visible {
		for a := filepath.Dir(v); a != "/" && a != "." && !d.above[a]; a = filepath.Dir(a) {
			d.above[a] = true
		}
	}

	for _, e := range p.Deny {
		r, err := CompileDeny(e)
		if err != nil {
			continue
		}
		if r.abs {
			d.absDeny = append(d.absDeny, r)
		} else {
			d.relDeny = append(d.relDeny, r)
			d.relHint = append(d.relHint, literalHint(e))
		}
	}
	if len(d.relDeny) > 0 {
		skipped := DenyGlobSkipped(h)
		add := func(root string, read bool) {
			for _, g := range d.globRoots {
				if g.path == root {
					return
				}
			}
			g := globRoot{path: root}
			for _, s := range skipped {
				if s != root && Within(s, root) {
					g.skip = append(g.skip, s)
				}
			}
			if read {
				g.fileGlob = p.DenyGlobForFile(root)
			}
			d.globRoots = append(d.globRoots, g)
		}
		for _, r := range p.DenyGlobReadRoots(h) {
			add(r, true)
		}
		for _, w := range d.protRoots {
			if DeniedBy(p.Deny, w) == "" {
				add(w, false)
			}
		}
	}
	for _, e := range p.DenyWrite {
		if r, err := CompileDeny(e); err == nil {
			d.denyWrite = append(d.denyWrite, r)
		}
	}
	d.guarded = p.Guarded
	d.noWriteFix = slices.Clone(noWriteFix)
	if h != "" {
		for _, c := range DevelopmentHomeReads {
			d.noWriteFix = append(d.noWriteFix, filepath.Clean(strings.ReplaceAll(c, "${HOME}", h)))
		}
	}
	d.net, d.deniedLoopback = p.decideNet(), p.deniedLoopback()
	return d
}

// WithWritable returns a copy of d that also allows writes below each of
// dirs (absolute and clean), with the rule "sandbox: DIR": trees a backend
// makes writable beyond the policy's write paths, which the Policy alone
// does not tell, such as the sandbox's own Go module cache that the bwrap
// backend shows at the host's module cache path (its Landlock rules list
// it among the writable trees). Nothing in them is protected, as the
// backend protects nothing there.
func (d *Decider) WithWritable(dirs ...string) *Decider {
	c := *d
	c.writes = slices.Clone(d.writes)
	for _, dir := range dirs {
		c.writes = append(c.writes, ruleRoot{dir, "sandbox: " + dir})
	}
	return &c
}

// Decide returns the verdict on op of path (absolute and clean, as the
// sandbox sees it). home is the user's home directory. It compiles the
// policy for every call: a caller that decides often keeps a Decider.
func (p *Policy) Decide(op Op, path, home string) Decision {
	return p.Decider(home).Decide(op, path)
}

// DecideConnect returns the verdict on a connect to addr made directly by
// the sandboxed process (see Decider.DecideConnect).
func (p *Policy) DecideConnect(addr netip.AddrPort) Decision {
	d := Decider{off: p.Mode == ModeOff, net: p.decideNet(), deniedLoopback: p.deniedLoopback()}
	return d.DecideConnect(addr)
}

// DNSPort is the port of the name server cordon serves on a denied
// network's loopback.
const DNSPort = 53

// deniedLoopback are the loopback ports a denied network reaches (see
// Decider.deniedLoopback).
func (p *Policy) deniedLoopback() []uint16 {
	if mode, _ := p.Network.Effective(); mode != NetDeny {
		return nil
	}
	out := []uint16{DNSPort}
	for _, port := range p.Network.ForwardPorts {
		out = append(out, uint16(port))
	}
	return out
}

// decideNet is the verdict on a direct connect to a non-loopback address.
func (p *Policy) decideNet() Decision {
	switch mode, _ := p.Network.Effective(); mode {
	case NetOpen:
		return Decision{Rule: ruleNetOpen}
	case NetLoopback:
		return Decision{Denied: true, Rule: ruleNetLoop}
	case NetFiltered:
		return Decision{Denied: true, Rule: ruleNetFiltered}
	default:
		return Decision{Denied: true, Rule: ruleNetDeny}
	}
}

// DecideConnect returns the verdict on a connect to addr made directly by
// the sandboxed process, not through cordon's proxy. A loopback address
// (or the unspecified one, which reaches it) is always allowed: it is the
// sandbox's own loopback, where the proxy and the forwarded ports listen,
// or with an open network the host's. Any other address is allowed only
// with an open network (an open network with deny entries is filtered):
// with a filtered one only the proxy goes out. No Fix is given: allowing
// one host needs its name.
func (d *Decider) DecideConnect(addr netip.AddrPort) Decision {
	if d.off || !d.net.Denied {
		if d.off {
			return Decision{Rule: ruleOff}
		}
		return d.net
	}
	if a := addr.Addr().Unmap(); (a.IsLoopback() || a.IsUnspecified()) && (d.net.Rule != ruleNetDeny || slices.Contains(d.deniedLoopback, addr.Port())) {
		// The sandbox's own loopback. With the network denied there is
		// none to speak of but its name server and the forwarded ports:
		// the bwrap backend's Landlock layer refuses every other TCP
		// connect, the Landlock-only one every inet socket.
		return Decision{Rule: ruleNetLoopback}
	}
	return d.net
}

// Decide returns the verdict on op of path, absolute and clean, as the
// sandbox sees it (host paths at their own location, /tmp private). An
// Op not listed is decided as a read. In precedence:
//
//   - a deny entry or glob (filesystem.deny) refuses any access, Secret:
//     a literal or absolute-glob entry wherever the path lies, a relative
//     glob ("**/.env", "config/*.json") below a tree the backends search
//     (DenyGlobReadRoots and the writable roots), matched relative to that
//     tree and not inside its DenyGlobSkipped trees; a read path that is
//     a file is denied whole when a glob matches its name;
//   - a write is refused by a deny_write entry (Guarded ones included),
//     by a Protected rule relative to a writable root, or by an entry of
//     GitDirProtected in a git directory (one named .git, or IsGitDir);
//     none of them is given a Fix, also when the path lies outside every
//     write path, where a Protected rule is matched relative to / (a
//     rule "**/NAME" matches at any depth) and to the directory Fix
//     would name;
//   - a read or exec is allowed inside a read or write path, a listed
//     socket, the private /tmp, /proc, /dev, /run/cordon (the helper),
//     and a directory above any of these (they exist inside, holding
//     only what is bound) or the empty home; a write inside a write path
//     (the sandbox cache too), the private /tmp when it is writable, and
//     /dev;
//   - a unix socket connect is allowed to a listed socket (unix_sockets)
//     and to a socket in a write path or the private /tmp (one the
//     sandbox made; Landlock lets it); Fix names a socket that exists on
//     the host;
//   - anything else is not listed.
//
// Fix names the directory that would allow the access: the path itself
// when it is a directory on the host, else its nearest existing directory
// above; never /, /tmp (which names the private one), the home directory
// or a directory above it (the path itself is then named if it exists,
// else nothing is). A write is never
// suggested in the system directories (SystemReads, /proc, /sys, /dev,
// /boot, /run, /var) nor the profiles' home tool caches and configs
// (DevelopmentHomeReads), nor with a directory above one of these or one
// that holds a Guarded path; a write to the private /tmp is fixed by
// "--allow-write /tmp". A socket is suggested only if it exists on the
// host (cordon refuses to start without it).
func (d *Decider) Decide(op Op, path string) Decision {
	if d.off {
		return Decision{Rule: ruleOff}
	}
	if path == "" || path[0] != '/' {
		return Decision{Rule: ruleNotAbs}
	}
	path = filepath.Clean(path)
	if e := d.deniedBy(path); e != "" {
		return Decision{Denied: true, Secret: true, Rule: "filesystem.deny: " + e}
	}
	switch op {
	case OpWrite:
		return d.write(path)
	case OpConnect:
		return d.connect(path)
	}
	if r := d.readable(path); r != "" {
		return Decision{Rule: r}
	}
	return d.notListed(ruleReadNo, "--allow-read ", path, d.fix(path, false))
}
