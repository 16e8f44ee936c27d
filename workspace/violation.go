package workspace

import (
	"fmt"
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
// sandbox. Its message is one sentence in the style of seed 000, for example
//
//	sandbox violation: path '../x' is outside working directory '/w'; use --no-sandbox to lift the restriction
type Violation struct {
	// Op is the audit operation: "file-read" or "file-write".
	Op string
	// Path is the path as the caller gave it.
	Path string
	// Resolved is the absolute path it resolved to, when known.
	Resolved string
	// Kind says why the path was refused.
	Kind Kind
	// Rule is the policy entry that decided (a deny glob, a protected path,
	// a root), when there is one.
	Rule string
	// Workspace is the working directory (the first root).
	Workspace string
	// Detail is extra text for some kinds (the file type of a special file,
	// the link count of a hard-linked file).
	Detail string
}

const lift = "; use --no-sandbox to lift the restriction"

// Error returns the one-sentence message.
func (v *Violation) Error() string {
	p := quote(v.Path)
	var s string
	switch v.Kind {
	case KindOutside:
		s = fmt.Sprintf("path %s is outside working directory %s", p, quote(v.Workspace))
		if v.Rule != "" {
			s += " and the other allowed roots"
		}
	case KindSymlink:
		s = fmt.Sprintf("path %s leads through a symbolic link outside %s", p, quote(v.Rule))
	case KindDenied:
		s = fmt.Sprintf("path %s is denied by rule %s", p, quote(v.Rule))
	case KindProtected:
		s = fmt.Sprintf("path %s is protected by rule %s and cannot be written", p, quote(v.Rule))
	case KindReadOnly:
		s = fmt.Sprintf("path %s is in read-only root %s and cannot be written", p, quote(v.Rule))
	case KindSpecial:
		s = fmt.Sprintf("path %s is a %s, and only regular files and directories may be used", p, v.Detail)
		return "sandbox violation: " + s
	case KindHardLink:
		s = fmt.Sprintf("path %s has %s hard links and cannot be written", p, v.Detail)
	case KindInvalid:
		s = fmt.Sprintf("path %s is not a valid path (%s)", p, v.Detail)
		return "sandbox violation: " + s
	default:
		s = fmt.Sprintf("path %s is refused", p)
	}
	return "sandbox violation: " + s + lift
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
