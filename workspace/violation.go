package workspace

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Kind says why a path was refused.
type Kind string

// The kinds of Violation.
const (
	// KindOutside is a path outside every root (a ".." escape, an absolute
	// path elsewhere).
	KindOutside Kind = "outside"
	// KindSymlink is a path that leads through a symbolic link outside its root.
	KindSymlink Kind = "symlink-escape"
	// KindDenied is a path matched by a deny rule of the policy.
	KindDenied Kind = "denied"
	// KindProtected is a write to a protected path or a deny_write path.
	KindProtected Kind = "protected"
	// KindReadOnly is a write inside a read-only root.
	KindReadOnly Kind = "read-only-root"
	// KindSpecial is a file that is neither regular nor a directory (FIFO,
	// device, socket).
	KindSpecial Kind = "special-file"
	// KindHardLink is a write to a regular file with more than one hard link.
	KindHardLink Kind = "hard-link"
	// KindInvalid is a path that cannot name a file (NUL byte, too long).
	KindInvalid Kind = "invalid-path"
)

// Violation is the typed error returned when an operation is refused by the
// sandbox. Its message is one sentence that names the rule that decided and,
// where the user's policy can change the outcome, the policy key; it never
// advises lifting the sandbox. For example
//
//	sandbox violation: path 'sub/.git/config' is protected by rule '**/.git/config': code placed there runs later on the host; the user can allow writes only by changing cordon's policy
type Violation struct {
	// Op is the audit operation: "file-read" or "file-write".
	Op string
	// Path is the path as the caller gave it.
	Path string
	// Resolved is the absolute path it resolved to, when known.
	Resolved string
	// Kind says why the path was refused.
	Kind Kind
	// Rule is the policy entry that decided (a deny glob, a protected rule,
	// a deny_write entry, a git directory entry, a root), when there is one.
	Rule string
	// Source says where Rule comes from (one of the Source constants), when
	// the kind alone does not: a KindProtected violation comes from the
	// protected rules, deny_write or a git directory.
	Source string
	// Workspace is the working directory (the first root).
	Workspace string
	// Detail is extra text for some kinds (the file type of a special file,
	// the link count of a hard-linked file, the git directory whose entry
	// is protected).
	Detail string
}

// The sources of a KindProtected Violation's Rule.
const (
	// SourceProtected is a rule of policy.Protected, relative to a
	// writable root.
	SourceProtected = "protected"
	// SourceDenyWrite is an entry of the policy's filesystem.deny_write.
	SourceDenyWrite = "filesystem.deny_write"
	// SourceGitDir is an entry of policy.GitDirProtected inside a git
	// directory (Detail names the directory).
	SourceGitDir = "git directory"
	// SourceLink is a path that a protected path, a symbolic link, names
	// (an .envrc -> tools/envrc, ~/.bashrc -> a dotfiles workspace's
	// bashrc); Detail is the link (policy.LinkTargets).
	SourceLink = "link"
)

// runsLater ends the message of a path protected because code placed there
// runs later on the host.
const runsLater = ": code placed there runs later on the host; the user can allow writes only by changing cordon's policy"

// Error returns the one-sentence message.
func (v *Violation) Error() string {
	p := quote(v.Path)
	var s string
	switch v.Kind {
	case KindOutside:
		if v.Rule != "" {
			s = fmt.Sprintf("path %s is outside the workspace %s and the other allowed roots: the file tools only reach the workspace and the roots the user's policy allows (see sandbox_status)", p, quote(v.Workspace))
		} else {
			s = fmt.Sprintf("path %s is outside the workspace %s: the file tools only reach the workspace and the roots the user's policy allows", p, quote(v.Workspace))
		}
	case KindSymlink:
		s = fmt.Sprintf("path %s leads through a symbolic link outside %s: the file tools follow only links that stay inside the root they start in", p, quote(v.Rule))
		if v.Detail != "" {
			s = fmt.Sprintf("path %s leads through a symbolic link or a junction: %s; give the path it names", p, v.Detail)
		}
	case KindDenied:
		s = fmt.Sprintf("path %s is denied by rule %s (the user's policy: filesystem.deny)", p, quote(v.Rule))
	case KindProtected:
		switch v.Source {
		case SourceDenyWrite:
			s = fmt.Sprintf("path %s is read-only by rule %s (the user's policy: filesystem.deny_write)", p, quote(v.Rule))
		case SourceGitDir:
			s = fmt.Sprintf("path %s is protected by rule %s of the git directory %s", p, quote(v.Rule), quote(v.Detail)) + runsLater
		case SourceGitLook:
			s = fmt.Sprintf("path %s is protected: git's %s names %s", p, v.Rule, quote(v.Detail)) + runsLater
		case SourceLink:
			s = fmt.Sprintf("path %s is protected: the protected path %s is a symbolic link to it", p, quote(v.Detail)) + runsLater
		default:
			s = fmt.Sprintf("path %s is protected by rule %s", p, quote(v.Rule)) + runsLater
		}
	case KindReadOnly:
		s = fmt.Sprintf("path %s is in the read-only root %s: the file tools write only inside the write paths of the user's policy (filesystem.write)", p, quote(v.Rule))
	case KindSpecial:
		s = fmt.Sprintf("path %s is a %s, and only regular files and directories may be used", p, v.Detail)
	case KindHardLink:
		s = fmt.Sprintf("path %s has %s hard links and cannot be written: the write would change the other links too", p, v.Detail)
	case KindInvalid:
		s = fmt.Sprintf("path %s is not a valid path (%s)", p, v.Detail)
	default:
		s = fmt.Sprintf("path %s is refused", p)
	}
	return "sandbox violation: " + s
}

// quote puts s in single quotes, shortening very long strings and making
// control characters and invalid UTF-8 visible, so that the message stays
// one readable line.
func quote(s string) string {
	const max = 200
	if len(s) > max {
		s = truncUTF8(s, max) + "..."
	}
	q := fmt.Sprintf("%q", s)
	q = q[1 : len(q)-1]
	q = strings.ReplaceAll(q, `\"`, `"`)
	return "'" + q + "'"
}

// PathError is an operation's failure on a path that is not a sandbox
// violation (a missing file, a permission the host refuses, a full disk).
// Its message names the operation and the path as the caller gave it and
// says what went wrong in words, without the system calls the package
// made, for example
//
//	read 'missing.txt': no such file or directory
//
// Err is the underlying error, for errors.Is (fs.ErrNotExist, ...).
type PathError struct {
	// Op is the operation: "read", "write", "list", ...
	Op string
	// Path is the path as the caller gave it.
	Path string
	// Err is the underlying error (an *fs.PathError, a syscall.Errno, ...).
	Err error
}

// Error returns "OP 'PATH': what went wrong".
func (e *PathError) Error() string {
	return e.Op + " " + quote(e.Path) + ": " + plainError(e.Err)
}

// Unwrap returns Err.
func (e *PathError) Unwrap() error { return e.Err }

// plainError is err's message without the system call and path that
// *fs.PathError, *os.LinkError and *os.SyscallError put in front of the
// error number's words ("openat a/b: no such file or directory" becomes
// "no such file or directory").
func plainError(err error) string {
	for {
		switch e := err.(type) {
		case *fs.PathError:
			err = e.Err
		case *os.LinkError:
			err = e.Err
		case *os.SyscallError:
			err = e.Err
		default:
			return err.Error()
		}
	}
}
