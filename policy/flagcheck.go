package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// flagPath is one --allow-read or --allow-write value, kept to explain it
// once the whole policy is known (see flagWarnings).
type flagPath struct {
	name     string // how messages name it: `--allow-write "out"`
	abs      string // the path it allows
	relative bool   // it was relative: taken from the current directory
	write    bool   // --allow-write
}

// emptyPath is the error for an empty path flag (--deny ”): taken from
// the current directory it would name the workspace itself.
func emptyPath(l layer, key string, glob bool) error {
	what := "a path"
	if glob {
		what = "a path or a pattern such as **/.env"
	}
	return l.Errorf(key, "%s: empty; give %s", entryName(l, key, ""), what)
}

// deniedBy returns the entry of deny that hides path: a literal path that
// is path or contains it, or an absolute glob matching path or one of its
// directories, as the backends mask them. Relative globs ("**/.env") are
// matched by the backends' walk, not here.
func deniedBy(deny []string, path string) string {
	if d := DeniedBy(deny, path); d != "" {
		return d
	}
	for _, d := range deny {
		if !IsAbs(d) || !IsGlob(d) {
			continue
		}
		if r, err := CompileDeny(d); err == nil && r.Hides("/", path) {
			return d
		}
	}
	return ""
}

// checkDenyWorkspace records an error when deny entry d (raw as written in
// layer l) hides the workspace: the command starts in the workspace, so no
// backend could run it. The error is returned by merge unless the mode is
// off (nothing is denied then).
func (b *builder) checkDenyWorkspace(l layer, key, raw, d string) {
	if b.wsDenied != nil || deniedBy([]string{d}, b.ws) == "" {
		return
	}
	var what string
	switch {
	case d == b.ws:
		what = "denies the workspace " + b.ws + " itself"
	case IsGlob(d):
		what = "hides the workspace " + b.ws + " (the pattern matches it or a directory above it)"
	default:
		what = "hides the workspace " + b.ws + ", which it contains"
	}
	b.wsDenied = l.Errorf(key, "%s: %s: the command runs in the workspace; deny paths inside it, or pass --workspace to run elsewhere", entryName(l, key, raw), what)
}

// noteFlagPath keeps an --allow-read or --allow-write value for
// flagWarnings.
func (b *builder) noteFlagPath(l layer, key, raw, abs string, write bool) {
	if !l.IsFlags() {
		return
	}
	s, err := b.expand(raw)
	b.flagPaths = append(b.flagPaths, flagPath{name: entryName(l, key, raw), abs: abs, relative: err == nil && !IsAbs(s), write: write})
}

// flagWarnings explains the --allow-read and --allow-write values of the
// final policy p that do not do what they seem to: one line each, for
// "cordon: warning:". A relative path is named in full; a denied path
// stays denied (the deny wins); a missing path that no other allowed
// directory covers allows nothing.
func (b *builder) flagWarnings(p *Policy) []string {
	if p.Mode == ModeOff {
		return nil
	}
	var out []string
	for _, fp := range b.flagPaths {
		var facts []string
		if fp.relative {
			facts = append(facts, "relative to the current directory, it names "+fp.abs)
		}
		d, dw := deniedBy(p.Deny, fp.abs), deniedBy(p.DenyWrite, fp.abs)
		if d == "" && !fp.write {
			d = p.DenyGlobForFile(fp.abs)
		}
		switch {
		case d != "" && fp.write:
			facts = append(facts, fmt.Sprintf("%s is denied (%s): the deny wins, so it stays neither readable nor writable", fp.abs, d))
		case d != "":
			facts = append(facts, fmt.Sprintf("%s is denied (%s): the deny wins, so it stays unreadable", fp.abs, d))
		case dw != "" && fp.write:
			facts = append(facts, fmt.Sprintf("%s is kept read-only (deny_write %s): the deny wins", fp.abs, dw))
		default:
			if missing(fp.abs) && !coveredElsewhere(fp, p) {
				facts = append(facts, fp.abs+" does not exist, so this allows nothing: create it first")
			}
		}
		if len(facts) > 0 {
			out = append(out, fp.name+": "+strings.Join(facts, "; "))
		}
	}
	return out
}

// missing reports whether nothing exists at path.
func missing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// coveredElsewhere reports whether another write path of p (not the
// private /tmp, which is not the host's) already lets the command create
// fp's path.
func coveredElsewhere(fp flagPath, p *Policy) bool {
	for _, r := range p.Write {
		if r != fp.abs && r != SandboxTmpDir && Within(fp.abs, r) {
			return true
		}
	}
	return false
}
