package policy

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/cordon-sandbox/cordon/internal/globscan"
)

// The deny engine: one validation (ValidateDeny, at load time), one
// expansion for both backends (globscan.ScanPatterns, for relative globs in
// the roots DenyGlobReadRoots chooses and for absolute globs under the
// directory globscan.SplitAbs names), and one matcher (DenyRule) that
// decides for a single path the way that expansion does, for the MCP file
// tools.

// ValidateDeny reports what is wrong with a deny or deny_write entry as the
// backends would find it, or nil: a literal absolute path is always usable;
// an absolute glob must be a valid pattern below the directory named before
// its first wildcard (globscan.SplitAbs); a relative glob must be a valid
// globscan pattern. The error is the reason alone, for a config error that
// names the file, line and key.
func ValidateDeny(d string) error {
	_, err := CompileDeny(d)
	return err
}

// DenyRule is one compiled deny or deny_write entry.
type DenyRule struct {
	// Entry is the entry as in the policy.
	Entry string
	abs   bool
	// root is, for an absolute entry, the literal path (no glob) or the
	// directory below which the glob is matched.
	root string
	glob *globscan.Glob // nil for a literal absolute path
}

// CompileDeny validates and compiles one deny or deny_write entry (see
// ValidateDeny).
func CompileDeny(d string) (*DenyRule, error) {
	r := &DenyRule{Entry: d, abs: IsAbs(d)}
	pat := d
	if r.abs {
		if !IsGlob(d) {
			r.root = path.Clean(d)
			return r, nil
		}
		r.root, pat = globscan.SplitAbs(d)
	}
	g, err := globscan.Compile(pat)
	if err != nil {
		var pe *globscan.PatternError
		if errors.As(err, &pe) {
			return nil, errors.New(pe.Reason)
		}
		return nil, fmt.Errorf("deny pattern %q: %w", d, err)
	}
	r.glob = g
	return r, nil
}

// CompileDenyList compiles each entry of deny (see CompileDeny).
func CompileDenyList(deny []string) ([]*DenyRule, error) {
	out := make([]*DenyRule, 0, len(deny))
	for _, d := range deny {
		r, err := CompileDeny(d)
		if err != nil {
			return nil, fmt.Errorf("deny entry %q: %w", d, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// Hides reports whether the rule hides path (absolute and clean), found in
// the tree root, as the backends hide it: a literal absolute entry hides
// itself and everything below it; an absolute glob hides what it matches
// and everything below that; a relative glob hides, below root only, what
// it matches relative to root and everything below that.
func (r *DenyRule) Hides(root, path string) bool {
	if rel, ok := r.rel(root, path); ok {
		return r.rootMatches() || r.glob.Hides(rel)
	}
	return r.glob == nil && r.abs && Within(path, r.root)
}

// rootMatches reports whether an absolute glob matches the directory
// named before its first wildcard: "/a/**" matches /a itself.
func (r *DenyRule) rootMatches() bool {
	if !r.abs || r.glob == nil {
		return false
	}
	ok, _ := doublestar.Match(r.Entry, r.root)
	return ok
}

// Matches is Hides for path alone, not its directories: what a walk that
// does not enter a hidden directory still has to check.
func (r *DenyRule) Matches(root, path string) bool {
	if rel, ok := r.rel(root, path); ok {
		if rel == "." {
			return r.rootMatches()
		}
		return r.glob.Match(rel)
	}
	return r.glob == nil && r.abs && path == r.root
}

// rel returns path relative to the tree the rule's glob is matched in, and
// whether the rule is a glob and path lies in that tree.
func (r *DenyRule) rel(root, path string) (string, bool) {
	if r.glob == nil {
		return "", false
	}
	if r.abs {
		root = r.root
	}
	if !Within(path, root) {
		return "", false
	}
	if path == root {
		return ".", true
	}
	return strings.TrimPrefix(path[len(root):], "/"), true
}

// ExpandAbsDeny lists the existing paths the absolute deny glob d matches,
// as both backends mask them: what globscan.ScanPatterns finds under the
// directory before its first wildcard (globscan.SplitAbs), within the
// bounds lim, and that directory itself when d matches it ("/a/**").
// A missing directory matches nothing. Going over a bound is an error: a
// partial list of secrets is not safe to act on.
func ExpandAbsDeny(d string, lim globscan.Limits) ([]string, error) {
	r, err := CompileDeny(d)
	if err != nil {
		return nil, fmt.Errorf("deny pattern %q: %w", d, err)
	}
	if !r.abs || r.glob == nil {
		return nil, fmt.Errorf("deny pattern %q is not an absolute glob", d)
	}
	fi, err := os.Stat(r.root)
	if err != nil {
		return nil, nil
	}
	if r.rootMatches() {
		return []string{r.root}, nil
	}
	if !fi.IsDir() {
		return nil, nil
	}
	ms, _, err := globscan.ScanPatterns(r.root, []globscan.Pattern{{Glob: r.glob.String()}}, lim)
	if err != nil {
		return nil, fmt.Errorf("matching deny pattern %q: %w", d, err)
	}
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Path)
	}
	return out, nil
}
