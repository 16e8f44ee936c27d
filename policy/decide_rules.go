package policy

// The rules of one decision (see decide.go): denied paths and globs, what
// is readable, what is writable and what stays protected there, unix
// sockets, and the flag a denial suggests.

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// notListed is the denial, by rule, of an access to path that no path of
// the policy allows, with flag and dir, the directory that would allow it
// (see fix), or none when dir is "". When a relative deny glob would hide
// path inside dir, the glob decides instead: the path is a secret there,
// and no flag allows it.
func (d *Decider) notListed(rule, flag, path, dir string) Decision {
	if dir == "" {
		return Decision{Denied: true, Rule: rule}
	}
	if e := d.globIn(dir, path); e != "" {
		return Decision{Denied: true, Secret: true, Rule: "filesystem.deny: " + e}
	}
	return Decision{Denied: true, Rule: rule, Fix: flag + dir}
}

// globIn returns the relative deny glob that would hide path in the tree
// root, were root a read or write path, or "": matched relative to root,
// or, when root is path itself, against its name (DenyGlobForFile).
func (d *Decider) globIn(root, path string) string {
	for _, r := range d.relDeny {
		if root == path && r.glob.Match(filepath.Base(path)) || r.Hides(root, path) {
			return r.Entry
		}
	}
	return ""
}

// deniedBy returns the deny entry that hides path, or "".
func (d *Decider) deniedBy(path string) string {
	for _, r := range d.absDeny {
		if r.Hides("/", path) {
			return r.Entry
		}
	}
	if len(d.relDeny) == 0 {
		return ""
	}
	for i := range d.globRoots {
		g := &d.globRoots[i]
		if !Within(path, g.path) || CoveredBy(path, g.skip) {
			continue
		}
		if path == g.path {
			if g.fileGlob != "" {
				return g.fileGlob
			}
			continue
		}
		rel := path[len(g.path):]
		for j, r := range d.relDeny {
			if h := d.relHint[j]; h != "" && !strings.Contains(rel, h) {
				continue // the glob's literal text is not in the path
			}
			if r.Hides(g.path, path) {
				return r.Entry
			}
		}
	}
	return ""
}

// readable returns the rule that makes path readable inside, or "".
func (d *Decider) readable(path string) string {
	for _, r := range d.reads {
		if Within(path, r.path) {
			return r.rule
		}
	}
	for _, r := range d.writes {
		if Within(path, r.path) {
			return r.rule
		}
	}
	if r, ok := d.sockets[path]; ok {
		return r
	}
	if d.inPrivateTmp(path) {
		return ruleTmp
	}
	for _, r := range d.system {
		if Within(path, r.path) {
			return r.rule
		}
	}
	if d.above[path] {
		return ruleAbove
	}
	return ""
}

// inPrivateTmp reports whether path lies in the private /tmp, given that
// no host path covers it (readable looks at those first): not in the
// empty home, when the home lies in /tmp.
func (d *Decider) inPrivateTmp(path string) bool {
	return Within(path, SandboxTmpDir) && !(d.emptyHome && Within(path, d.home))
}

// writeRoot returns the innermost write path that covers path, or "".
func (d *Decider) writeRoot(path string) (root ruleRoot, ok bool) {
	for _, r := range d.writes {
		if Within(path, r.path) && len(r.path) >= len(root.path) {
			root, ok = r, true
		}
	}
	return root, ok
}

// write decides a write to path, which no deny entry hides.
func (d *Decider) write(path string) Decision {
	if w, ok := d.writeRoot(path); ok {
		if e := d.denyWriteBy(path, w.path); e != "" {
			return Decision{Denied: true, Rule: "filesystem.deny_write: " + e}
		}
		if r := d.protectedIn(path); r != "" {
			return Decision{Denied: true, Rule: r}
		}
		if r := d.git.rule(path); r != "" {
			return Decision{Denied: true, Rule: r}
		}
		return Decision{Rule: w.rule}
	}
	rule := ruleWriteNo
	switch r := d.readable(path); r {
	case ruleTmp:
		if d.tmpWritable {
			return Decision{Rule: ruleTmp}
		}
		return Decision{Denied: true, Rule: ruleWriteTmp, Fix: "--allow-write " + SandboxTmpDir}
	case ruleDev:
		return Decision{Rule: ruleDev}
	case "":
	default:
		rule = ruleWriteRO
	}
	// Not writable: say so by the rule that would still refuse it
	// were a write path added, and then suggest none.
	if e := d.denyWriteBy(path, ""); e != "" {
		return Decision{Denied: true, Rule: "filesystem.deny_write: " + e}
	}
	if r := d.protectedBy(strings.TrimPrefix(path, "/")); r != "" {
		return Decision{Denied: true, Rule: "protected: " + r}
	}
	if e, g := gitDirEntry("/", path); e != "" {
		return Decision{Denied: true, Rule: "git directory: " + e + " in " + g}
	}
	dir := d.fix(path, true)
	if dir != "" && dir != path {
		// A rule of the root alone (.cordon.yaml).
		if r := d.protectedBy(path[len(dir)+1:]); r != "" {
			return Decision{Denied: true, Rule: "protected: " + r}
		}
	}
	return d.notListed(rule, "--allow-write ", path, dir)
}

// denyWriteBy returns the deny_write entry that keeps path read-only, or
// "". root is the innermost write path covering path, or "". A literal
// entry at or above root leaves root writable when it is the workspace or
// a git directory of its repository (the bwrap backend binds those
// writable over it); relative globs are matched below each write path
// that covers path.
func (d *Decider) denyWriteBy(path, root string) string {
	for _, r := range d.denyWrite {
		switch {
		case r.abs && r.glob == nil:
			if Within(path, r.root) && !(root != "" && d.exempt[root] && Within(root, r.root)) {
				return r.Entry
			}
		case r.abs:
			if r.Hides("/", path) {
				return r.Entry
			}
		default:
			for _, w := range d.writes {
				if Within(path, w.path) && r.Hides(w.path, path) {
					return r.Entry
				}
			}
		}
	}
	return ""
}

// protectedIn returns the rule that protects path inside the writable
// roots that cover it: a Protected rule relative to one of them, or an
// entry of a git directory at or below one.
func (d *Decider) protectedIn(path string) string {
	for _, w := range d.protRoots {
		rel, ok := subpath.Rel(w, path)
		if !ok {
			continue
		}
		if r := d.protectedBy(rel); r != "" {
			return "protected: " + r
		}
		if e, g := gitDirEntry(w, path); e != "" {
			return "git directory: " + e + " in " + g
		}
	}
	return ""
}

// protectedBy is ProtectedBy over the policy's Protected rules, trying
// only those whose literal text rel contains.
func (d *Decider) protectedBy(rel string) string {
	if rel == "." || rel == "" {
		return ""
	}
	for i := range d.protected {
		if h := d.protHint[i]; h != "" && !strings.Contains(rel, h) {
			continue
		}
		if r := ProtectedBy(d.protected[i:i+1], rel); r != "" {
			return r
		}
	}
	return ""
}

// gitDirEntry returns the entry of GitDirProtected that path (inside
// root) is or lies below, inside a git directory at or below root, and
// that directory; or "", "". Only a path holding an entry's name is
// looked up on the host.
func gitDirEntry(root, path string) (entry, gitDir string) {
	rel, ok := subpath.Rel(root, path)
	if !ok || rel == "." {
		return "", ""
	}
	// Each component of rel, with the directory above it.
	for i := 0; i <= len(rel); {
		j := strings.IndexByte(rel[i:], '/')
		last := j < 0
		if last {
			j = len(rel)
		} else {
			j += i
		}
		name := rel[i:j]
		for _, e := range GitDirProtected {
			n, dir := strings.CutSuffix(e, "/")
			if name != n || !dir && !last {
				continue
			}
			g := filepath.Join(root, rel[:i])
			if filepath.Base(g) == ".git" && isRealDir(g) || IsGitDir(g) {
				return e, g
			}
		}
		i = j + 1
	}
	return "", ""
}

// connect decides a connect to the unix socket at path, which no deny
// entry hides.
func (d *Decider) connect(path string) Decision {
	if r, ok := d.sockets[path]; ok {
		return Decision{Rule: r}
	}
	if w, ok := d.writeRoot(path); ok {
		return Decision{Rule: w.rule}
	}
	if d.readable(path) == ruleTmp {
		return Decision{Rule: ruleTmp}
	}
	var fix string
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		// cordon refuses to start with a socket that does not exist.
		fix = "--allow-unix-socket " + path
	}
	return Decision{Denied: true, Rule: ruleSocketNo, Fix: fix}
}

// fix returns the directory that would allow the access to path, were it
// a read or write path (see Decide), or "".
func (d *Decider) fix(path string, write bool) string {
	dir := path
	if !isDir(dir) {
		dir = filepath.Dir(dir)
		for dir != "/" && !isDir(dir) {
			dir = filepath.Dir(dir)
		}
	}
	if d.tooBroad(dir, write) {
		if _, err := os.Lstat(path); dir == path || err != nil || d.tooBroad(path, write) {
			return ""
		}
		dir = path
	}
	return dir
}

// tooBroad reports whether a fix must not name dir: /, /tmp, the home
// directory or a directory above it, and for a write a directory inside or above
// the trees of noWriteFix, or one holding a Guarded path.
func (d *Decider) tooBroad(dir string, write bool) bool {
	if dir == "/" || dir == SandboxTmpDir || d.home != "" && Within(d.home, dir) ||
		d.workspace != "" && dir != d.workspace && Within(d.workspace, dir) {
		// A /tmp flag names the private /tmp, not the host's.
		return true
	}
	if !write {
		return false
	}
	for _, n := range d.noWriteFix {
		if Within(dir, n) || Within(n, dir) {
			return true
		}
	}
	for _, g := range d.guarded {
		if Within(g, dir) {
			return true
		}
	}
	return false
}

// isRealDir reports whether path is a directory on the host, not a link
// to one (the backends' walk protects any directory named .git as a git
// directory, and does not follow links).
func isRealDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}

// isDir reports whether path is a directory on the host.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// literalHint returns the longest literal text of the glob pattern (within
// one path component, outside braces and character classes), which every
// path it matches contains; or "" when there is none, or the pattern
// escapes a character.
func literalHint(pattern string) string {
	if strings.Contains(pattern, `\`) {
		return ""
	}
	var best string
	start, depth := -1, 0
	flush := func(end int) {
		// A lone "." is the "./" that matching removes.
		if start >= 0 && end-start > len(best) && pattern[start:end] != "." {
			best = pattern[start:end]
		}
		start = -1
	}
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '[':
			flush(i)
			// Skip the class: an optional negation, then anything up to
			// the first ']' (the first character never ends it).
			j := i + 1
			if j < len(pattern) && (pattern[j] == '!' || pattern[j] == '^') {
				j++
			}
			for j++; j < len(pattern) && pattern[j] != ']'; j++ {
			}
			i = j
		case c == '{':
			flush(i)
			depth++
		case c == '}':
			flush(i)
			if depth > 0 {
				depth--
			}
		case depth > 0:
		case c == '*' || c == '?' || c == ',' || c == '/':
			flush(i)
		default:
			if start < 0 {
				start = i
			}
		}
	}
	flush(len(pattern))
	return best
}
