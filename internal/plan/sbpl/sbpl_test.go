package sbpl

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: "com.apple.trustd.agent", want: `"com.apple.trustd.agent"`},
		{in: `a"b`, want: `"a\"b"`},
		{in: `a\b`, want: `"a\\b"`},
		{in: `#"x";(y)`, want: `"#\"x\";(y)"`},
		{in: "a\nb", bad: true},
		{in: "a\x00b", bad: true},
		{in: "a\x7fb", bad: true},
	} {
		got, err := Quote(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("Quote(%q) = %q, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Quote(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if err := Check("(version 1)\n(allow mach-lookup (global-name " + got + "))"); err != nil {
			t.Errorf("Check of Quote(%q): %v", tc.in, err)
		}
	}
}

func TestCheck(t *testing.T) {
	good := `(version 1)
;; a comment (with "quotes" and ) parens
(deny default (with message "cordon-x"))
(allow process-exec process-fork)
(allow signal (target same-sandbox))
(allow file-read* (subpath (param "R0")) (literal "/dev/null"))
(deny file-write* (with message "m") (require-all (require-any (subpath (param "W0"))) (regex #"/\.git/hooks(/|$)")))
(allow network-outbound (remote ip "localhost:8080") (remote unix-socket (path-literal (param "U0"))))
`
	if err := Check(good); err != nil {
		t.Fatalf("Check(good): %v", err)
	}
	for name, bad := range map[string]string{
		"empty":            "",
		"no version":       "(allow process-fork)",
		"version 2":        "(version 2)",
		"unbalanced open":  "(version 1)\n(allow process-fork",
		"unbalanced close": "(version 1)\n(allow process-fork))",
		"open string":      "(version 1)\n(allow mach-lookup (global-name \"x))",
		"open regex":       "(version 1)\n(deny file-read* (regex #\"x))",
		"newline string":   "(version 1)\n(allow mach-lookup (global-name \"x\ny\"))",
		"bad escape":       "(version 1)\n(allow mach-lookup (global-name \"x\\n\"))",
		"unknown op":       "(version 1)\n(allow file-frobnicate)",
		"unknown filter":   "(version 1)\n(allow file-read* (everything))",
		"unknown keyword":  "(version 1)\n(allow signal (target everyone))",
		"unknown form":     "(version 1)\n(import \"system.sb\")",
		"bad param":        "(version 1)\n(allow file-read* (subpath (param \"w 0\")))",
		"no op":            "(version 1)\n(allow (subpath \"/\"))",
		"bad with":         "(version 1)\n(deny default (with shout))",
		"bare string rule": "(version 1)\n\"x\"",
		"bad token":        "(version 1)\n(allow File-Read*)",
	} {
		if err := Check(bad); err == nil {
			t.Errorf("Check(%s) = nil, want an error for\n%s", name, bad)
		}
	}
}

func TestWriter(t *testing.T) {
	p := New("cordon-test")
	w := p.Param("W", "/Users/dev/proj")
	if again := p.Param("W", "/Users/dev/proj"); again != w {
		t.Errorf("the same value got a second name %s", again)
	}
	p.Comment("writes")
	p.Allow([]Op{OpFileWrite}, Subpath(w))
	re, err := GlobRegex("**/.git/hooks/", true)
	if err != nil {
		t.Fatal(err)
	}
	p.Deny([]Op{OpFileWrite}, RequireAll(Subpath(w), Regex(re)))
	p.Allow([]Op{OpNetworkOutbound}, RemoteIP("localhost:3128"), RemoteUnixSocket(p.Param("U", "/run/x.sock")))
	got, err := p.Text()
	if err != nil {
		t.Fatal(err)
	}
	want := `(version 1)
;; writes
(allow file-write* (subpath (param "W0")))
(deny file-write* (with message "cordon-test") (require-all (subpath (param "W0")) (regex #"/\.git/hooks(/|$)")))
(allow network-outbound (remote ip "localhost:3128") (remote unix-socket (path-literal (param "U0"))))
`
	if got != want {
		t.Errorf("profile:\n%s\nwant:\n%s", got, want)
	}
	if err := Check(got); err != nil {
		t.Error(err)
	}
	if ps := p.Params(); len(ps) != 2 || ps[0] != (Param{"W0", "/Users/dev/proj"}) || ps[1] != (Param{"U0", "/run/x.sock"}) {
		t.Errorf("params %v", ps)
	}
}

// TestContinue: a continued profile is the first one followed by the new
// rules; new parameters are named after the first profile's, and a
// profile Check refuses cannot be continued.
func TestContinue(t *testing.T) {
	p := New("cordon-test")
	p.Allow([]Op{OpFileRead}, Subpath(p.Param("R", "/usr")), Subpath(p.Param("R", "/bin")))
	base, err := p.Text()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Continue(base, "cordon-test", p.Params())
	if err != nil {
		t.Fatal(err)
	}
	if again := c.Param("R", "/bin"); again != "R1" {
		t.Errorf("the parameter of /bin again: %s, want R1", again)
	}
	c.Allow([]Op{OpFileRead}, Subpath(c.Param("R", "/opt")))
	c.Deny([]Op{OpNetworkOutbound}, RemoteIP("localhost:22"))
	got, err := c.Text()
	if err != nil {
		t.Fatal(err)
	}
	want := base + `(allow file-read* (subpath (param "R2")))
(deny network-outbound (with message "cordon-test") (remote ip "localhost:22"))
`
	if got != want {
		t.Errorf("continued:\n%s\nwant:\n%s", got, want)
	}
	if err := Check(got); err != nil {
		t.Error(err)
	}
	if ps := c.Params(); len(ps) != 3 || ps[2] != (Param{"R2", "/opt"}) {
		t.Errorf("params %v", ps)
	}
	for name, tc := range map[string]struct {
		profile string
		params  []Param
	}{
		"not well-formed": {"(version 1)\n(allow process-fork", nil},
		"empty":           {"", nil},
		"bad param name":  {base, []Param{{"r0", "/usr"}}},
		"param no number": {base, []Param{{"R", "/usr"}}},
		"param no value":  {base, []Param{{"R0", ""}}},
		"param NUL value": {base, []Param{{"R0", "a\x00b"}}},
	} {
		if _, err := Continue(tc.profile, "", tc.params); err == nil {
			t.Errorf("%s: continued", name)
		}
	}
}

func TestWriterErrors(t *testing.T) {
	for name, f := range map[string]func(p *Profile){
		"unknown op":      func(p *Profile) { p.Allow([]Op{"file-frob"}) },
		"no op":           func(p *Profile) { p.Allow(nil) },
		"bad param name":  func(p *Profile) { p.Allow([]Op{OpFileRead}, Subpath("w0")) },
		"control comment": func(p *Profile) { p.Comment("a\nb") },
		"quote in regex":  func(p *Profile) { p.Deny([]Op{OpFileRead}, Regex(`a"b`)) },
		"bad ip":          func(p *Profile) { p.Allow([]Op{OpNetworkOutbound}, RemoteIP("example.com:80")) },
		"bad port":        func(p *Profile) { p.Allow([]Op{OpNetworkOutbound}, RemoteIP("localhost:0")) },
		"bad target":      func(p *Profile) { p.Allow([]Op{OpSignal}, Target("all")) },
		"empty require":   func(p *Profile) { p.Allow([]Op{OpFileRead}, RequireAny()) },
		"zero filter":     func(p *Profile) { p.Allow([]Op{OpFileRead}, Filter{}) },
		"NUL value":       func(p *Profile) { p.Param("W", "a\x00b") },
		"control name":    func(p *Profile) { p.Allow([]Op{OpMachLookup}, GlobalName("a\tb")) },
	} {
		p := New("")
		f(p)
		if s, err := p.Text(); err == nil {
			t.Errorf("%s: no error; profile\n%s", name, s)
		}
	}
	if _, err := New("a\nb").Text(); err == nil {
		t.Error("a message with a newline was accepted")
	}
}

func TestGlobRegex(t *testing.T) {
	for _, tc := range []struct {
		glob  string
		below bool
		want  string
	}{
		{"**/.env", true, `/\.env(/|$)`},
		{"**/.env.*", true, `/\.env\.[^/]*(/|$)`},
		{"**/secrets.*", true, `/secrets\.[^/]*(/|$)`},
		{"**/.git/hooks/", true, `/\.git/hooks(/|$)`},
		{"**/.git", false, `/\.git$`},
		{"**/.git/modules/**/config", false, `/\.git/modules/(.*/)?config$`},
		{"**/.git/worktrees/*/gitdir", false, `/\.git/worktrees/[^/]*/gitdir$`},
		{".cordon.yaml", false, `/\.cordon\.yaml$`},
		{"a/**", false, `/a(/.*)?$`},
		{"{a,b/c}.txt", false, `/(a|b/c)\.txt$`},
		{"x?[ab]", false, `/x[^/]+.+$`},
		{`a\*b`, false, `/a\*b$`},
		{`(x)|y+^$`, false, `/\(x\)\|y\+\^\$$`},
		{"a\"b", false, `/a[^/]b$`},
	} {
		got, err := GlobRegex(tc.glob, tc.below)
		if err != nil || got != tc.want {
			t.Errorf("GlobRegex(%q, %v) = %q, %v; want %q", tc.glob, tc.below, got, err, tc.want)
		}
		if _, err := regexp.Compile(got); err != nil {
			t.Errorf("GlobRegex(%q): Go cannot compile %q: %v", tc.glob, got, err)
		}
	}
	for _, bad := range []string{"", "a[b", "{a,b", "a}", `a\`, "\xff"} {
		if re, err := GlobRegex(bad, false); err == nil {
			t.Errorf("GlobRegex(%q) = %q, want an error", bad, re)
		}
	}
}

// TestGlobRegexSuperset: for random patterns and paths, whenever the glob
// matches a path relative to a root (doublestar, as the policy matches),
// the regex matches the path below that root; and for patterns of only
// literals, '*' and "**" starting with "**/", below the root "/" it
// matches exactly then (below another root it may also match the root's
// own components: a superset).
func TestGlobRegexSuperset(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	atoms := []string{"a", "b", ".", "*", "?", "**", "[ab]", "[!a]", "{a,b}", "é", "(", "+", "$"}
	exactAtoms := []string{"a", "b", ".", "*", "é", "("}
	names := []string{"a", "b", ".a", "ab", "a.b", "é", "(", "+$", "ba"}
	gen := func(from []string, anyDepth bool) string {
		var segs []string
		if anyDepth {
			segs = append(segs, "**")
		}
		for range 1 + rng.IntN(3) {
			var s string
			for range 1 + rng.IntN(3) {
				s += from[rng.IntN(len(from))]
			}
			if s == "**" || strings.Contains(s, "***") {
				s = "a"
			}
			segs = append(segs, s)
		}
		return strings.Join(segs, "/")
	}
	for i := range 4000 {
		exact := i%2 == 0
		pat := gen(atoms, rng.IntN(2) == 0)
		if exact {
			pat = gen(exactAtoms, true)
		}
		if !doublestar.ValidatePattern(pat) {
			continue
		}
		re, err := GlobRegex(pat, false)
		if err != nil {
			t.Fatalf("GlobRegex(%q): %v", pat, err)
		}
		rx := regexp.MustCompile(re)
		for range 20 {
			var parts []string
			for range 1 + rng.IntN(4) {
				parts = append(parts, names[rng.IntN(len(names))])
			}
			rel := strings.Join(parts, "/")
			want, _ := doublestar.Match(pat, rel)
			if want && !rx.MatchString("/root/dir/"+rel) {
				t.Fatalf("glob %q matches %q but regex %q does not match it below /root/dir", pat, rel, re)
			}
			// Below "/", no component above the root can match.
			if got := rx.MatchString("/" + rel); exact && got != want {
				t.Fatalf("glob %q does not match %q but regex %q does", pat, rel, re)
			}
		}
	}
}

// FuzzProfile: whatever the paths and strings, the writer's profile passes
// Check, and no parameter's value appears in it.
func FuzzProfile(f *testing.F) {
	f.Add("/Users/dev/proj", "/tmp/x\"y", "**/.env", "com.apple.x", "run1")
	f.Add("/a\n(b)", "/c;#\"d\\", "{a,b}/[!c]?*", "x\\y\"", "r\"\n")
	f.Fuzz(func(t *testing.T, path1, path2, glob, service, msg string) {
		p := New(msg)
		a := p.Param("W", path1)
		b := p.Param("R", path2)
		p.Allow([]Op{OpFileRead}, Subpath(a), Literal(b))
		p.Allow([]Op{OpMachLookup}, GlobalName(service))
		if re, err := GlobRegex(glob, true); err == nil {
			p.Deny([]Op{OpFileRead, OpFileWrite}, RequireAll(RequireAny(Subpath(a), Subpath(b)), Regex(re)))
		}
		p.Allow([]Op{OpNetworkOutbound}, RemoteUnixSocket(p.Param("U", path2)))
		text, err := p.Text()
		if err != nil {
			return // a control character in msg or service, NUL or "" in a path
		}
		if err := Check(text); err != nil {
			t.Fatalf("Check: %v\n%s", err, text)
		}
		for _, prm := range p.Params() {
			if len(prm.Value) > 3 && strings.Contains(text, prm.Value) && !strings.Contains(service, prm.Value) && !strings.Contains(msg, prm.Value) && !strings.Contains(glob, prm.Value) {
				t.Fatalf("parameter value %q appears in the profile\n%s", prm.Value, text)
			}
		}
	})
}
