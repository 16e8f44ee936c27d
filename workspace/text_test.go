package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadNotText: a binary file, and lines that are not valid UTF-8, are a
// *NotTextError that says so and how to see the bytes, never replacement
// characters; valid UTF-8 (also an encoded U+FFFD) and lines around the
// invalid ones read as text.
func TestReadNotText(t *testing.T) {
	fsys, ws, _ := setup(t)
	files := map[string]string{
		"x.bin":     "x\x00y",
		"late.nul":  strings.Repeat("a", sniffBytes) + "\n\x00\n",
		"latin1.c":  "ok\ncaf\xe9 au lait\nend\n",
		"utf8.txt":  "h\u00e9llo \u2713 \U0001F600\nreplacement \uFFFD\n",
		"cut.txt":   "aaaaaaaa\u00e9",
		"empty.txt": "",
	}
	for name, c := range files {
		mustWrite(t, filepath.Join(ws, name), c)
	}
	for _, tc := range []struct {
		path       string
		start, end int
		limit      int64 // MaxReadBytes when not 0
		want       string
		wantErr    string
		line, col  int
	}{
		{path: "x.bin", wantErr: "'x.bin' is a binary file (3 bytes; it has NUL bytes): read_file shows text only; to see its bytes, use run_command with argv [\"od\",\"-A\",\"d\",\"-c\",\"x.bin\"]"},
		{path: "x.bin", start: 1, end: 1, wantErr: "'x.bin' is a binary file (3 bytes;"},
		{path: "late.nul", start: 2, end: 2, want: "\x00"},
		{path: "latin1.c", wantErr: "'latin1.c' is not UTF-8 text: line 2 has the invalid byte 0xe9 at byte 4 of the line", line: 2, col: 4},
		{path: "latin1.c", start: 2, end: 3, wantErr: "line 2 has the invalid byte 0xe9", line: 2, col: 4},
		{path: "latin1.c", start: 1, end: 1, want: "ok"},
		{path: "latin1.c", start: 3, want: "end"},
		{path: "utf8.txt", want: "h\u00e9llo \u2713 \U0001F600|replacement \uFFFD"},
		{path: "cut.txt", limit: 9, want: "aaaaaaaa"},
		{path: "cut.txt", want: "aaaaaaaa\u00e9"},
		{path: "empty.txt", want: ""},
	} {
		name := fmt.Sprintf("%s@%d-%d,limit=%d", tc.path, tc.start, tc.end, tc.limit)
		t.Run(name, func(t *testing.T) {
			if tc.limit != 0 {
				fsys.Limits.MaxReadBytes = tc.limit
				defer func() { fsys.Limits.MaxReadBytes = DefaultLimits.MaxReadBytes }()
			}
			r, err := fsys.ReadFile(tc.path, tc.start, tc.end)
			rt, errT := fsys.ReadText(tc.path, tc.start, tc.end)
			if tc.wantErr != "" {
				for _, e := range []error{err, errT} {
					var nt *NotTextError
					if !errors.As(e, &nt) || !strings.Contains(e.Error(), tc.wantErr) || nt.Line != tc.line || nt.Column != tc.col {
						t.Fatalf("error %v, want a NotTextError (line %d, column %d) with %q", e, tc.line, tc.col, tc.wantErr)
					}
				}
				return
			}
			if err != nil || errT != nil {
				t.Fatalf("ReadFile: %v; ReadText: %v", err, errT)
			}
			var texts []string
			for _, l := range r.Lines {
				texts = append(texts, l.Text)
			}
			if got := strings.Join(texts, "|"); got != tc.want {
				t.Errorf("ReadFile lines %q, want %q", got, tc.want)
			}
			if rt.Text != r.Text() {
				t.Errorf("ReadText %q, ReadFile %q", rt.Text, r.Text())
			}
		})
	}
}

// TestErrorTexts: errors that are not violations name the operation and the
// path as given and say what is wrong in words, without the system calls
// made (openat, fstatat, ...); errors.Is still sees the cause.
func TestErrorTexts(t *testing.T) {
	fsys, _, _ := setup(t)
	for _, tc := range []struct {
		name string
		call func() error
		want string
		is   error
	}{
		{"read missing", func() error { _, err := fsys.ReadText("missing.txt", 0, 0); return err }, "read 'missing.txt': no such file or directory", fs.ErrNotExist},
		{"read below a file", func() error { _, err := fsys.ReadText("a.txt/x", 0, 0); return err }, "read 'a.txt/x': not a directory", nil},
		{"read in a missing dir", func() error { _, err := fsys.ReadText("nodir/x.txt", 0, 0); return err }, "read 'nodir/x.txt': no such file or directory", fs.ErrNotExist},
		{"info missing", func() error { _, err := fsys.Info("missing.txt"); return err }, "read 'missing.txt': no such file or directory", fs.ErrNotExist},
		{"list missing", func() error { _, err := fsys.List("nope"); return err }, "read 'nope': no such file or directory", fs.ErrNotExist},
		{"find missing", func() error { _, err := fsys.Find("nope", "*", FindOptions{}); return err }, "read 'nope': no such file or directory", fs.ErrNotExist},
		{"grep missing", func() error { _, err := fsys.Grep("x", "nope", GrepOptions{}); return err }, "read 'nope': no such file or directory", fs.ErrNotExist},
		{"edit missing", func() error { _, err := fsys.EditFile("missing.txt", "a", "b"); return err }, "read 'missing.txt': no such file or directory", fs.ErrNotExist},
		{"read a directory", func() error { _, err := fsys.ReadText("sub", 0, 0); return err }, "read 'sub': is a directory", nil},
		{"mkdir over a file", func() error { _, err := fsys.Mkdir("a.txt"); return err }, "write 'a.txt': not a directory", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %q, want %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v, %v) is false", err, tc.is)
			}
			for _, sys := range []string{"openat", "fstatat", "open ", "stat", "readlinkat", "mkdirat"} {
				if strings.Contains(err.Error(), sys) {
					t.Errorf("%q names the system call %s", err, sys)
				}
			}
		})
	}
}

// TestTempFilesHidden: a write's temporary file, there while a write runs
// beside a listing or a search, is not shown by List, Find or Grep (it
// holds the new content under another name).
func TestTempFilesHidden(t *testing.T) {
	fsys, ws, _ := setup(t)
	mustWrite(t, filepath.Join(ws, tmpPrefix+"0123456789ab-a.txt"), "alpha half-written\n")
	mustWrite(t, filepath.Join(ws, "sub", tmpPrefix+"0123456789ab-b.txt"), "bee half-written\n")
	l, err := fsys.List(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Entries {
		if strings.HasPrefix(e.Name, tmpPrefix) {
			t.Errorf("List shows %s", e.Name)
		}
	}
	fr, err := fsys.Find(".", "**/*.txt", FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := fsys.Grep("half-written", ".", GrepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(fr, g); strings.Contains(s, tmpPrefix) {
		t.Errorf("Find or Grep shows a temporary file: %s", s)
	}
}
