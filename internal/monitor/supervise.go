package monitor

// Access is what the supervisor is about to do to a path
// (Options.Supervise).
type Access int

// The accesses the supervisor asks Policy about.
const (
	// AccessRead opens a file for reading or a directory for listing.
	AccessRead Access = iota
	// AccessWrite opens a file for writing, or truncates it.
	AccessWrite
	// AccessPath opens a file with O_PATH: it names it and reads nothing.
	AccessPath
	// AccessCreate creates the name: a file, directory, link or node.
	AccessCreate
	// AccessRemove removes the name or renames it away, and with it
	// everything below it.
	AccessRemove
	// AccessMeta changes the file's mode, owner, times or extended
	// attributes.
	AccessMeta
	// AccessLink gives the file another name (the source of a hard link).
	AccessLink
)

// Policy decides, for the supervisor, each access it is about to make on
// behalf of the sandboxed process, by the path it really reached: the
// path of the descriptor it opened itself (read back from
// /proc/self/fd/N), or of the directory it opened and the one name it
// acts on there. The supervisor is not confined by Landlock: Allow must
// refuse what the command's Landlock rules refuse, as well as what they
// cannot (a denied or protected path inside an allowed tree, a metadata
// change outside the write paths).
type Policy interface {
	Allow(path string, a Access) bool
	// AllowMove reports whether renaming from to to (both allowed to be
	// removed and created) keeps what the rules deny below from denied at
	// its new place.
	AllowMove(from, to string) bool
}

// Verdict is what Asker.Ask decides for an open it was asked about.
type Verdict int

// The verdicts.
const (
	// Continue lets the call go on to the kernel's layers unchanged.
	Continue Verdict = iota
	// Serve has the monitor open the file on the host, with the caller's
	// flags, and hand the descriptor in (SECCOMP_IOCTL_NOTIF_ADDFD).
	Serve
	// Refuse fails the call with EACCES.
	Refuse
)

// Asker is asked, on the bubblewrap backend's watch (Options.Ask), about
// the opens the policy may refuse but a person may allow (cordon run
// --ask). The decision stays the caller's: the monitor only maps the path
// to the host, resolves it there and performs the verdict. The access is
// AccessRead, AccessWrite (an existing file) or AccessCreate (an open
// that makes a file the host does not have).
type Asker interface {
	// Askable says, without a system call for what the policy allows,
	// whether access a to path (absolute, as the process named it, taken
	// as the host's path) might be asked about.
	Askable(path string, a Access) bool
	// Ask decides access a by pid (its program comm) to path, the real
	// path on the host the monitor reached (for AccessCreate, the real
	// path of the directory and the new name), holding the call
	// meanwhile.
	Ask(pid int, comm, path string, a Access) Verdict
}
