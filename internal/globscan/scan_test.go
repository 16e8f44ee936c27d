package globscan

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// mkTree creates entries under root: "a/b/" is a directory, "a/f" a file,
// "a/l -> target" a symlink to target.
func mkTree(t testing.TB, root string, entries ...string) {
	t.Helper()
	for _, e := range entries {
		if name, target, ok := strings.Cut(e, " -> "); ok {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		p := filepath.Join(root, e)
		if strings.HasSuffix(e, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func rels(ms []Match) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Rel)
	}
	slices.Sort(out)
	return out
}

// tree is shared by the pattern table.
var tree = []string{
	".env", ".env.local", ".envrc", "secrets.yaml", "secrets/", "notsecrets.yaml",
	"app/.env", "app/.env.production", "app/config/secrets.json", "app/config/secrets",
	"app/node_modules/pkg/.env", ".git/hooks/.env",
	"build/token.json", "build/x/y/token.json", "build/x/other.json", "src/build/token.json",
	"a/b", "a/x/b", "a/x/y/b", "a/x/c", "a/y/c", "a/x/y/c", "a/c",
	"x/q/z", "y/z", "w/z", "x/z/",
	"k1.pem", "k2.pem", "kx.pem", "deep/k3.pem",
	"odd/a[b]/f", "odd/{/f",
}

func TestScanPatterns(t *testing.T) {
	root := t.TempDir()
	mkTree(t, root, tree...)
	cases := []struct {
		pat  string
		want []string
	}{
		{"**/.env", []string{".env", ".git/hooks/.env", "app/.env", "app/node_modules/pkg/.env"}},
		{"**/.env.*", []string{".env.local", "app/.env.production"}},
		{"**/secrets.*", []string{"app/config/secrets.json", "secrets.yaml"}},
		{"secrets.*", []string{"secrets.yaml"}},
		{"./secrets.*", []string{"secrets.yaml"}},
		{"secrets/", []string{"secrets"}},
		{"build/**/token.json", []string{"build/token.json", "build/x/y/token.json"}},
		{"**/build/**/token.json", []string{"build/token.json", "build/x/y/token.json", "src/build/token.json"}},
		{"a/**/b", []string{"a/b", "a/x/b", "a/x/y/b"}},
		{"a/*/c", []string{"a/x/c", "a/y/c"}},
		{"{x,y}/**/z", []string{"x/q/z", "x/z", "y/z"}},
		{"{x/q,w}/z", []string{"w/z", "x/q/z"}},
		{"k[0-9].pem", []string{"k1.pem", "k2.pem"}},
		{"k[!0-9].pem", []string{"kx.pem"}},
		{"**/k?.pem", []string{"deep/k3.pem", "k1.pem", "k2.pem", "kx.pem"}},
		{"**/*.pem", []string{"deep/k3.pem", "k1.pem", "k2.pem", "kx.pem"}},
		{`odd/a\[b\]/f`, []string{"odd/a[b]/f"}},
		{"app/**", []string{"app"}},
		{"odd/[{]/f", []string{"odd/{/f"}},
		{"app/*", []string{"app/.env", "app/.env.production", "app/config", "app/node_modules"}},
		{"nothing/**/here", nil},
	}
	for _, c := range cases {
		t.Run(c.pat, func(t *testing.T) {
			ms, st, err := Scan(root, []string{c.pat}, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if got := rels(ms); !slices.Equal(got, c.want) {
				t.Errorf("Scan(%q) = %q, want %q", c.pat, got, c.want)
			}
			for _, m := range ms {
				if m.Pattern != c.pat || m.Path != filepath.Join(root, filepath.FromSlash(m.Rel)) {
					t.Errorf("bad match %+v", m)
				}
			}
			if st.Entries == 0 || st.Dirs == 0 {
				t.Errorf("empty stats %+v", st)
			}
		})
	}
}

func TestScanPrunes(t *testing.T) {
	root := t.TempDir()
	mkTree(t, root, tree...)
	_, st, err := Scan(root, []string{"build/**/token.json"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// root, build, build/x, build/x/y
	if st.Dirs != 4 {
		t.Errorf("anchored pattern read %d dirs, want 4 (%+v)", st.Dirs, st)
	}
	_, st, err = Scan(root, []string{"secrets.*"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Dirs != 1 {
		t.Errorf("top-level pattern read %d dirs, want 1", st.Dirs)
	}
}

func TestScanMultiplePatternsAndFirstWins(t *testing.T) {
	root := t.TempDir()
	mkTree(t, root, tree...)
	ms, _, err := Scan(root, []string{"**/.env", "**/.env*", "**/secrets.*"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".env", ".env.local", ".envrc", ".git/hooks/.env", "app/.env", "app/.env.production",
		"app/config/secrets.json", "app/node_modules/pkg/.env", "secrets.yaml"}
	if got := rels(ms); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, m := range ms {
		if m.Rel == ".env" && m.Pattern != "**/.env" {
			t.Errorf(".env reported with %q, want the first pattern", m.Pattern)
		}
	}
	if !slices.IsSortedFunc(ms, func(a, b Match) int { return strings.Compare(a.Path, b.Path) }) {
		t.Error("matches not sorted by Path")
	}
}

func TestMatchedDirNotDescended(t *testing.T) {
	root := t.TempDir()
	mkTree(t, root, "secrets.d/secrets.yaml", "secrets.d/inner/secrets.txt", "x/secrets.d/secrets.json")
	ms, st, err := Scan(root, []string{"**/secrets.*"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"secrets.d", "x/secrets.d"}
	if got := rels(ms); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, m := range ms {
		if !m.IsDir || m.IsSymlink {
			t.Errorf("%s: IsDir=%v IsSymlink=%v", m.Rel, m.IsDir, m.IsSymlink)
		}
	}
	if st.Dirs != 2 { // root and x
		t.Errorf("read %d dirs, want 2", st.Dirs)
	}
}

func TestSymlinks(t *testing.T) {
	outside := t.TempDir()
	mkTree(t, outside, ".env", "sub/.env")
	root := t.TempDir()
	mkTree(t, root,
		"link -> "+outside,
		"rel -> ../",
		".env -> "+filepath.Join(outside, ".env"),
		"dangling/.env.local -> /nonexistent",
		"dirlink.env -> "+outside,
	)
	ms, _, err := Scan(root, []string{"**/.env", "**/.env.*", "**/*.env"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".env", "dangling/.env.local", "dirlink.env"}
	if got := rels(ms); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q (a followed symlink leaks outside the root)", got, want)
	}
	for _, m := range ms {
		if !m.IsSymlink || m.IsDir {
			t.Errorf("%s: IsSymlink=%v IsDir=%v", m.Rel, m.IsSymlink, m.IsDir)
		}
		if !strings.HasPrefix(m.Path, root) {
			t.Errorf("match outside root: %s", m.Path)
		}
	}
}

func TestRootSymlinkFollowed(t *testing.T) {
	real := t.TempDir()
	mkTree(t, real, "a/.env")
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	ms, _, err := Scan(link, []string{"**/.env"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Path != filepath.Join(link, "a", ".env") {
		t.Fatalf("got %+v", ms)
	}
}

func TestLimits(t *testing.T) {
	root := t.TempDir()
	var ents []string
	for i := range 50 {
		ents = append(ents, filepath.Join("d", string(rune('a'+i%26))+string(rune('a'+i/26)), ".env"))
	}
	mkTree(t, root, ents...)
	cases := []struct {
		name  string
		lim   Limits
		bound string
	}{
		{"entries", Limits{MaxEntries: 20}, "MaxEntries"},
		{"matches", Limits{MaxMatches: 10}, "MaxMatches"},
		{"deadline", Limits{Deadline: time.Nanosecond}, "Deadline"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ms, _, err := Scan(root, []string{"**/.env"}, c.lim)
			var le *LimitError
			if !errors.As(err, &le) || !errors.Is(err, ErrLimit) {
				t.Fatalf("err = %v, want a *LimitError", err)
			}
			if ms != nil {
				t.Error("matches returned with a limit error")
			}
			msg := err.Error()
			if le.Bound != c.bound || !strings.Contains(msg, c.bound) || !strings.Contains(msg, "entries") ||
				!strings.Contains(msg, root) || !strings.Contains(msg, "raise the limit") {
				t.Errorf("bad error %q", msg)
			}
			if c.bound != "MaxMatches" && !strings.Contains(msg, "**/.env") {
				t.Errorf("error does not name the unanchored pattern: %q", msg)
			}
			if c.bound != "Deadline" && le.Entries == 0 {
				t.Errorf("entries seen not recorded: %+v", le)
			}
		})
	}
	// Exactly at the bound is fine.
	ms, _, err := Scan(root, []string{"**/.env"}, Limits{MaxMatches: 50})
	if err != nil || len(ms) != 50 {
		t.Fatalf("at the bound: %d matches, %v", len(ms), err)
	}
}

func TestUnreadableDirSkipped(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: permission bits do not stop root from reading a directory")
	}
	root := t.TempDir()
	mkTree(t, root, "open/.env", "closed/.env", "closed/sub/.env")
	closed := filepath.Join(root, "closed")
	if err := os.Chmod(closed, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(closed, 0o755) })
	ms, st, err := Scan(root, []string{"**/.env"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rels(ms); !slices.Equal(got, []string{"open/.env"}) {
		t.Errorf("got %q", got)
	}
	if st.Skipped != 1 || len(st.SkippedPaths) != 1 || st.SkippedPaths[0] != closed {
		t.Errorf("skipped = %d %q, want 1 %q", st.Skipped, st.SkippedPaths, closed)
	}
	// A directory that can be searched but not listed: a command could
	// still open closed/.env by name, so literal names are looked up.
	if err := os.Chmod(closed, 0o311); err != nil {
		t.Fatal(err)
	}
	ms, st, err = Scan(root, []string{"**/.env", "**/sub/x", "**/.env.*"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rels(ms), []string{"closed/.env", "closed/sub/.env", "open/.env"}; !slices.Equal(got, want) {
		t.Errorf("searchable dir: got %q, want %q", got, want)
	}
	if st.Skipped != 1 {
		t.Errorf("searchable dir: skipped = %d, want 1", st.Skipped)
	}
	if err := os.Chmod(closed, 0); err != nil {
		t.Fatal(err)
	}
	// An unreadable root is an error (fail closed).
	if _, _, err := Scan(closed, []string{"**/.env"}, Limits{}); err == nil {
		t.Error("unreadable root: no error")
	}
}

func TestScanErrors(t *testing.T) {
	root := t.TempDir()
	mkTree(t, root, "f")
	if _, _, err := Scan(filepath.Join(root, "missing"), []string{"**/.env"}, Limits{}); err == nil {
		t.Error("missing root: no error")
	}
	if _, _, err := Scan(filepath.Join(root, "f"), []string{"**/.env"}, Limits{}); err == nil {
		t.Error("file root: no error")
	}
	if _, _, err := Scan(root, []string{"**/.env", "../x"}, Limits{}); err == nil {
		t.Error("invalid pattern: no error")
	}
	ms, st, err := Scan(filepath.Join(root, "missing"), nil, Limits{})
	if err != nil || ms != nil || st.Dirs != 0 {
		t.Errorf("no patterns: %v %v %+v", ms, err, st)
	}
}

func TestIsGlob(t *testing.T) {
	for p, want := range map[string]bool{
		"**/.env": true, "a?": true, "[ab]": true, "{a,b}": true, `a\*`: true,
		".env": false, "/home/u/.ssh": false, "a/b.c": false, "": false,
	} {
		if IsGlob(p) != want {
			t.Errorf("IsGlob(%q) = %v", p, !want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := []string{"**/.env", "**/.env.*", "**/secrets.*", "secrets.*", "build/**/token.json",
		"./secrets.*", "node_modules/", "[{]", "[{}]x/**/y", "{a,b/c}/**/d", "[!.]*", `a\*b`, "a/{b,c}/d", "**"}
	for _, p := range ok {
		if err := Validate(p); err != nil {
			t.Errorf("Validate(%q) = %v", p, err)
		}
	}
	bad := []struct{ pat, msg string }{
		{"", "empty"},
		{"   ", "empty"},
		{"/etc/passwd", "absolute"},
		{"/**/.env", "absolute"},
		{"~/.ssh", "home"},
		{"../x", ".."},
		{"a/../b", ".."},
		{"{a,..}/b", ".."},
		{"a//b", "empty or"},
		{"a/./b", "empty or"},
		{"{a,}", "empty brace"},
		{"{,a}/b", "absolute"},
		{"{a,/b}", "absolute"},
		{"[abc", "syntax"},
		{"{a,b", "syntax"},
		{"a}", "syntax"},
		{"[]", "syntax"},
		{`a\`, "syntax"},
		{"{a,[}]}", "overlap"},
		{"./", "root itself"},
		{"{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}", "256"},
	}
	for _, c := range bad {
		err := Validate(c.pat)
		if err == nil {
			t.Errorf("Validate(%q) = nil, want an error mentioning %q", c.pat, c.msg)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "invalid deny pattern") {
			t.Errorf("Validate(%q) = %q, want it to mention %q", c.pat, err, c.msg)
		}
	}
}

func TestCouldMatchBelow(t *testing.T) {
	cases := []struct {
		pat, dir string
		want     bool
	}{
		{"**/.env", "", true},
		{"**/.env", "a/b/c", true},
		{"**/.env", ".env", true}, // a directory named .env may contain another
		{"secrets.*", "", true},
		{"secrets.*", "secrets.d", false},
		{"secrets.*", "x", false},
		{"build/**/token.json", "", true},
		{"build/**/token.json", "build", true},
		{"build/**/token.json", "build/a/b", true},
		{"build/**/token.json", "src", false},
		{"build/**/token.json", "src/build", false},
		{"build/**/token.json", "builds", false},
		{"a/*/c", "a", true},
		{"a/*/c", "a/x", true},
		{"a/*/c", "a/x/y", false},
		{"a/*/c", "b", false},
		{"a/b", "a/b", false},
		{"a/b", "a", true},
		{"{x,y}/**/z", "x", true},
		{"{x,y}/**/z", "y/q/r", true},
		{"{x,y}/**/z", "w", false},
		{"{x/q,w}/z", "x", true},
		{"{x/q,w}/z", "x/q", true},
		{"{x/q,w}/z", "x/r", false},
		{"{x/q,w}/z", "w", true},
		{"{x/q,w}/z", "w/z", false},
		{"k[0-9]/f", "k1", true},
		{"k[0-9]/f", "kx", false},
		{"a/**", "a", true},
		{"a/**", "a/b/c", true},
		{"a/**", "b", false},
		{"**", "anything", true},
		{"a**/b", "ax", true},    // "**" inside a segment is "*"
		{"a**/b", "ax/y", false}, // ... and does not cross '/'
		{"**x/b", "yx", true},
		{"**x/b", "y", false},
		{"a/**/b/**/c", "a/q/b/r", true},
		{"a/**/b/**/c", "q", false},
		{`a\/b/c`, "a/b", true}, // an escaped '/' still separates
		{`a\/b/c`, "a/c", false},
		{"a/[b-c]x/d", "a/bx", true},
		{"a/[b-c]x/d", "a/dx", false},
		// A class that can match '/' disables pruning (doublestar's classes
		// do not exclude the separator).
		{"a[!x]b/c", "zzz", true},
		{"a[.-0]b/c", "zzz", true},
		{"a[!x/]b/c", "zzz", false},
		// A "**" created by a mid-segment brace: doublestar treats it as a
		// doublestar, so the pattern is not pruned.
		{"a{b,**/c}", "zzz", true},
		{"a{b,**}/c", "ax/y", true},
		{"{a,b}**/c", "ax/y", false}, // at a segment start: fine either way
		// Invalid patterns: never prune.
		{"[abc", "x", true},
		{"", "x", true},
		// Paths with "." or slashes around.
		{"build/**/token.json", ".", true},
		{"build/**/token.json", "/build/", true},
	}
	for _, c := range cases {
		if got := CouldMatchBelow(c.pat, c.dir); got != c.want {
			t.Errorf("CouldMatchBelow(%q, %q) = %v, want %v", c.pat, c.dir, got, c.want)
		}
	}
}

func TestDefaults(t *testing.T) {
	l := Limits{}.withDefaults()
	if l.MaxEntries != 2_000_000 || l.MaxMatches != 10_000 || l.Deadline != 5*time.Second {
		t.Errorf("defaults %+v", l)
	}
}
