package globscan

import (
	"errors"
	"fmt"
	"math/bits"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// maxAlternatives bounds the brace expansion of one pattern; "{a,b}{c,d}"
// has four alternatives. Validate rejects patterns with more.
const maxAlternatives = 256

// maxSegments is the most path segments an alternative can have and still be
// pruned with a 64-bit state set; longer ones are matched without pruning.
const maxSegments = 63

// IsGlob reports whether p contains any of the glob metacharacters
// '*', '?', '[' or '{' (escaped or not), i.e. whether it must be matched
// with Scan rather than used as a literal path.
func IsGlob(p string) bool {
	return strings.ContainsAny(p, "*?[{")
}

// normalize removes the forms that are harmless but would otherwise never
// match: leading "./" segments and trailing slashes.
func normalize(p string) string {
	for strings.HasPrefix(p, "./") {
		p = strings.TrimLeft(p[2:], "/")
	}
	for len(p) > 1 && strings.HasSuffix(p, "/") && !strings.HasSuffix(p, `\/`) {
		p = p[:len(p)-1]
	}
	return p
}

// Validate reports whether pattern is a usable relative deny glob. It checks
// the doublestar syntax (unclosed '[' or '{', empty class, trailing '\') and
// rejects empty and absolute patterns, "~", "..", "." and empty path segments
// (also inside brace alternatives) and patterns with more than 256 brace
// alternatives. A leading "./" and trailing slashes are allowed and ignored.
func Validate(pattern string) error {
	_, err := compile(pattern)
	return err
}

// pattern is one compiled deny glob.
type pattern struct {
	orig string // as given; reported in Match.Pattern
	norm string // normalized; what doublestar.Match is called with
	// progs are the brace-free alternatives, as segment automata.
	progs []prog
	// unsafe is set when segment-wise reasoning might not agree with
	// doublestar (a character class that can match '/', a "**" created by a
	// mid-segment brace, too many segments): the pattern then disables
	// pruning and is tried on every entry.
	unsafe bool
	// anchored is false if the pattern can match at any depth (starts with
	// "**" or is unsafe); used for error messages.
	anchored bool
	// descend walks below a directory this pattern matched.
	descend bool
	// anyName is set for a pattern "**/NAME" with a literal NAME: it
	// matches exactly the entries called NAME at any depth, which Scan
	// finds with one map lookup per entry instead of an automaton step.
	// For "**/A/B/NAME" (literal components) anyName is the last one and
	// anySuffix is "A/B/NAME": an entry called NAME matches when its path
	// is, or ends in, "/A/B/NAME".
	anyName   string
	anySuffix string
}

// PatternError is the error of Validate (and of Scan for a bad pattern):
// which pattern, and what is wrong with it.
type PatternError struct {
	// Pattern is the pattern as given.
	Pattern string
	// Reason says what is wrong and, where it can, how to write it.
	Reason string
}

// Error names the pattern and the reason.
func (e *PatternError) Error() string {
	return fmt.Sprintf("globscan: invalid deny pattern %q: %s", e.Pattern, e.Reason)
}

func patternError(p, format string, args ...any) error {
	return &PatternError{Pattern: p, Reason: fmt.Sprintf(format, args...)}
}

// compile validates and compiles one pattern.
func compile(orig string) (*pattern, error) {
	if strings.TrimSpace(orig) == "" {
		return nil, patternError(orig, "empty pattern")
	}
	if isAbs(orig) {
		return nil, patternError(orig, "absolute; relative globs are matched under each scanned root (write %q to match at any depth)", "**/"+strings.TrimLeft(filepath.Base(orig), "/"))
	}
	if orig == "~" || strings.HasPrefix(orig, "~/") {
		return nil, patternError(orig, "starts with ~; expand the home directory into an absolute path before scanning")
	}
	if !doublestar.ValidatePattern(orig) {
		return nil, patternError(orig, "bad glob syntax (unclosed '[' or '{', empty '[]' class, unmatched '}', or trailing '\\')")
	}
	norm := normalize(orig)
	if norm == "" || norm == "." {
		return nil, patternError(orig, "matches only the root itself; name the files to hide, e.g. \"**/.env\"")
	}
	p := &pattern{orig: orig, norm: norm}
	var alts []string
	if err := expand(norm, 0, &alts, &p.unsafe); err != nil {
		return nil, patternError(orig, "%v", err)
	}
	for _, a := range alts {
		if a == "" {
			return nil, patternError(orig, "has an empty brace alternative that matches nothing")
		}
		if isAbs(a) {
			return nil, patternError(orig, "brace alternative %q is absolute", a)
		}
		if !doublestar.ValidatePattern(a) {
			return nil, patternError(orig, "brace alternative %q has bad glob syntax (braces and character classes overlap)", a)
		}
		segs, unsafe := splitSegments(a)
		for _, s := range segs {
			switch unescape(s) {
			case "..":
				return nil, patternError(orig, "contains \"..\"; patterns cannot leave the scanned root")
			case ".", "":
				return nil, patternError(orig, "has an empty or \".\" path segment (in %q), which never matches", a)
			}
		}
		if unsafe || len(segs) > maxSegments {
			p.unsafe = true
			continue
		}
		p.progs = append(p.progs, newProg(segs))
	}
	if len(alts) == 1 && !p.unsafe && len(p.progs) == 1 {
		if name, ok := strings.CutPrefix(alts[0], "**/"); ok && !strings.ContainsAny(name, "*?[{]\\") && name != "**" {
			p.anyName = name
			if i := strings.LastIndexByte(name, '/'); i >= 0 {
				p.anyName, p.anySuffix = name[i+1:], name
			}
		}
	}
	p.anchored = !p.unsafe
	for i := range p.progs {
		if p.progs[i].dstar&1 != 0 {
			p.anchored = false
		}
	}
	if p.unsafe {
		p.progs = nil
	}
	return p, nil
}

func isAbs(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.IsAbs(p) || filepath.VolumeName(p) != ""
}

// expand performs brace expansion exactly the way doublestar.Match resolves
// alternatives: scanning left to right (skipping escapes and character
// classes), the first '{' is replaced by each of its alternatives (found with
// doublestar's own rules, which do not skip classes) and scanning resumes at
// the same position. It sets *unsafe when doublestar would treat a "**" at
// the start of a substituted alternative as a doublestar although it is not
// at the start of a path segment (Match restarts with startOfSegment=true
// after a substitution).
func expand(p string, from int, out *[]string, unsafe *bool) error {
	for i := from; i < len(p); {
		switch p[i] {
		case '\\':
			i += 2
		case '[':
			i = skipClass(p, i)
		case '{':
			end := indexMatchedClosingAlt(p[i+1:])
			if end < 0 {
				return errors.New("unclosed '{'")
			}
			end += i + 1
			body := p[i+1 : end]
			for {
				comma := indexNextAlt(body)
				alt := body
				if comma >= 0 {
					alt = body[:comma]
				}
				np := p[:i] + alt + p[end+1:]
				if i > 0 && p[i-1] != '/' && strings.HasPrefix(np[i:], "**") {
					*unsafe = true
				}
				if err := expand(np, i, out, unsafe); err != nil {
					return err
				}
				if len(*out) > maxAlternatives {
					return fmt.Errorf("expands to more than %d brace alternatives; split it into several patterns", maxAlternatives)
				}
				if comma < 0 {
					return nil
				}
				body = body[comma+1:]
			}
		default:
			i++
		}
	}
	*out = append(*out, p)
	return nil
}

// skipClass returns the index just after the character class starting at
// p[i] == '['. It follows doublestar: an optional '!' or '^', then anything
// up to the first unescaped ']' (the first class character is never the end).
func skipClass(p string, i int) int {
	j := i + 1
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		j++
	}
	for first := true; j < len(p); first = false {
		switch {
		case p[j] == '\\':
			j += 2
			continue
		case p[j] == ']' && !first:
			return j + 1
		}
		j++
	}
	return len(p)
}

// indexMatchedClosingAlt mirrors doublestar's function of the same name:
// the index of the '}' closing an already opened '{', honouring escapes and
// nesting (but not character classes), or -1.
func indexMatchedClosingAlt(s string) int {
	depth := 1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// indexNextAlt mirrors doublestar's function of the same name: the index of
// the next top-level ',' in the body of a brace, or -1.
func indexNextAlt(s string) int {
	depth := 1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 1 {
				return i
			}
		}
	}
	return -1
}

// splitSegments splits a brace-free pattern at '/' (and at an escaped "\/",
// which doublestar also treats as a separator). unsafe reports a character
// class that can match '/', which makes segment-wise matching unsound.
func splitSegments(p string) (segs []string, unsafe bool) {
	start := 0
	for i := 0; i < len(p); {
		switch p[i] {
		case '\\':
			if i+1 < len(p) && p[i+1] == '/' {
				segs = append(segs, p[start:i])
				start = i + 2
			}
			i += 2
		case '[':
			j := skipClass(p, i)
			// Ask doublestar itself whether the class matches '/': a class
			// does not check for the separator (e.g. "[!x]" matches "/").
			if doublestar.MatchUnvalidated(p[i:j], "/") {
				unsafe = true
			}
			i = j
		case '/':
			segs = append(segs, p[start:i])
			i++
			start = i
		default:
			i++
		}
	}
	segs = append(segs, p[start:])
	return segs, unsafe
}

// unescape removes backslash escapes.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Segment kinds.
const (
	segLiteral = iota // no metacharacters: compare names with ==
	segGlob           // one-segment glob: doublestar.Match on the name
	segDStar          // "**": zero or more whole segments
)

type seg struct {
	kind   uint8
	lit    string // segLiteral: the unescaped name
	pat    string // segGlob: the pattern text (escapes kept)
	prefix string // segGlob: literal text every match starts with
	suffix string // segGlob: literal text every match ends with
}

func (s *seg) match(name string) bool {
	if s.kind == segLiteral {
		return name == s.lit
	}
	return strings.HasPrefix(name, s.prefix) && strings.HasSuffix(name, s.suffix) &&
		doublestar.MatchUnvalidated(s.pat, name)
}

func newSeg(s string) seg {
	if s == "**" {
		return seg{kind: segDStar}
	}
	// Tokenize into literal bytes and metacharacter tokens to find the
	// literal prefix and suffix.
	var lits []bool   // per token: literal?
	var text []string // per token: unescaped literal text
	for i := 0; i < len(s); {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				lits, text = append(lits, true), append(text, s[i+1:i+2])
			}
			i += 2
		case '*', '?':
			lits, text = append(lits, false), append(text, "")
			i++
		case '[':
			lits, text = append(lits, false), append(text, "")
			i = skipClass(s, i)
		default:
			lits, text = append(lits, true), append(text, s[i:i+1])
			i++
		}
	}
	allLit := true
	for _, l := range lits {
		allLit = allLit && l
	}
	if allLit {
		return seg{kind: segLiteral, lit: strings.Join(text, "")}
	}
	var pre, suf strings.Builder
	for k := 0; k < len(lits) && lits[k]; k++ {
		pre.WriteString(text[k])
	}
	last := len(lits)
	for last > 0 && lits[last-1] {
		last--
	}
	for k := last; k < len(lits); k++ {
		suf.WriteString(text[k])
	}
	return seg{kind: segGlob, pat: s, prefix: pre.String(), suffix: suf.String()}
}

// prog is a brace-free alternative as a nondeterministic automaton over path
// segments. State i means "segments[:i] have matched"; a state set is a
// bitmask, bit len(segs) being acceptance.
type prog struct {
	segs   []seg
	dstar  uint64 // bit i: segs[i] is "**"
	live   uint64 // states with at least one segment left
	accept uint64
	start  uint64
}

func newProg(parts []string) prog {
	p := prog{segs: make([]seg, len(parts))}
	for i, s := range parts {
		p.segs[i] = newSeg(s)
		if p.segs[i].kind == segDStar {
			p.dstar |= 1 << i
		}
	}
	n := len(parts)
	p.accept = 1 << n
	p.live = p.accept - 1
	p.start = p.closure(1)
	return p
}

// closure adds the states reachable by letting "**" match zero segments.
func (p *prog) closure(m uint64) uint64 {
	for {
		add := ((m & p.dstar) << 1) &^ m
		if add == 0 {
			return m
		}
		m |= add
	}
}

// step advances state set m over one path segment.
func (p *prog) step(m uint64, name string) uint64 {
	m &= p.live
	out := m & p.dstar // "**" consumes the segment and stays
	for rest := m &^ p.dstar; rest != 0; rest &= rest - 1 {
		i := bits.TrailingZeros64(rest)
		if p.segs[i].match(name) {
			out |= 1 << (i + 1)
		}
	}
	return p.closure(out)
}

// CouldMatchBelow reports whether pattern could match some path strictly
// below the directory dirRel (slash-separated, relative to the scanned root;
// "" or "." is the root). Scan enters a directory only if this is true for
// some pattern, so it must never return false when a match below is possible:
// it errs towards true (for invalid patterns, for patterns with a character
// class that can match '/', and where segment reasoning is not exact). It
// says nothing about whether dirRel itself matches.
func CouldMatchBelow(pattern, dirRel string) bool {
	p, err := compile(pattern)
	if err != nil || p.unsafe {
		return true
	}
	dirRel = strings.Trim(dirRel, "/")
	for i := range p.progs {
		pr := &p.progs[i]
		m := pr.start
		if dirRel != "" && dirRel != "." {
			for _, name := range strings.Split(dirRel, "/") {
				if m = pr.step(m, name); m&pr.live == 0 {
					break
				}
			}
		}
		if m&pr.live != 0 {
			return true
		}
	}
	return false
}

// SplitAbs splits an absolute glob into the deepest directory named before
// its first segment holding a metacharacter (or an escape) and the rest,
// a relative pattern for Scan under that directory: "/home/*/.ssh" is
// "/home" and "*/.ssh", "/**/.env" is "/" and "**/.env". A pattern without
// metacharacters is returned whole as root with rel "".
func SplitAbs(pattern string) (root, rel string) {
	segs := strings.Split(pattern, "/")
	for i, s := range segs {
		if IsGlob(s) || strings.Contains(s, `\`) {
			root = strings.Join(segs[:i], "/")
			if root == "" {
				root = "/"
			}
			return root, strings.Join(segs[i:], "/")
		}
	}
	return pattern, ""
}

// Glob is a compiled relative deny glob: it decides for one path exactly
// as Scan decides for an entry it reaches, so that a check of a single
// path (the MCP file tools) and the walk that finds what to mask before a
// run (the backends) cannot disagree.
type Glob struct {
	p *pattern
}

// Compile validates pattern (see Validate) and compiles it.
func Compile(pattern string) (*Glob, error) {
	p, err := compile(pattern)
	if err != nil {
		return nil, err
	}
	return &Glob{p: p}, nil
}

// String returns the pattern as given to Compile.
func (g *Glob) String() string { return g.p.orig }

// Match reports whether rel, a slash-separated path relative to a scanned
// root, matches the pattern, as Scan would report it. The root itself ("",
// ".") never matches.
func (g *Glob) Match(rel string) bool {
	if rel == "" || rel == "." {
		return false
	}
	return doublestar.MatchUnvalidated(g.p.norm, rel)
}

// Hides reports whether rel or one of its directories below the root
// matches: Scan reports a matched directory whole, so a backend hides
// everything below it.
func (g *Glob) Hides(rel string) bool {
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' && g.Match(rel[:i]) {
			return true
		}
	}
	return g.Match(rel)
}

// suffixOf reports whether rel, an entry called p.anyName, ends in
// p.anySuffix (or p has none).
func (p *pattern) suffixOf(rel string) bool {
	if p.anySuffix == "" {
		return true
	}
	return rel == p.anySuffix || len(rel) > len(p.anySuffix) && rel[len(rel)-len(p.anySuffix)-1] == '/' && rel[len(rel)-len(p.anySuffix):] == p.anySuffix
}
