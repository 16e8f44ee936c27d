package globscan

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Default bounds, used for zero (or negative) fields of Limits.
const (
	// DefaultMaxEntries is the default bound on directory entries read:
	// 2,000,000, about 1-2 s of walking on a local SSD.
	DefaultMaxEntries = 2_000_000
	// DefaultMaxMatches is the default bound on matches: 10,000.
	DefaultMaxMatches = 10_000
	// DefaultDeadline is the default bound on wall-clock time: 5 s.
	DefaultDeadline = 5 * time.Second
)

// Limits bounds one Scan. Zero or negative fields mean the package defaults
// (DefaultMaxEntries, DefaultMaxMatches, DefaultDeadline).
type Limits struct {
	// MaxEntries is the most directory entries (files, directories,
	// symlinks, ...) Scan may read.
	MaxEntries int
	// MaxMatches is the most matches Scan may report.
	MaxMatches int
	// Deadline is the most wall-clock time Scan may take; on a machine
	// short of CPU (Linux's pressure stall information), up to four times
	// as much (see scan.extend).
	Deadline time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxMatches <= 0 {
		l.MaxMatches = DefaultMaxMatches
	}
	if l.Deadline <= 0 {
		l.Deadline = DefaultDeadline
	}
	return l
}

// ErrLimit is matched (with errors.Is) by every *LimitError.
var ErrLimit = errors.New("globscan: scan limit exceeded")

// LimitError reports that a Scan went over one of its Limits. The scan was
// abandoned, so its matches are incomplete and must not be used.
type LimitError struct {
	Root    string // the scanned root
	Bound   string // "MaxEntries", "MaxMatches" or "Deadline"
	Limit   string // the bound's value, e.g. "2000000" or "5s"
	Entries int    // entries seen when the scan stopped
	Dirs    int    // directories read when the scan stopped
	Matches int    // matches found when the scan stopped
	Elapsed time.Duration
	// Unanchored are the patterns that can match at any depth and so make
	// Scan read the whole tree.
	Unanchored []string
}

// Error describes the bound, the progress made and how to fix it.
func (e *LimitError) Error() string {
	var what string
	switch e.Bound {
	case "MaxMatches":
		what = fmt.Sprintf("more than %s paths match", e.Limit)
	case "Deadline":
		what = fmt.Sprintf("took longer than %s", e.Limit)
	default:
		what = fmt.Sprintf("more than %s directory entries to examine", e.Limit)
	}
	msg := fmt.Sprintf("globscan: matching deny patterns under %s: %s (bound %s hit after %d entries in %d directories, %d matches, %s); ",
		e.Root, what, e.Bound, e.Entries, e.Dirs, e.Matches, e.Elapsed.Round(time.Millisecond))
	if e.Bound == "MaxMatches" {
		msg += "make the patterns more specific or scan a smaller workspace, or deny the containing directory instead"
	} else {
		msg += "scan a smaller workspace or fewer writable roots and read paths, or anchor the patterns (\"build/**/token.json\" reads only build/)"
		if len(e.Unanchored) > 0 {
			msg += fmt.Sprintf("; these patterns search the whole tree: %s", strings.Join(e.Unanchored, ", "))
		}
	}
	return msg + "; or raise the limit"
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }
