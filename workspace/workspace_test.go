//go:build unix

package workspace

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

func TestResolveConfinement(t *testing.T) {
	fsys, ws, base := setup(t)
	mustLink(t, "../outside", filepath.Join(ws, "esc"))
	mustLink(t, filepath.Join(base, "outside", "secret"), filepath.Join(ws, "abs-esc"))
	mustLink(t, "/dev/null", filepath.Join(ws, "devnull"))
	mustLink(t, "sub", filepath.Join(ws, "in-link"))
	mustLink(t, filepath.Join(ws, "a.txt"), filepath.Join(ws, "abs-in"))
	mustLink(t, "deep/../../a.txt", filepath.Join(ws, "sub", "rel-in"))
	mustLink(t, "loop2", filepath.Join(ws, "loop1"))
	mustLink(t, "loop1", filepath.Join(ws, "loop2"))
	mustLink(t, "../../../outside", filepath.Join(ws, "sub", "deep", "up"))

	tests := []struct {
		name, path string
		kind       Kind   // "" = success
		want       string // content for success
	}{
		{"plain", "a.txt", "", "alpha"},
		{"dot segments", "./sub/./../a.txt", "", "alpha"},
		{"nested dotdot inside", "sub/deep/../../a.txt", "", "alpha"},
		{"absolute inside", filepath.Join(ws, "sub", "b.txt"), "", "bee"},
		{"link inside", "in-link/b.txt", "", "bee"},
		{"absolute link inside", "abs-in", "", "alpha"},
		{"relative link with dotdot inside", "sub/rel-in", "", "alpha"},
		{"parent escape", "../outside/secret", KindOutside, ""},
		{"multiple parent escape", "../../../../etc/passwd", KindOutside, ""},
		{"nested dotdot escape", "sub/../../outside/secret", KindOutside, ""},
		{"dotdot chain", "a/b/../../../outside/secret", KindOutside, ""},
		{"absolute outside", "/etc/passwd", KindOutside, ""},
		{"absolute outside temp", filepath.Join(base, "outside", "secret"), KindOutside, ""},
		{"sibling prefix", filepath.Join(base, "anchor2", "x"), KindOutside, ""},
		{"sibling prefix relative", "../anchor2/x", KindOutside, ""},
		{"case variant sibling", filepath.Join(base, "Anchor", "x"), KindOutside, ""},
		{"symlink escape dir", "esc/secret", KindSymlink, ""},
		{"symlink escape absolute", "abs-esc", KindSymlink, ""},
		{"symlink to device", "devnull", KindSymlink, ""},
		{"deep symlink escape", "sub/deep/up/secret", KindSymlink, ""},
		{"NUL byte", "a.txt\x00../../etc/passwd", KindInvalid, ""},
		{"5000 bytes", strings.Repeat("a/", 2500), KindInvalid, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := fsys.ReadFile(tc.path, 0, 0)
			if tc.kind == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Lines) == 0 || res.Lines[0].Text != tc.want {
					t.Fatalf("got %+v, want first line %q", res, tc.want)
				}
				return
			}
			violation(t, err, tc.kind)
			for _, o := range []string{"outside content", "sibling"} {
				if res != nil && strings.Contains(res.Text(), o) {
					t.Fatalf("read outside content")
				}
			}
			// The same path must also be refused for writing, creating nothing.
			_, werr := fsys.WriteFile(tc.path, "pwned")
			if werr == nil {
				t.Fatalf("write of %q succeeded", tc.path)
			}
		})
	}
	if _, err := fsys.ReadFile("loop1", 0, 0); err == nil || !strings.Contains(err.Error(), "too many levels") {
		t.Fatalf("symlink loop: want an error, got %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(base, "outside", "secret")); string(b) != "outside content\n" {
		t.Fatalf("outside file changed: %q", b)
	}
}

func TestViolationMessage(t *testing.T) {
	fsys, ws, _ := setup(t)
	mustMkdir(t, filepath.Join(ws, "sub", ".git"))
	tests := []struct {
		name string
		do   func() error
		want string
	}{
		{"outside", func() error { _, err := fsys.ReadFile("../x", 0, 0); return err },
			"sandbox violation: path '../x' is outside the workspace '" + ws + "': the file tools only reach the workspace and the roots the user's policy allows"},
		{"denied", func() error { _, err := fsys.ReadFile(".env", 0, 0); return err },
			"sandbox violation: path '.env' is denied by rule '**/.env' (the user's policy: filesystem.deny)"},
		{"protected", func() error { _, err := fsys.WriteFile("sub/.git/config", "x"); return err },
			"sandbox violation: path 'sub/.git/config' is protected by rule '**/.git/config': code placed there runs later on the host; the user can allow writes only by changing cordon's policy"},
		{"deny_write", func() error { _, err := fsys.WriteFile("frozen/x", "x"); return err },
			"sandbox violation: path 'frozen/x' is read-only by rule '" + filepath.Join(ws, "frozen") + "' (the user's policy: filesystem.deny_write)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got  %v\nwant %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "--no-sandbox") {
				t.Fatalf("the message advises lifting the sandbox: %v", err)
			}
		})
	}
	_, err := fsys.ReadFile("bad\xff\x00name", 0, 0)
	v := violation(t, err, KindInvalid)
	if !strings.Contains(v.Error(), `\xff`) {
		t.Fatalf("invalid UTF-8 not escaped: %q", v.Error())
	}
}

func TestDenyAndProtected(t *testing.T) {
	fsys, ws, _ := setup(t)
	mustWrite(t, filepath.Join(ws, ".env"), "TOKEN=1\n")
	mustWrite(t, filepath.Join(ws, "sub", "secrets.yaml"), "k: v\n")
	mustMkdir(t, filepath.Join(ws, "private"))
	mustWrite(t, filepath.Join(ws, "private", "key"), "k\n")
	mustMkdir(t, filepath.Join(ws, ".git", "hooks"))
	mustLink(t, ".env", filepath.Join(ws, "innocent"))
	mustLink(t, "private", filepath.Join(ws, "pub"))

	reads := []struct{ path, rule string }{
		{".env", "**/.env"},
		{"sub/secrets.yaml", "**/secrets.*"},
		{"private/key", filepath.Join(ws, "private")},
		{"innocent", "**/.env"},
		{"pub/key", filepath.Join(ws, "private")},
		{".env.local", "**/.env.*"},
	}
	for _, r := range reads {
		_, err := fsys.ReadFile(r.path, 0, 0)
		if v := violation(t, err, KindDenied); v.Rule != r.rule || !strings.Contains(v.Error(), r.rule) {
			t.Errorf("%s: rule %q, want %q", r.path, v.Rule, r.rule)
		}
	}
	for _, p := range []string{".git/hooks/pre-commit", ".envrc", ".vscode/settings.json", ".git/config", "frozen/x"} {
		_, err := fsys.WriteFile(p, "x")
		violation(t, err, KindProtected)
		if _, serr := os.Lstat(filepath.Join(ws, p)); serr == nil {
			t.Errorf("%s was created", p)
		}
	}
	_, err := fsys.Mkdir(".vscode/x")
	violation(t, err, KindProtected)
	// Protected paths stay readable.
	mustWrite(t, filepath.Join(ws, ".envrc"), "export A=1\n")
	if _, err := fsys.ReadFile(".envrc", 0, 0); err != nil {
		t.Fatal(err)
	}
	// Denied entries are invisible to List, Find and Grep.
	l, err := fsys.List(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Entries {
		if e.Name == ".env" || e.Name == "private" {
			t.Errorf("List shows denied %s", e.Name)
		}
	}
	fr, err := fsys.Find("", "**/*", FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range fr.Paths {
		if p == ".env" || strings.HasPrefix(p, "private") || strings.HasSuffix(p, "secrets.yaml") {
			t.Errorf("Find shows denied %s", p)
		}
	}
	gr, err := fsys.Grep("k", ".", GrepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range gr.Matches {
		if strings.Contains(m.Path, "private") || strings.Contains(m.Path, "secrets") {
			t.Errorf("Grep shows denied %s", m.Path)
		}
	}
}

func TestRoots(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(base, "w")
	ro := filepath.Join(base, "ro")
	rw := filepath.Join(base, "rw")
	vendor := filepath.Join(ws, "vendor")
	for _, d := range []string{ws, ro, rw, vendor, filepath.Join(base, "ro2")} {
		mustMkdir(t, d)
	}
	mustWrite(t, filepath.Join(ro, "f"), "ro\n")
	mustWrite(t, filepath.Join(base, "ro2", "f"), "ro2\n")
	fsys := newFS(t, ws, policy.ModeStandard, Root{Path: ro}, Root{Path: rw, Writable: true}, Root{Path: vendor})
	if _, err := fsys.ReadFile(filepath.Join(ro, "f"), 0, 0); err != nil {
		t.Fatal(err)
	}
	_, err := fsys.WriteFile(filepath.Join(ro, "f"), "x")
	violation(t, err, KindReadOnly)
	_, err = fsys.WriteFile("vendor/x.go", "x")
	if v := violation(t, err, KindReadOnly); v.Rule != vendor {
		t.Fatalf("rule %q", v.Rule)
	}
	if _, err := fsys.WriteFile(filepath.Join(rw, "new", "f"), "rw\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.WriteFile("../rw/g", "rw\n"); err != nil {
		t.Fatalf("a relative path into another root: %v", err)
	}
	_, err = fsys.ReadFile(filepath.Join(base, "ro2", "f"), 0, 0)
	v := violation(t, err, KindOutside)
	if !strings.Contains(v.Error(), "other allowed roots") {
		t.Fatalf("message: %v", v)
	}
	fr, err := fsys.Find(rw, "**/f", FindOptions{})
	if err != nil || len(fr.Paths) != 1 || fr.Paths[0] != filepath.Join(rw, "new", "f") {
		t.Fatalf("find in extra root: %v %v", fr, err)
	}
}

func TestReadAnchorsAndEdits(t *testing.T) {
	fsys, ws, _ := setup(t)
	res, err := fsys.ReadFile("a.txt", 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.TotalLines != 3 || len(res.Lines) != 2 || res.Lines[0].String() != "2:"+LineHash("beta")+"|beta" {
		t.Fatalf("got %+v", res)
	}
	if len(LineHash("x")) != HashHexDigits {
		t.Fatal("hash width")
	}
	full, _ := fsys.ReadFile("a.txt", 0, 0)
	a1, a2, a3 := full.Lines[0].Anchor(), full.Lines[1].Anchor(), full.Lines[2].Anchor()

	if _, err := fsys.ReplaceLines("a.txt", a2, a2, "BETA\nBETA2"); err != nil {
		t.Fatal(err)
	}
	check := func(want string) {
		t.Helper()
		b, _ := os.ReadFile(filepath.Join(ws, "a.txt"))
		if string(b) != want {
			t.Fatalf("file is %q, want %q", b, want)
		}
	}
	check("alpha\nBETA\nBETA2\ngamma\n")
	// a3 is now stale (line 3 is BETA2): rejected, nothing written.
	_, err = fsys.InsertAfter("a.txt", a3, "x")
	if err == nil || !strings.Contains(err.Error(), "stale") || !strings.Contains(err.Error(), "re-read") {
		t.Fatalf("stale anchor: %v", err)
	}
	_, err = fsys.ReplaceLines("a.txt", a1, "9:"+LineHash("gamma"), "x")
	if err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("past-the-end anchor: %v", err)
	}
	check("alpha\nBETA\nBETA2\ngamma\n")
	if _, err := fsys.InsertAfter("a.txt", a1+"|alpha", "after alpha"); err != nil {
		t.Fatal(err)
	}
	check("alpha\nafter alpha\nBETA\nBETA2\ngamma\n")
	if _, err := fsys.InsertAfter("a.txt", "0", "top"); err != nil {
		t.Fatal(err)
	}
	check("top\nalpha\nafter alpha\nBETA\nBETA2\ngamma\n")

	// Batch: verified first, applied bottom-up with the original numbering.
	r, _ := fsys.ReadFile("a.txt", 0, 0)
	L := r.Lines
	_, err = fsys.EditLines("a.txt", []LineEdit{
		{Start: L[0].Anchor(), Text: "TOP"},
		{Start: L[3].Anchor(), End: L[4].Anchor(), Text: ""},
		{After: L[5].Anchor(), Text: "end1"},
		{After: L[5].Anchor(), Text: "end2\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	check("TOP\nalpha\nafter alpha\ngamma\nend1\nend2\n")
	// A batch with one stale anchor changes nothing.
	r, _ = fsys.ReadFile("a.txt", 0, 0)
	_, err = fsys.EditLines("a.txt", []LineEdit{{Start: r.Lines[0].Anchor(), Text: "x"}, {Start: "2:000000", Text: "y"}})
	if err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("got %v", err)
	}
	_, err = fsys.EditLines("a.txt", []LineEdit{{Start: r.Lines[0].Anchor(), End: r.Lines[2].Anchor(), Text: "x"}, {After: r.Lines[1].Anchor(), Text: "y"}})
	if err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("overlap: %v", err)
	}
	for _, bad := range []string{"", "x", "1", "1:zz", "-1:abcdef", "1:abcdefg"} {
		if _, err := fsys.ReplaceLines("a.txt", bad, "", "x"); err == nil {
			t.Errorf("anchor %q accepted", bad)
		}
	}
	check("TOP\nalpha\nafter alpha\ngamma\nend1\nend2\n")

	// EditFile: unique, not found, several.
	if _, err := fsys.EditFile("a.txt", "gamma", "GAMMA"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.EditFile("a.txt", "nope", "x"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("not found: %v", err)
	}
	if _, err := fsys.EditFile("a.txt", "a", "x"); err == nil || !strings.Contains(err.Error(), "occurs 5 times") {
		t.Fatalf("not unique: %v", err)
	}
	if _, err := fsys.EditFile("a.txt", "", "x"); err == nil {
		t.Fatal("empty old accepted")
	}
	check("TOP\nalpha\nafter alpha\nGAMMA\nend1\nend2\n")
}

func TestWriteAtomicNoTemp(t *testing.T) {
	fsys, ws, _ := setup(t)
	if err := os.Chmod(filepath.Join(ws, "a.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := fsys.WriteFile("a.txt", strings.Repeat("x", i)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := fsys.WriteFile("new/dir/f.txt", "hello\n")
	if err != nil || !res.Created {
		t.Fatalf("%+v %v", res, err)
	}
	fsys.Limits.MaxWriteBytes = 3
	if _, err := fsys.WriteFile("a.txt", "toolong"); err == nil {
		t.Fatal("over-limit write accepted")
	}
	// A write that fails at the rename (the target is a directory) leaves
	// no temp file either.
	if _, err := fsys.WriteFile("sub", "x"); err == nil {
		t.Fatal("write over a directory accepted")
	}
	err = filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error {
		if strings.Contains(filepath.Base(p), ".cordon-tmp") {
			t.Errorf("temp file left: %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(ws, "a.txt"))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode not kept: %v", fi.Mode())
	}
}

func TestHardLinkRefused(t *testing.T) {
	fsys, ws, base := setup(t)
	out := filepath.Join(base, "outside", "secret")
	if err := os.Link(out, filepath.Join(ws, "hl")); err != nil {
		t.Skip("hard links unsupported:", err)
	}
	_, err := fsys.WriteFile("hl", "pwned")
	violation(t, err, KindHardLink)
	_, err = fsys.EditFile("hl", "outside", "pwned")
	violation(t, err, KindHardLink)
	if b, _ := os.ReadFile(out); string(b) != "outside content\n" {
		t.Fatalf("outside changed: %q", b)
	}
}

func TestSymlinkEditAndCreateOutside(t *testing.T) {
	fsys, ws, base := setup(t)
	outDir := filepath.Join(base, "outside")
	mustLink(t, filepath.Join(outDir, "secret"), filepath.Join(ws, "link-to-secret"))
	mustLink(t, "../outside", filepath.Join(ws, "outdir"))
	_, err := fsys.EditFile("link-to-secret", "outside", "pwned")
	violation(t, err, KindSymlink)
	_, err = fsys.ReplaceLines("link-to-secret", "1:"+LineHash("outside content"), "", "pwned")
	violation(t, err, KindSymlink)
	for _, p := range []string{"outdir/new.txt", "outdir/a/b/c.txt"} {
		_, err = fsys.WriteFile(p, "pwned")
		violation(t, err, KindSymlink)
	}
	_, err = fsys.Mkdir("outdir/x/y")
	violation(t, err, KindSymlink)
	ents, _ := os.ReadDir(outDir)
	if len(ents) != 1 {
		t.Fatalf("something was created outside: %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(outDir, "secret")); string(b) != "outside content\n" {
		t.Fatalf("outside changed: %q", b)
	}
}

func TestListFindGrepInfoMkdir(t *testing.T) {
	fsys, ws, _ := setup(t)
	mustWrite(t, filepath.Join(ws, ".gitignore"), "# comment\n*.log\n/build/\nsub/deep/ignored.txt\n!keep.log\n")
	mustMkdir(t, filepath.Join(ws, "build"))
	mustMkdir(t, filepath.Join(ws, ".git"))
	mustWrite(t, filepath.Join(ws, "build", "out.go"), "needle\n")
	mustWrite(t, filepath.Join(ws, "x.log"), "needle\n")
	mustWrite(t, filepath.Join(ws, "keep.log"), "needle\n")
	mustWrite(t, filepath.Join(ws, ".git", "HEAD"), "needle\n")
	mustWrite(t, filepath.Join(ws, "sub", "deep", "ignored.txt"), "needle\n")
	mustWrite(t, filepath.Join(ws, "sub", "deep", "n.go"), "package x\n// Needle here\n")
	mustWrite(t, filepath.Join(ws, "bin.dat"), "needle\x00\x01")

	gr, err := fsys.Grep("needle", "", GrepOptions{IgnoreCase: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range gr.Matches {
		got = append(got, m.Path)
	}
	if strings.Join(got, ",") != "keep.log,sub/deep/n.go" || gr.Matches[1].Line != 2 {
		t.Fatalf("grep: %+v", gr)
	}
	gr, _ = fsys.Grep("needle", "x.log", GrepOptions{})
	if len(gr.Matches) != 1 {
		t.Fatalf("grep a named file: %+v", gr)
	}
	gr, _ = fsys.Grep("e", "", GrepOptions{Include: "*.txt"})
	for _, m := range gr.Matches {
		if !strings.HasSuffix(m.Path, ".txt") {
			t.Fatalf("include: %+v", m)
		}
	}
	if _, err := fsys.Grep("(", "", GrepOptions{}); err == nil {
		t.Fatal("bad regexp accepted")
	}
	gr, _ = fsys.Grep("(", "", GrepOptions{Literal: true})
	if len(gr.Matches) != 0 {
		t.Fatalf("literal: %+v", gr)
	}
	fsys.Limits.MaxResults = 2
	gr, _ = fsys.Grep(".", "", GrepOptions{})
	if len(gr.Matches) != 2 || !gr.Truncated {
		t.Fatalf("bound: %+v", gr)
	}
	fsys.Limits.MaxResults = 1000

	fr, err := fsys.Find("", "**/*.go", FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(fr.Paths, ",") != "sub/deep/n.go" || fr.Ignored != 3 {
		t.Fatalf("find: %v, %d ignored", fr.Paths, fr.Ignored)
	}
	fr, _ = fsys.Find("", "**/*.go", FindOptions{IncludeIgnored: true})
	if strings.Join(fr.Paths, ",") != "build/out.go,sub/deep/n.go" || fr.Ignored != 0 {
		t.Fatalf("find, ignored included: %v", fr.Paths)
	}
	fr, _ = fsys.Find("sub", "*/n.go", FindOptions{})
	if strings.Join(fr.Paths, ",") != "sub/deep/n.go" {
		t.Fatalf("find in sub: %v", fr.Paths)
	}
	if _, err := fsys.Find("", "[a", FindOptions{}); err == nil {
		t.Fatal("bad glob accepted")
	}
	_, err = fsys.Find("../outside", "**", FindOptions{})
	violation(t, err, KindOutside)

	l, err := fsys.List("sub")
	if err != nil || len(l.Entries) != 2 || l.Entries[0].Name != "b.txt" || l.Entries[0].Type != "file" || l.Entries[1].Type != "dir" || l.Entries[0].Size != 4 || l.Entries[0].ModTime.IsZero() || l.Entries[0].Mode != "-rw-r--r--" {
		t.Fatalf("list: %+v %v", l, err)
	}
	if _, err := fsys.List("a.txt"); err == nil {
		t.Fatal("list of a file")
	}
	e, err := fsys.Info("sub/b.txt")
	if err != nil || e.Type != "file" || e.Size != 4 {
		t.Fatalf("info: %+v %v", e, err)
	}
	if _, err := fsys.Info("nope"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("info missing: %v", err)
	}
	if e, err := fsys.Mkdir("m/n/o"); err != nil || e.Type != "dir" {
		t.Fatalf("mkdir: %+v %v", e, err)
	}
	if fi, err := os.Stat(filepath.Join(ws, "m", "n", "o")); err != nil || !fi.IsDir() {
		t.Fatal("mkdir did not create")
	}
}

func TestTruncation(t *testing.T) {
	fsys, ws, _ := setup(t)
	long := strings.Repeat("é", 3000) // 6000 bytes
	mustWrite(t, filepath.Join(ws, "long.txt"), long+"\nshort\n")
	fsys.Limits.MaxLineBytes = 101
	r, err := fsys.ReadFile("long.txt", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || r.Lines[0].Hash != LineHash(long) || !strings.HasSuffix(r.Lines[0].Text, "[... line truncated]") {
		t.Fatalf("%+v", r.Lines[0])
	}
	txt := strings.TrimSuffix(r.Lines[0].Text, " [... line truncated]")
	if len(txt) != 100 || !strings.HasPrefix(long, txt) {
		t.Fatalf("not cut on a rune boundary: %d", len(txt))
	}
	if !strings.Contains(r.Text(), "truncated by cordon") {
		t.Fatal("no marker")
	}
	fsys.Limits.MaxReadBytes = 10
	r, err = fsys.ReadFile("long.txt", 0, 0)
	if err != nil || !r.Truncated {
		t.Fatalf("read bound: %+v %v", r, err)
	}
	if _, err := fsys.EditFile("long.txt", "short", "x"); err == nil {
		t.Fatal("edit of a file over the read limit")
	}
	fsys.Limits = DefaultLimits
	fsys.Limits.MaxReadLines = 1
	r, _ = fsys.ReadFile("a.txt", 0, 0)
	if len(r.Lines) != 1 || !r.Truncated {
		t.Fatalf("line bound: %+v", r)
	}
	for _, s := range []string{"", "a", "héllo", "\xff\xfe", strings.Repeat("€", 10)} {
		for n := -1; n < len(s)+2; n++ {
			c := truncUTF8(s, n)
			if len(c) > len(s) || !strings.HasPrefix(s, c) || (n >= 0 && len(c) > n) {
				t.Fatalf("truncUTF8(%q, %d) = %q", s, n, c)
			}
		}
	}
}

func TestModeOff(t *testing.T) {
	_, ws, base := setup(t)
	fsys := newFS(t, ws, policy.ModeOff)
	r, err := fsys.ReadFile("../outside/secret", 0, 0)
	if err != nil || r.Lines[0].Text != "outside content" {
		t.Fatalf("%+v %v", r, err)
	}
	mustWrite(t, filepath.Join(ws, ".env"), "A=1\n")
	if _, err := fsys.ReadFile(".env", 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.WriteFile(filepath.Join(base, "outside", "new"), "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.WriteFile(".envrc", "x"); err != nil {
		t.Fatal(err)
	}
	gr, err := fsys.Grep("alpha", "", GrepOptions{})
	if err != nil || len(gr.Matches) != 1 || gr.Matches[0].Path != "a.txt" {
		t.Fatalf("%+v %v", gr, err)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Fatal("nil policy")
	}
	if _, err := New(&policy.Policy{Workspace: "rel"}); err == nil {
		t.Fatal("relative workspace")
	}
	d := t.TempDir()
	if _, err := New(&policy.Policy{Workspace: filepath.Join(d, "missing")}); err == nil {
		t.Fatal("missing workspace")
	}
	if _, err := New(&policy.Policy{Workspace: d}, Root{Path: "rel"}); err == nil {
		t.Fatal("relative root")
	}
}

func TestReadTextMatchesReadFile(t *testing.T) {
	ws := t.TempDir()
	fsys := newFS(t, ws, policy.ModeStandard)
	long := strings.Repeat("é", 3000)
	for i, content := range []string{"", "\n", "a", "a\n", "a\n\nb", "x\r\ny\n", long + "\nz\n", strings.Repeat("line\n", 2500)} {
		name := fmt.Sprintf("f%d", i)
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, r := range [][2]int{{0, 0}, {1, 1}, {2, 3}, {5, 2}, {2400, 0}, {0, 99999}} {
			want, err := fsys.ReadFile(name, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			got, err := fsys.ReadText(name, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != want.Text() || got.TotalLines != want.TotalLines || got.Truncated != want.Truncated {
				t.Fatalf("%s %v: ReadText differs from ReadFile", name, r)
			}
			if len(want.Lines) > 0 && (got.First != want.Lines[0].N || got.Last != want.Lines[len(want.Lines)-1].N) {
				t.Fatalf("%s %v: first/last %d/%d", name, r, got.First, got.Last)
			}
		}
	}
	h := fnv.New64a()
	h.Write([]byte("hello"))
	if want := fmt.Sprintf("%06x", h.Sum64()&0xffffff); LineHash("hello") != want {
		t.Fatalf("LineHash = %s, want %s", LineHash("hello"), want)
	}
}

func TestGrepLiteralFastPath(t *testing.T) {
	ws := t.TempDir()
	fsys := newFS(t, ws, policy.ModeStandard)
	content := "alpha\nfunc (r *T) Close() error {\nbeta func (\n\nfunc (x *Y) Close() error\r\nend"
	if err := os.WriteFile(filepath.Join(ws, "a.go"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		pat  string
		opts GrepOptions
		want []int
	}{
		{"func (", GrepOptions{Literal: true}, []int{2, 3, 5}},
		{`func \(\w+ \*\w+\) Close\(\) error`, GrepOptions{}, []int{2, 5}},
		{`Close\(\) error$`, GrepOptions{}, nil},
		{"end", GrepOptions{Literal: true}, []int{6}},
		{"FUNC (", GrepOptions{Literal: true, IgnoreCase: true}, []int{2, 3, 5}},
	} {
		r, err := fsys.Grep(q.pat, "", q.opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, m := range r.Matches {
			got = append(got, m.Line)
		}
		if fmt.Sprint(got) != fmt.Sprint(q.want) {
			t.Errorf("%q: lines %v, want %v", q.pat, got, q.want)
		}
	}
}

// TestWorkspaceWritableOnlyByPolicy checks that the workspace root is
// read-only when no write path covers it (the minimal and untrusted
// profiles), and that PolicyRoots exposes the policy's other trees.
func TestWorkspaceWritableOnlyByPolicy(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	cache := filepath.Join(dir, "cache")
	out := filepath.Join(dir, "out")
	for _, d := range []string{ws, cache, out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(cache, "c.txt"), []byte("cached\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &policy.Policy{Mode: policy.ModeStandard, Workspace: ws, Read: []string{"/usr", ws, cache}, Write: []string{out, "/tmp"}}
	roots := PolicyRoots(p)
	if len(roots) != 2 || roots[0] != (Root{Path: out, Writable: true}) || roots[1] != (Root{Path: cache, Writable: false}) {
		t.Fatalf("PolicyRoots = %+v", roots)
	}
	fsys, err := New(p, roots...)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	var v *Violation
	if _, err := fsys.WriteFile("a.txt", "x"); !errors.As(err, &v) || v.Kind != "read-only-root" {
		t.Errorf("write into a read-only workspace: %v", err)
	}
	if _, err := fsys.WriteFile(filepath.Join(out, "b.txt"), "y"); err != nil {
		t.Errorf("write into a writable extra root: %v", err)
	}
	if r, err := fsys.ReadFile(filepath.Join(cache, "c.txt"), 0, 0); err != nil || len(r.Lines) != 1 {
		t.Errorf("read from a read-only extra root: %v", err)
	}
	if _, err := fsys.WriteFile(filepath.Join(cache, "c.txt"), "z"); !errors.As(err, &v) {
		t.Errorf("write into a read-only extra root: %v", err)
	}
}
