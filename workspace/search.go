package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"regexp/syntax"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// errStop ends a walk early.
var errStop = errors.New("stop")

// display returns how a result path is shown: relative to the workspace for
// paths in the workspace root, absolute otherwise.
func (f *FS) display(m *mount, rel string) string {
	abs := path.Join(m.Path, rel)
	if !f.off && m == f.mounts[0] {
		return rel
	}
	if f.off {
		if r, ok := subpath.Rel(f.workspace, abs); ok {
			return r
		}
	}
	return abs
}

// FindResult is the result of Find.
type FindResult struct {
	// Paths are the matching files and directories, in walk order: relative
	// to the workspace for the workspace, absolute for other roots.
	Paths []string `json:"paths"`
	// Truncated is set when the result or visit limit was reached.
	Truncated bool `json:"truncated"`
	// Ignored counts the paths left out because .gitignore ignores them
	// (an ignored directory counts once: nothing below it is visited).
	Ignored int `json:"ignored"`
}

// FindOptions tune Find.
type FindOptions struct {
	// IncludeIgnored also walks and returns the paths .gitignore ignores.
	IncludeIgnored bool
}

// Find walks dir ("" is the workspace) and returns the paths whose path
// relative to dir matches the glob pattern (doublestar syntax: "**" matches
// any number of directories, so "**/*.go" finds Go files at any depth and
// "*.go" only directly in dir). Symbolic links are not followed, ".git" is
// skipped, denied paths are left out, paths ignored by the .gitignore files
// of dir, its ancestors and the directories below it are left out unless
// opts.IncludeIgnored (see ignoreStack), and at most Limits.MaxResults paths
// are returned.
func (f *FS) Find(dir, pattern string, opts FindOptions) (*FindResult, error) {
	pattern = strings.TrimPrefix(pattern, "./")
	if pattern == "" || !doublestar.ValidatePattern(pattern) {
		return nil, fmt.Errorf("find: %s is not a valid glob pattern", quote(pattern))
	}
	t, err := f.dirTarget(dir)
	if err != nil {
		return nil, err
	}
	defer t.close()
	res := &FindResult{}
	var ign *ignoreStack
	if !opts.IncludeIgnored {
		ign = f.newIgnoreStack(t)
	}
	visited := 0
	err = f.walk(t, ign, func(p string, typ fs.FileMode, _ *dirRef, name string) error {
		visited++
		if visited > f.Limits.MaxVisit {
			res.Truncated = true
			return errStop
		}
		if p == t.rel {
			return nil
		}
		isDir := typ.IsDir()
		if isDir && fold(name) == ".git" {
			return fs.SkipDir
		}
		if f.deniedLeaf(t.m, p) != "" || (ign != nil && ign.ignored(p, isDir)) {
			if isDir {
				return fs.SkipDir
			}
			return nil
		}
		sub := p
		if t.rel != "." {
			sub = strings.TrimPrefix(p, t.rel+"/")
		}
		if ok, _ := doublestar.Match(pattern, sub); ok {
			if len(res.Paths) >= f.Limits.MaxResults {
				res.Truncated = true
				return errStop
			}
			res.Paths = append(res.Paths, f.display(t.m, p))
		}
		return nil
	})
	if ign != nil {
		res.Ignored = ign.skipped
	}
	if err != nil && err != errStop {
		return nil, f.wrapErr("file-read", dir, t.m, err)
	}
	return res, nil
}

// dirTarget resolves and checks a directory to search; it must exist. The
// caller closes the target.
func (f *FS) dirTarget(dir string) (*target, error) {
	t, err := f.resolve("file-read", dir)
	if err != nil {
		return nil, err
	}
	if err := f.checkRead("file-read", t); err != nil {
		t.close()
		return nil, err
	}
	if !t.exists {
		t.close()
		return nil, f.wrapErr("file-read", dir, t.m, &fs.PathError{Op: "fstatat", Path: t.rel, Err: errNoEnt})
	}
	return t, nil
}

// GrepOptions tune Grep.
type GrepOptions struct {
	// IgnoreCase matches case-insensitively.
	IgnoreCase bool
	// Literal treats the pattern as a plain string.
	Literal bool
	// Include, when set, is a glob on the file's path relative to the
	// searched directory (or its base name, when it has no "/").
	Include string
	// MaxResults caps the matches; 0 means Limits.MaxResults.
	MaxResults int
	// IncludeIgnored also searches the files .gitignore ignores.
	IncludeIgnored bool
}

// GrepMatch is one matching line.
type GrepMatch struct {
	// Path is the file, shown as Find shows paths.
	Path string `json:"path"`
	// Line is the 1-based line number.
	Line int `json:"line"`
	// Text is the line (cut to Limits.MaxLineBytes on a UTF-8 boundary).
	Text string `json:"text"`
}

// GrepResult is the result of Grep.
type GrepResult struct {
	// Matches are the matching lines, in walk order.
	Matches []GrepMatch `json:"matches"`
	// FilesSearched counts the files read.
	FilesSearched int `json:"files_searched"`
	// Truncated is set when a result, output or visit limit was reached.
	Truncated bool `json:"truncated"`
	// Ignored counts the paths not searched because .gitignore ignores
	// them (an ignored directory counts once).
	Ignored int `json:"ignored"`
}

// Grep searches the files under p (a directory, or one file) for lines
// matching the RE2 pattern. Binary files (a NUL byte in the first 8 KiB),
// ".git", denied paths, special files and, unless opts.IncludeIgnored, paths
// ignored by .gitignore files (as Find) are skipped; symbolic links are not
// followed. Results and their
// total text are bounded by Limits.
func (f *FS) Grep(pattern, p string, opts GrepOptions) (*GrepResult, error) {
	expr := pattern
	if opts.Literal {
		expr = regexp.QuoteMeta(pattern)
	}
	if opts.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("grep: invalid pattern: %w", err)
	}
	mt := newMatcher(re, expr, pattern, opts)
	if opts.Include != "" && !doublestar.ValidatePattern(opts.Include) {
		return nil, fmt.Errorf("grep: %s is not a valid glob pattern", quote(opts.Include))
	}
	max := opts.MaxResults
	if max <= 0 || max > f.Limits.MaxResults {
		max = f.Limits.MaxResults
	}
	t, err := f.dirTarget(p)
	if err != nil {
		return nil, err
	}
	defer t.close()
	res := &GrepResult{}
	out := 0
	// emit adds one file's matches in walk order, applying the result and
	// output limits; it reports false when a limit was reached.
	emit := func(rel string, fr grepFileResult) bool {
		if fr.searched {
			res.FilesSearched++
		}
		for _, m := range fr.matches {
			out += len(m.Text) + len(rel) + 16
			if len(res.Matches) >= max || out > f.Limits.MaxOutputBytes {
				res.Truncated = true
				return false
			}
			m.Path = f.display(t.m, rel)
			res.Matches = append(res.Matches, m)
		}
		return true
	}
	if !t.st.isDir() {
		emit(t.rel, f.grepFile(mt, t, max))
		return res, nil
	}
	var ign *ignoreStack
	if !opts.IncludeIgnored {
		ign = f.newIgnoreStack(t)
	}

	// Files are read and matched by a bounded pool of workers (the work is
	// mostly system calls), while the walk goes on in this goroutine; an
	// emitter takes the results in walk order, so the output is the same as
	// a sequential search.
	type job struct {
		rel  string
		dir  *dirRef
		name string
		done chan grepFileResult
	}
	var stop atomic.Bool
	jobs := make(chan job, grepQueue)
	order := make(chan job, grepQueue)
	var workers sync.WaitGroup
	for i := 0; i < grepWorkers(); i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for j := range jobs {
				if stop.Load() {
					j.dir.release()
					j.done <- grepFileResult{}
					continue
				}
				j.done <- f.grepFileAt(mt, j.dir, j.name, j.rel, max)
			}
		}()
	}
	emitted := make(chan struct{})
	go func() {
		defer close(emitted)
		for j := range order {
			if stop.Load() {
				continue // drain, so that the walk never blocks
			}
			if !emit(j.rel, <-j.done) {
				stop.Store(true)
			}
		}
	}()
	visited := 0
	incSlash := strings.Contains(opts.Include, "/")
	err = f.walk(t, ign, func(rel string, typ fs.FileMode, dir *dirRef, name string) error {
		if stop.Load() {
			return errStop
		}
		visited++
		if visited > f.Limits.MaxVisit {
			return errVisit
		}
		if rel == t.rel {
			return nil
		}
		isDir := typ.IsDir()
		if isDir && fold(name) == ".git" {
			return fs.SkipDir
		}
		if f.deniedLeaf(t.m, rel) != "" || (ign != nil && ign.ignored(rel, isDir)) {
			if isDir {
				return fs.SkipDir
			}
			return nil
		}
		if !typ.IsRegular() {
			return nil
		}
		if opts.Include != "" {
			sub := rel
			if t.rel != "." {
				sub = strings.TrimPrefix(rel, t.rel+"/")
			}
			if !incSlash {
				sub = name
			}
			if ok, _ := doublestar.Match(opts.Include, sub); !ok {
				return nil
			}
		}
		dir.acquire()
		j := job{rel: rel, dir: dir, name: name, done: make(chan grepFileResult, 1)}
		jobs <- j
		order <- j
		return nil
	})
	close(jobs)
	close(order)
	<-emitted
	workers.Wait()
	if ign != nil {
		res.Ignored = ign.skipped
	}
	if err == errVisit {
		res.Truncated = true
		err = nil
	}
	if err != nil && err != errStop {
		return nil, f.wrapErr("file-read", p, t.m, err)
	}
	return res, nil
}

// errVisit ends a walk that reached Limits.MaxVisit.
var errVisit = errors.New("visit limit")

// grepQueue is how many files may wait for a Grep worker or the emitter.
const grepQueue = 256

// grepWorkers is the size of Grep's worker pool: reading files is mostly
// waiting for system calls, so a few workers per CPU, bounded.
func grepWorkers() int {
	return min(max(4*runtime.GOMAXPROCS(0), 4), 32)
}

// grepBufs recycles Grep's read buffers.
var grepBufs = sync.Pool{New: func() any { return new([]byte) }}

// grepFileResult is what grepFile found in one file.
type grepFileResult struct {
	searched bool
	matches  []GrepMatch // Path is left empty
}

// grepFile reads the regular file t, resolved and checked (up to
// Limits.MaxReadBytes, see readAll), and returns its matching lines (see
// grepData). Unreadable and special files are skipped.
func (f *FS) grepFile(mt *matcher, t *target, max int) grepFileResult {
	data, _, _, err := f.readAll("file-read", t)
	if err != nil {
		return grepFileResult{}
	}
	return f.grepData(mt, data, t.rel, max)
}

// grepFileAt is grepFile for the file name in the walked directory dir (by
// descriptor, see readRegularAt); it releases dir.
func (f *FS) grepFileAt(mt *matcher, dir *dirRef, name, rel string, max int) grepFileResult {
	bp := grepBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) > 1<<20 {
			*bp = nil // do not keep big buffers alive
		}
		grepBufs.Put(bp)
	}()
	data, err := readRegularAt(dir.fd, name, *bp, f.Limits.MaxReadBytes)
	dir.release()
	*bp = data[:0]
	if err != nil {
		return grepFileResult{}
	}
	return f.grepData(mt, data, rel, max)
}

// matcher matches lines for Grep. lit, when set, is a string every matching
// line contains (the pattern itself for a case-sensitive literal search,
// else the longest literal run the regular expression requires), found with
// bytes.Index before the regular expression runs; litOnly means containing
// lit is matching.
type matcher struct {
	re      *regexp.Regexp
	lit     []byte
	litOnly bool
}

func newMatcher(re *regexp.Regexp, expr, pattern string, opts GrepOptions) *matcher {
	mt := &matcher{re: re}
	if opts.Literal && !opts.IgnoreCase {
		if pattern != "" && !strings.ContainsAny(pattern, "\n") {
			mt.lit, mt.litOnly = []byte(pattern), true
		}
		return mt
	}
	if l := requiredLiteral(expr); len(l) >= 3 && !strings.ContainsAny(l, "\n\r") {
		mt.lit = []byte(l)
	}
	return mt
}

// requiredLiteral returns the longest case-sensitive literal run that any
// match of expr must contain, or "".
func requiredLiteral(expr string) string {
	rx, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return ""
	}
	rx = rx.Simplify()
	for rx.Op == syntax.OpCapture {
		rx = rx.Sub[0]
	}
	lit := func(r *syntax.Regexp) string {
		if r.Op == syntax.OpLiteral && r.Flags&syntax.FoldCase == 0 {
			return string(r.Rune)
		}
		return ""
	}
	if rx.Op != syntax.OpConcat {
		return lit(rx)
	}
	best, cur := "", ""
	for _, sub := range rx.Sub {
		for sub.Op == syntax.OpCapture {
			sub = sub.Sub[0]
		}
		if l := lit(sub); l != "" {
			cur += l
		} else {
			cur = ""
		}
		if len(cur) > len(best) {
			best = cur
		}
	}
	return best
}

// grepData returns the matching lines of one file's data; it stops
// collecting after max+1 matches or MaxOutputBytes of text, enough for the
// caller to see the limit. Binary data (a NUL byte in the first 8 KiB) is
// searched but never matches.
func (f *FS) grepData(mt *matcher, data []byte, rel string, max int) grepFileResult {
	fr := grepFileResult{searched: true}
	if isBinary(data) {
		return fr
	}
	out := 0
	add := func(n int, line []byte) bool {
		text := strings.TrimSuffix(string(line), "\r")
		if len(text) > f.Limits.MaxLineBytes {
			text = truncUTF8(text, f.Limits.MaxLineBytes) + " [... line truncated]"
		}
		fr.matches = append(fr.matches, GrepMatch{Line: n, Text: text})
		out += len(text) + len(rel) + 16
		return len(fr.matches) <= max && out <= f.Limits.MaxOutputBytes
	}
	if mt.lit != nil {
		// Jump from one occurrence of the literal to the next; only the
		// lines holding one are matched, and lines are counted in bulk.
		n, counted, pos := 1, 0, 0
		for pos < len(data) {
			i := bytes.Index(data[pos:], mt.lit)
			if i < 0 {
				break
			}
			i += pos
			start := bytes.LastIndexByte(data[pos:i], '\n') + 1 + pos
			end := len(data)
			if e := bytes.IndexByte(data[i:], '\n'); e >= 0 {
				end = i + e
			}
			line := data[start:end]
			if mt.litOnly || mt.re.Match(line) {
				n += bytes.Count(data[counted:start], []byte{'\n'})
				counted = start
				if !add(n, line) {
					break
				}
			}
			pos = end + 1
		}
		return fr
	}
	if !mt.re.Match(data) {
		return fr
	}
	n := 0
	for len(data) > 0 {
		n++
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if !mt.re.Match(line) {
			continue
		}
		if !add(n, line) {
			break
		}
	}
	return fr
}
