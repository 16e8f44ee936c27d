package policy

import (
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/globscan"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// Within reports whether the absolute path p is dir or lies below it. Both
// must be clean; it compares whole components, so /w/anchor2 is not within
// /w/anchor. It is subpath.Within, the one such test of the tree.
func Within(p, dir string) bool { return subpath.Within(p, dir) }

// CoveredBy reports whether path is at or below one of roots.
func CoveredBy(path string, roots []string) bool {
	for _, r := range roots {
		if subpath.Within(path, r) {
			return true
		}
	}
	return false
}

// IsGlob reports whether a deny or deny_write entry is a pattern (it holds
// one of * ? [ {) rather than a literal path; it is globscan.IsGlob.
func IsGlob(s string) bool { return globscan.IsGlob(s) }

// DeniedBy returns the literal absolute deny entry that covers path (path is
// the entry or lies below it), or "". Relative globs and absolute globs are
// matched by the backends' walk, not here.
func DeniedBy(deny []string, path string) string {
	for _, d := range deny {
		if IsAbs(d) && !IsGlob(d) && Within(path, d) {
			return d
		}
	}
	return ""
}

// HostWrites returns the write paths that are host directories: Write
// without the private /tmp, which is never the host's.
func (p *Policy) HostWrites() []string {
	out := make([]string, 0, len(p.Write))
	for _, w := range p.Write {
		if w != SandboxTmpDir {
			out = append(out, w)
		}
	}
	return out
}

// IsAbs reports whether p is an absolute path as the policy reads one:
// the system's (filepath.IsAbs: "C:\x" on Windows), or rooted ("/usr",
// and "\usr" as Windows cleans it).
// The built-in profiles name Unix paths ("/usr"); on Windows, where files
// are not confined, they name nothing there but are still well-formed.
func IsAbs(p string) bool {
	return filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, string(filepath.Separator))
}
