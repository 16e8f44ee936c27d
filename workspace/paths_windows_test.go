package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// TestWindowsPaths drives the FS with the paths that Windows reads
// otherwise than the rules do: drives, UNC and device paths, reserved
// device names, alternate data streams, short 8.3 names, trailing dots,
// backslashes and names that differ only in case. Each is refused, or
// decided as the name it really is; nothing is written.
func TestWindowsPaths(t *testing.T) {
	fsys, ws, base := setup(t)
	mustWrite(t, filepath.Join(ws, ".env"), "TOKEN=x\n")
	mustMkdir(t, filepath.Join(ws, "private"))
	mustWrite(t, filepath.Join(ws, "private", "key"), "k\n")
	mustMkdir(t, filepath.Join(ws, ".git", "hooks"))
	mustWrite(t, filepath.Join(ws, ".git", "HEAD"), "ref: refs/heads/main\n")
	mustMkdir(t, filepath.Join(ws, ".git", "objects"))
	upper := strings.ToUpper(ws[:1]) + ws[1:]
	lower := strings.ToLower(ws)
	for _, tc := range []struct {
		name, path string
		write      bool
		kind       Kind   // "" = allowed
		want       string // a substring of the refusal, or the content read
	}{
		{"drive-relative", "C:a.txt", false, KindInvalid, "current directory"},
		{"device path", `\\?\` + ws + `\a.txt`, false, KindInvalid, "UNC or device"},
		{"UNC path", `\\localhost\c$\x`, false, KindInvalid, "UNC or device"},
		{"reserved name", "CON", false, KindInvalid, "device CON"},
		{"reserved name with extension", "sub/nul.txt", true, KindInvalid, "device NUL"},
		{"alternate data stream", "a.txt:secret", true, KindInvalid, "alternate data stream"},
		{"alternate data stream of a denied file", ".env::$DATA", false, KindInvalid, "alternate data stream"},
		{"short name", "GIT~1/config", true, KindInvalid, "short (8.3) name"},
		{"trailing dot", ".env.", false, KindInvalid, "ends in a dot"},
		{"case of a protected name", ".GIT/hooks/pre-commit", true, KindInvalid, "differs only in case"},
		{"case of a deny glob", ".ENV", false, KindDenied, "**/.env"},
		{"case of a deny path", "PRIVATE/key", false, KindDenied, "private"},
		{"backslashes into hooks", `.git\hooks\pre-commit`, true, KindProtected, "hooks/"},
		{"backslashes out", `sub\..\..\outside\secret`, false, KindOutside, "outside the workspace"},
		{"full path", ws + `\a.txt`, false, "", "alpha"},
		{"full path, drive in upper case", upper + `\sub\b.txt`, false, "", "bee"},
		{"full path in lower case", lower + `\a.txt`, false, "", "alpha"},
		{"full path with slashes", filepath.ToSlash(ws) + "/a.txt", false, "", "alpha"},
		{"full path of a sibling", filepath.Join(base, "anchor2", "x"), false, KindOutside, "outside the workspace"},
		{"full path of a denied file", ws + `\.env`, false, KindDenied, "**/.env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			var got string
			if tc.write {
				_, err = fsys.WriteFile(tc.path, "pwned")
			} else {
				var r *ReadResult
				if r, err = fsys.ReadFile(tc.path, 0, 0); err == nil {
					got = r.Text()
				}
			}
			if tc.kind == "" {
				if err != nil || !strings.Contains(got, tc.want) {
					t.Fatalf("got %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			v := violation(t, err, tc.kind)
			if !strings.Contains(v.Error(), tc.want) {
				t.Errorf("%v: want it to say %q", v, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Fatal("a hook was written")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "alpha\nbeta\ngamma\n" {
		t.Fatalf("a.txt changed: %q", b)
	}
}

// TestWindowsRules checks the rules where Windows names paths otherwise
// than Linux: a "DIR/**" rule with capitals hides DIR itself, a git
// marker in another case is refused beside planted git configuration,
// a root at a drive's root still applies absolute rules to what a search
// walks, a read path inside the workspace does not become a root of its
// own, and a deny path without a drive names the workspace's drive.
func TestWindowsRules(t *testing.T) {
	base, err := filepath.EvalSymlinks(tempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "Proj")
	for _, d := range []string{"Secret", "Frozen", "g/hooks", "vendor", "private2", "sub"} {
		mustMkdir(t, filepath.Join(ws, d))
	}
	mustWrite(t, filepath.Join(ws, "Secret", "k"), "TOPSECRET\n")
	mustWrite(t, filepath.Join(ws, "g", "config"), "[core]\n")
	mustWrite(t, filepath.Join(ws, "vendor", "prod.env"), "TOPSECRET\n")
	mustWrite(t, filepath.Join(ws, "private2", "k"), "TOPSECRET\n")
	mustMkdir(t, filepath.Join(base, "outside", "secret"))
	mustWrite(t, filepath.Join(base, "outside", "secret", "k"), "TOPSECRET\n")
	vol := filepath.VolumeName(ws)
	p := &policy.Policy{
		Mode: policy.ModeStandard, Workspace: ws, Write: []string{ws}, Read: []string{filepath.Join(ws, "vendor")},
		Deny: []string{filepath.Join(ws, "Secret") + `\**`, "vendor/*.env", filepath.Join(base, "outside", "secret"),
			strings.TrimPrefix(filepath.Join(ws, "private2"), vol)},
		DenyWrite: []string{filepath.Join(ws, "Frozen") + `\**`},
		Protected: policy.Protected,
	}
	if roots := PolicyRoots(p); len(roots) != 0 {
		t.Errorf("a read path inside the workspace became a root: %v", roots)
	}
	fsys, err := New(p, Root{Path: vol + `\`})
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	for _, tc := range []struct {
		name string
		err  func() error
		kind Kind
	}{
		{"DIR/** hides DIR", func() error { _, err := fsys.Info("Secret"); return err }, KindDenied},
		{"DIR/** keeps DIR from writes", func() error { _, err := fsys.Mkdir("Frozen"); return err }, KindProtected},
		{"a git marker in lower case", func() error { _, err := fsys.WriteFile("g/head", "ref: x\n"); return err }, KindProtected},
		{"a relative rule in a read path inside the workspace", func() error { _, err := fsys.ReadFile("vendor/prod.env", 0, 0); return err }, KindDenied},
		{"a deny path without a drive", func() error { _, err := fsys.ReadFile("private2/k", 0, 0); return err }, KindDenied},
	} {
		t.Run(tc.name, func(t *testing.T) { violation(t, tc.err(), tc.kind) })
	}
	fr, err := fsys.Find(filepath.Join(base, "outside"), "**", FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := fsys.Grep("TOPSECRET", filepath.Join(base, "outside"), GrepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(fr, g); strings.Contains(s, "secret/k") || strings.Contains(s, "TOPSECRET") {
		t.Errorf("a search under a drive's root shows a denied file: %s", s)
	}
}

// TestWindowsNestedRepositoryIgnore: a directory holding ".GIT" is a
// nested repository on Windows too, so the workspace's .gitignore stops
// there, as git (core.ignorecase) sees it.
func TestWindowsNestedRepositoryIgnore(t *testing.T) {
	fsys, ws, _ := setup(t)
	mustWrite(t, filepath.Join(ws, ".gitignore"), "*.log\n")
	mustMkdir(t, filepath.Join(ws, "nested", ".GIT"))
	mustWrite(t, filepath.Join(ws, "nested", "x.log"), "x\n")
	mustWrite(t, filepath.Join(ws, "top.log"), "x\n")
	fr, err := fsys.Find(".", "**/*.log", FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(fr.Paths); got != "[nested/x.log]" {
		t.Errorf("found %s, want [nested/x.log]: top.log ignored, the nested repository's file not", got)
	}
}
