package workspace

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUpload(t *testing.T) {
	fsys, ws, _ := setup(t)
	bin := []byte{0, 1, 2, 0xff}
	res, err := fsys.Upload([]FileData{
		{Path: "new/one.txt", Content: "one\n"},
		{Path: "a.txt", Content: "replaced\n"},
		{Path: "bin.dat", Content: base64.StdEncoding.EncodeToString(bin), Base64: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || !res[0].Created || res[1].Created || res[2].Bytes != 4 {
		t.Errorf("results: %+v %+v %+v", res[0], res[1], res[2])
	}
	for p, want := range map[string]string{"new/one.txt": "one\n", "a.txt": "replaced\n", "bin.dat": string(bin)} {
		got, err := os.ReadFile(filepath.Join(ws, p))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v", p, got, err)
		}
	}
}

func TestUploadAbortsBeforeWriting(t *testing.T) {
	fsys, ws, base := setup(t)
	for _, tc := range []struct {
		bad  FileData
		kind Kind
	}{
		{FileData{Path: "../outside/x", Content: "x"}, KindOutside},
		{FileData{Path: ".env", Content: "x"}, KindDenied},
		{FileData{Path: ".git/hooks/pre-commit", Content: "x"}, KindProtected},
		{FileData{Path: filepath.Join(base, "anchor2", "x"), Content: "x"}, KindOutside},
	} {
		_, err := fsys.Upload([]FileData{{Path: "first.txt", Content: "1"}, tc.bad, {Path: "a.txt", Content: "changed"}})
		v := violation(t, err, tc.kind)
		if !strings.HasPrefix(v.Error(), "sandbox violation:") {
			t.Errorf("message %q", v.Error())
		}
		if _, err := os.Stat(filepath.Join(ws, "first.txt")); !os.IsNotExist(err) {
			t.Fatalf("%s: first.txt was written before the violation was found", tc.bad.Path)
		}
		if got, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(got) != "alpha\nbeta\ngamma\n" {
			t.Fatalf("a.txt changed: %q", got)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "outside", "x")); !os.IsNotExist(err) {
		t.Error("wrote outside")
	}
	// Bad base64 and duplicates also abort before writing.
	if _, err := fsys.Upload([]FileData{{Path: "first.txt", Content: "1"}, {Path: "b", Content: "!!", Base64: true}}); err == nil || !strings.Contains(err.Error(), "base64") {
		t.Errorf("bad base64: %v", err)
	}
	if _, err := fsys.Upload([]FileData{{Path: "first.txt", Content: "1"}, {Path: "./sub/../first.txt", Content: "2"}}); err == nil || !strings.Contains(err.Error(), "same file") {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "first.txt")); !os.IsNotExist(err) {
		t.Error("first.txt was written")
	}
	if _, err := fsys.Upload(nil); err == nil {
		t.Error("empty upload succeeded")
	}
}

func TestDownload(t *testing.T) {
	fsys, ws, _ := setup(t)
	mustWrite(t, filepath.Join(ws, "bin.dat"), "\x00\x01\x02")
	mustWrite(t, filepath.Join(ws, "utf.txt"), "héllo wörld")
	got, err := fsys.Download([]string{"a.txt", "bin.dat", "sub/b.txt"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Content != "alpha\nbeta\ngamma\n" || got[0].Base64 || got[0].Resolved != filepath.ToSlash(filepath.Join(ws, "a.txt")) {
		t.Errorf("a.txt: %+v", got[0])
	}
	if !got[1].Base64 || got[1].Content != base64.StdEncoding.EncodeToString([]byte("\x00\x01\x02")) {
		t.Errorf("bin.dat: %+v", got[1])
	}
	if got[2].Content != "bee\n" {
		t.Errorf("b.txt: %+v", got[2])
	}
	// The budget spans all files; text is cut on a UTF-8 boundary.
	got, err = fsys.Download([]string{"utf.txt", "a.txt"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Content != "h" || !got[0].Truncated || got[1].Content != "a" || !got[1].Truncated || got[0].Size != int64(len("héllo wörld")) {
		t.Errorf("budget: %+v %+v", got[0], got[1])
	}
	for _, tc := range []struct {
		p    string
		kind Kind
	}{{"../outside/secret", KindOutside}, {".env", KindDenied}, {"private/x", KindDenied}, {"a\x00b", KindInvalid}} {
		mustWrite(t, filepath.Join(ws, ".env"), "TOKEN=1\n")
		_, err := fsys.Download([]string{"a.txt", tc.p}, 0)
		violation(t, err, tc.kind)
	}
	if _, err := fsys.Download([]string{"missing"}, 0); err == nil {
		t.Error("missing file downloaded")
	}
	if _, err := fsys.Download(nil, 0); err == nil {
		t.Error("empty download succeeded")
	}
}
