// Package helperspec is the contract between the host side of cordon (the
// planner and the launcher) and the helper that runs inside the sandbox:
// the Spec the helper applies before it execs the command, the descriptor
// numbers on which the helper finds its binary, its spec, the status
// socket and the command's standard error, where its binary appears and
// under which hidden subcommand it runs, and the messages it exchanges with
// the host on the status socket.
//
// Both sides import it; it imports nothing of cordon but the two enforcers
// whose rules the spec carries (landlock.Rules and seccomp.Options), so
// that the in-sandbox stage depends on this package and the enforcers
// only. It must never import the planner (plan), the policy, config,
// probe, globscan or limits: a test in package helper checks it.
package helperspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/enforce/landlock"
	"github.com/cordon-sandbox/cordon/internal/enforce/seccomp"
)

// File descriptors the launcher hands to bwrap, and through it to the
// helper. They are fixed so that a printed plan is exactly what runs.
const (
	// FdHelperExe is an open descriptor of the helper's binary (checked
	// by package sibling, or the host program's own), bound into the
	// sandbox at HelperPath, or executed as HelperExec.
	FdHelperExe = 3
	// FdSpec carries the helper's Spec as JSON; it is closed before exec.
	FdSpec = 4
	// FdStatus is a unix socket on which the helper reports readiness (with
	// its credentials, so the host learns its pid) or an exec failure.
	FdStatus = 5
	// FdStderr is the command's real standard error; bwrap's own stderr is
	// captured by cordon so setup failures become one clear line.
	FdStderr = 6
	// FdGitConfigs is the first of the descriptors of the private copies
	// of the repositories' configs (plan.Plan.GitConfigs) that bwrap binds
	// over each config (--bind-fd) and then closes: the helper never gets
	// them.
	FdGitConfigs = 7
)

// HelperBinary is the name of cordon's helper program, installed beside
// cordon (cmd/cordon-helper).
const HelperBinary = "cordon-helper"

// HelperPath is where the helper's binary appears inside a bwrap sandbox.
const HelperPath = "/run/cordon/" + HelperBinary

// HelperExec is how the Landlock-only backend starts the helper, directly
// on the host: the kernel executes the descriptor the launcher opened and
// checked, inherited at FdHelperExe, never a path looked up again.
const HelperExec = "/proc/self/fd/3"

// Version is the version of the Spec: the launcher sends it, and a helper
// built with another refuses to run (install all binaries together). It
// changes whenever the Spec or the status messages change meaning.
const Version = 5

// HelperCommand is the hidden subcommand that runs the helper: a binary
// that embeds cordon calls the helper when its first argument is this.
const HelperCommand = "__helper"

// Spec is what the in-sandbox helper applies, in order, before it execs the
// command. It arrives on FdSpec as JSON, never in the environment or argv.
type Spec struct {
	// Version is the launcher's Version. Decode checks it first.
	Version int `json:"version"`
	// Binary is the helper's binary on the host, for the message of a
	// version mismatch.
	Binary string `json:"binary,omitempty"`
	// Rlimits are the resource limits to set.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// Landlock are the Landlock rules the helper applies, or nil.
	Landlock *landlock.Rules `json:"landlock,omitempty"`
	// WaitGo makes the helper wait, after reporting readiness, for MsgGo
	// from the host before it execs the command: the host first moves
	// the sandbox into its cgroup, so nothing the command starts escapes
	// the limits.
	WaitGo bool `json:"wait_go,omitempty"`
	// Status says that the launcher passed the status socket at FdStatus;
	// without it (a library host started the wrapped exec.Cmd itself:
	// sandbox.Wrap) the helper reports errors on its stderr. The helper
	// goes by this, never by what is open at FdStatus: its own Go runtime
	// may have opened a file there (the cgroup CPU limit it watches).
	Status bool `json:"status,omitempty"`
	// Stderr says that the command's real stderr is at FdStderr; without
	// it the helper's own stderr is the command's.
	Stderr bool `json:"stderr,omitempty"`
	// Seccomp is the seccomp filter the helper installs last, or nil for
	// none.
	Seccomp *seccomp.Options `json:"seccomp,omitempty"`
	// Env is the environment the helper execs the command with, and the
	// PATH it looks the command up in. The launcher fills it from the
	// plan's environment when it hands the spec over (a built plan leaves
	// it empty): bwrap, and the helper itself, run with an empty
	// environment, so nothing in the command's (LD_PRELOAD,
	// LD_LIBRARY_PATH, GODEBUG, secrets) reaches a process on the host.
	Env []string `json:"env,omitempty"`
	// Net are the listeners the helper creates inside the sandbox's
	// network namespace and hands to the host (network modes filtered and
	// loopback under bubblewrap), or nil.
	Net *Net `json:"net,omitempty"`
	// Watch asks for the violation monitor: the helper installs the
	// watch filter (seccomp.InstallWatch) last, after the enforcing one,
	// and hands its listener to the host (MsgWatch) before MsgReady; if
	// it cannot, MsgReady says why as a note starting WatchUnavailable.
	Watch bool `json:"watch,omitempty"`
	// Supervise asks for the Landlock-only backend's supervisor: the
	// helper installs the supervisor's filter (seccomp.InstallSupervise)
	// instead of the watch filter, and hands its listener over as
	// MsgWatch, followed by the command's own terminals (see
	// WatchMessage); if it cannot, the command does not run.
	Supervise bool `json:"supervise,omitempty"`
	// Renames asks, when neither Watch nor Supervise does, for a filter
	// that sends only the rename calls to the host (seccomp.InstallRenames),
	// handed over as Watch's is: the host writes git's rename of
	// config.lock onto a config bound from a private copy into that copy
	// (plan.Plan.GitConfigs), and lets every other rename go on. If it
	// cannot be installed, MsgReady says why as a note starting
	// WatchUnavailable, and such a rename fails as onto any mount point.
	Renames bool `json:"renames,omitempty"`
	// Ask asks, when neither Watch nor Supervise does, for a filter that
	// sends the open calls to the host (seccomp.Opened; with Renames, the
	// rename calls too; with TreeChanges, every call of the count's too,
	// in the same filter: seccomp.AskTreeCalls), handed over as Watch's
	// is: cordon run --ask holds an open the policy may refuse while it
	// asks, and lets every other go on. Only the opens: a run where
	// nothing is asked pays for no other call. If it cannot be
	// installed, MsgReady says why as a note starting WatchUnavailable,
	// and nothing is asked about files.
	Ask bool `json:"ask,omitempty"`
	// TreeChanges asks, when neither Watch nor Supervise does, for the
	// filter that also sends every call that can add a name to a
	// directory or change a file's permissions (seccomp.InstallTree: an
	// open with O_CREAT, mkdir, mknod, link, symlink, rename, bind, a
	// btrfs subvolume or snapshot, chmod, an ACL), handed over as
	// Watch's is: the host counts them and lets each go on (renames as
	// with Renames), so that a run that made none is not walked again
	// after it (planted.Options.TreeUnchanged). With Ask, the one filter
	// sends both's calls. If it cannot be installed, the host gets no
	// listener and the check after the run walks every writable tree
	// (MsgReady says why only when Renames or Ask was asked too).
	TreeChanges bool `json:"tree_changes,omitempty"`
	// Files are files the helper creates inside before it applies
	// Landlock (the trust bundle of a run with credentials), each new,
	// read-only, never through a symbolic link.
	Files []File `json:"files,omitempty"`
	// Mounts are the protected paths' mounts the helper makes first, in
	// order, in the sandbox's mount namespace (bubblewrap runs it with
	// CAP_SYS_ADMIN there for them): a workspace with many repositories
	// has many, and bubblewrap reads the whole mount table after each
	// of its own. Any that fails ends the run before the command starts.
	Mounts []Mount `json:"mounts,omitempty"`
	// User, with Mounts, is the user the command runs as, in a user
	// namespace of its own that the helper makes after the mounts:
	// bubblewrap ran the helper as uid 0, which an unprivileged user's
	// sandbox maps to that user, so that it may mount. Nil: the
	// helper's own (root's sandbox).
	User *User `json:"user,omitempty"`
	// Detach are the mounts the helper removes once Mounts are made: the
	// sources bwrap bound for it (GitConfigDir), which the command must
	// not reach.
	Detach []string `json:"detach,omitempty"`
}

// Mount is one mount of Spec.Mounts: Src (a path inside the sandbox, or
// Dst itself when empty) bound onto Dst with its submounts, then Dst made
// read-only if ReadOnly. Neither may be a symbolic link.
type Mount struct {
	// Src is what is bound, inside the sandbox; "" binds Dst onto itself.
	Src string `json:"src,omitempty"`
	// Fd, when not 0, names an inherited descriptor of a private copy of
	// a git config (FdGitConfigs on): the helper binds the file of
	// GitConfigDir that is the same file, writable, and closes Fd.
	Fd int `json:"fd,omitempty"`
	// Dst is where.
	Dst string `json:"dst"`
	// ReadOnly makes the new mount (not those below it) read-only.
	ReadOnly bool `json:"ro,omitempty"`
}

// User is the uid and gid of Spec.User.
type User struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// PlaceholderDir is where bubblewrap binds the sources of the
// placeholders of Spec.Mounts (an empty directory, an empty file, a
// commondir, an unreadable directory and file) for the helper to bind
// from.
const PlaceholderDir = "/run/cordon/placeholders"

// GitConfigDir is where bubblewrap binds the directory of the private
// copies of the repositories' configs (from the descriptor after theirs)
// when the helper binds them (Mount.Fd); the helper detaches it after.
const GitConfigDir = "/run/cordon/gitconfigs"

// File is one file of Spec.Files.
type File struct {
	// Path is where it is created (absolute, inside the sandbox).
	Path string `json:"path"`
	// Data is its content.
	Data []byte `json:"data"`
}

// WatchUnavailable starts the note of a MsgReady whose helper could not
// start the violation monitor (Spec.Watch): the command runs confined,
// unwatched.
const WatchUnavailable = "the violation monitor could not start"

// MsgWatch carries, with SCM_RIGHTS, the listener of the violation
// monitor's seccomp filter (Spec.Watch). The helper keeps no copy.
const MsgWatch = 'W'

// Unsupervised is the degraded line of a Landlock-only run started without
// the launcher's status socket (Wrap), which has no one to serve the
// supervisor (Spec.Supervise): the helper runs the command without it.
const Unsupervised = "no supervisor (the command was started with Wrap, not Run, so nothing on the host serves it): denied and protected paths inside the allowed trees are readable and writable, and file metadata outside the write paths can be changed (chmod, chown, utimes, setxattr); run the command with Run for them to be refused"

// WatchMessage is the MsgWatch message: the type, then the terminals the
// command may open (the helper's Landlock report), NUL-separated.
func WatchMessage(terminals []string) []byte {
	return []byte(string(MsgWatch) + strings.Join(terminals, "\x00"))
}

// ParseWatch returns the terminals of a MsgWatch message.
func ParseWatch(b []byte) []string {
	if len(b) < 2 {
		return nil
	}
	return strings.Split(string(b[1:]), "\x00")
}

// Rlimit is one setrlimit call.
type Rlimit struct {
	// Name is the limit's name, e.g. "RLIMIT_AS".
	Name string `json:"name"`
	// Resource is the RLIMIT_* constant.
	Resource int `json:"resource"`
	// Value is the soft and hard limit.
	Value uint64 `json:"value"`
}

// MaxSpec bounds the size of the spec the helper reads. The spec carries
// the command's environment (the kernel takes up to a quarter of the stack
// limit of arguments and environment, 2 MiB by default) and the Landlock
// rules: the bound is a sanity check only.
const MaxSpec = 16 << 20

// VersionError is a spec of another Version than the helper's: the
// helper and the launcher come from different builds of cordon.
type VersionError struct {
	// Binary is the helper's binary on the host, as the spec names it.
	Binary string
	// Got is the spec's version, what the launcher wants.
	Got int
}

func (e *VersionError) Error() string {
	b := e.Binary
	if b == "" {
		b = "binary"
	}
	return fmt.Sprintf("the helper %s is from another cordon build (spec version %d, cordon wants %d): install all binaries together", b, Version, e.Got)
}

// Decode reads a JSON Spec from r, refusing one over MaxSpec bytes, of
// another Version (a *VersionError, decided before anything else of the
// spec is read), or with fields this version does not know (a newer
// launcher's rule must never be dropped silently).
func Decode(r io.Reader) (Spec, error) {
	var s Spec
	data, err := io.ReadAll(io.LimitReader(r, MaxSpec+1))
	if err != nil {
		return s, fmt.Errorf("reading spec: %w", err)
	}
	if len(data) > MaxSpec {
		return s, fmt.Errorf("reading spec: longer than %d bytes", MaxSpec)
	}
	var v struct {
		Version int    `json:"version"`
		Binary  string `json:"binary"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return s, fmt.Errorf("decoding spec: %w", err)
	}
	if v.Version != Version {
		return s, &VersionError{Binary: v.Binary, Got: v.Version}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("decoding spec: %w", err)
	}
	return s, nil
}

// Messages on FdStatus. Each is one datagram whose first byte says what it
// is. The helper sends MsgReady with its credentials, so the host learns
// the command's pid in its own pid namespace.
const (
	// MsgReady is sent just before exec, followed by what the helper could
	// not enforce, one note a line (see ReadyMessage).
	MsgReady = 'R'
	// MsgGo is the host's answer to MsgReady when the helper must wait
	// (Spec.WaitGo) until the sandbox is in its cgroup.
	MsgGo = 'G'
	// MsgExecFailed is followed by the exit status (125, 126 or 127) and a
	// message, as "E127 msg" (see ExecFailedMessage).
	MsgExecFailed = 'E'
)

// ReadyMessage is the MsgReady datagram carrying notes, the rules the
// helper could not enforce.
func ReadyMessage(notes []string) []byte {
	return append([]byte{MsgReady}, strings.Join(notes, "\n")...)
}

// ParseReady returns the notes of a MsgReady datagram.
func ParseReady(msg []byte) ([]string, error) {
	if len(msg) == 0 || msg[0] != MsgReady {
		return nil, fmt.Errorf("not a ready message: %q", msg)
	}
	if len(msg) == 1 {
		return nil, nil
	}
	return strings.Split(string(msg[1:]), "\n"), nil
}

// ExecFailedMessage is the MsgExecFailed datagram for exit status code
// and the message msg.
func ExecFailedMessage(code int, msg string) []byte {
	return []byte(string(rune(MsgExecFailed)) + strconv.Itoa(code) + " " + msg)
}

// ParseExecFailed returns the exit status and the message of a
// MsgExecFailed datagram.
func ParseExecFailed(msg []byte) (code int, text string, err error) {
	if len(msg) == 0 || msg[0] != MsgExecFailed {
		return 0, "", fmt.Errorf("not an exec failure message: %q", msg)
	}
	num, text, _ := strings.Cut(string(msg[1:]), " ")
	code, err = strconv.Atoi(num)
	if err != nil || code <= 0 || code > 255 {
		return 0, "", errors.New("exec failure message without a valid exit status: " + strconv.Quote(string(msg)))
	}
	return code, text, nil
}
