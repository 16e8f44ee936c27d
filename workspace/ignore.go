package workspace

import (
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// maxGitignoreBytes is the most bytes read from one .gitignore file.
const maxGitignoreBytes = 1 << 20

// ignoreRule is one pattern of a .gitignore file.
type ignoreRule struct {
	pat      string
	neg      bool
	dirOnly  bool
	anchored bool
}

// parseGitignore returns the rules of a .gitignore file: globs (doublestar
// syntax, as git's wildmatch), patterns with a "/" anchored to the file's
// directory, a trailing "/" for directories only, "!" to re-include, "#"
// comments, "\" escaping a leading "!" or "#".
func parseGitignore(data []byte) []ignoreRule {
	var rules []ignoreRule
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, " \r\t")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r ignoreRule
		if strings.HasPrefix(line, "!") {
			r.neg, line = true, line[1:]
		}
		line = strings.TrimPrefix(line, `\`)
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if strings.Contains(line, "/") {
			r.anchored, line = true, strings.TrimPrefix(line, "/")
		}
		if line == "" || !doublestar.ValidatePattern(line) {
			continue
		}
		r.pat = line
		rules = append(rules, r)
	}
	return rules
}

// ignoreFrame is one .gitignore file of an ignoreStack: its rules apply to
// the paths below base. barrier marks a directory that holds ".git" (the top
// of a work tree): the .gitignore files above it do not apply below it.
type ignoreFrame struct {
	base    string // the directory, relative to the mount ("." for its root)
	rules   []ignoreRule
	barrier bool
}

// ignoreStack holds the .gitignore files that apply where a walk is: those
// of the start directory's ancestors (read by newIgnoreStack) and of the
// directories the walk is in (pushed by enter, popped by leave), deepest
// last. As in git, a deeper file's rules take precedence, the last matching
// rule of a file decides, and nothing below an ignored directory is
// visited, so a "!" rule cannot re-include a path inside one. Only the
// walk's goroutine uses it.
type ignoreStack struct {
	f      *FS
	m      *mount
	frames []ignoreFrame
	// skipped counts the paths left out because they are ignored (an
	// ignored directory counts once: nothing below it is visited).
	skipped int
}

// newIgnoreStack returns the ignore stack for a walk of the directory t,
// holding the .gitignore files of t's ancestors up to its root (or up to
// the nearest one holding ".git"), each read by descriptor from the
// directories the resolution of t holds. The .gitignore files of t itself
// and below are read as the walk enters them.
func (f *FS) newIgnoreStack(t *target) *ignoreStack {
	s := &ignoreStack{f: f, m: t.m}
	// t.dirs[i] is the directory of t.names[:i]; the last one, t itself,
	// is not held: the walk opens it.
	for i := 0; i < len(t.names) && i < len(t.dirs); i++ {
		rel := "."
		if i > 0 {
			rel = strings.Join(t.names[:i], "/")
		}
		var st sysStat
		hasGit := lstatAt(t.dirs[i], ".git", &st) == nil
		s.push(t.dirs[i], rel, hasGit, true)
	}
	return s
}

// enter reads the .gitignore of the directory d (rel), whose sorted
// listing is ents, before the walk visits them; it reports whether a frame
// was pushed, which leave must then pop.
func (s *ignoreStack) enter(d *dirRef, rel string, ents []fs.DirEntry) bool {
	return s.push(d.fd, rel, hasEntry(ents, ".git"), hasEntry(ents, ".gitignore"))
}

// leave pops the frame enter pushed.
func (s *ignoreStack) leave() { s.frames = s.frames[:len(s.frames)-1] }

// push reads rel/.gitignore from the directory dirfd, when present and not
// denied, and pushes its rules; hasGit makes the frame a barrier. It reports
// whether a frame was pushed.
func (s *ignoreStack) push(dirfd handle, rel string, hasGit, hasIgnore bool) bool {
	fr := ignoreFrame{base: rel, barrier: hasGit}
	if hasIgnore {
		name := ".gitignore"
		if rel != "." {
			name = rel + "/.gitignore"
		}
		if s.f.off || s.f.deniedLeaf(s.m, name) == "" {
			// O_NOFOLLOW: like git (2.32 and later), a .gitignore that is
			// a symbolic link is not read.
			if data, err := readRegularAt(dirfd, ".gitignore", nil, maxGitignoreBytes); err == nil {
				fr.rules = parseGitignore(data)
			}
		}
	}
	if len(fr.rules) == 0 && !fr.barrier {
		return false
	}
	s.frames = append(s.frames, fr)
	return true
}

// hasEntry reports whether the sorted listing ents holds name.
func hasEntry(ents []fs.DirEntry, name string) bool {
	if foldCase { // ".GIT" is ".git" there: the listing is sorted by the exact name
		return slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return fold(e.Name()) == name })
	}
	_, ok := slices.BinarySearchFunc(ents, name, func(e fs.DirEntry, n string) int { return strings.Compare(e.Name(), n) })
	return ok
}

// ignored reports whether rel (relative to the mount, below every frame's
// base) is ignored, and counts it in skipped when it is.
func (s *ignoreStack) ignored(rel string, isDir bool) bool {
	for i := len(s.frames) - 1; i >= 0; i-- {
		fr := &s.frames[i]
		if len(fr.rules) > 0 {
			sub := rel
			if fr.base != "." {
				sub = rel[len(fr.base)+1:]
			}
			if matched, ign := matchIgnore(fr.rules, sub, isDir); matched {
				if ign {
					s.skipped++
				}
				return ign
			}
		}
		if fr.barrier {
			break
		}
	}
	return false
}

// matchIgnore applies one file's rules to rel (relative to the file's
// directory): matched says a rule matched, ignored what the last one says.
func matchIgnore(rules []ignoreRule, rel string, isDir bool) (matched, ignored bool) {
	base := ""
	for i := len(rules) - 1; i >= 0; i-- {
		r := &rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		var ok bool
		if r.anchored {
			ok, _ = doublestar.Match(r.pat, rel)
		} else {
			if base == "" {
				base = path.Base(rel)
			}
			ok, _ = doublestar.Match(r.pat, base)
		}
		if ok {
			return true, !r.neg
		}
	}
	return false, false
}
