//go:build linux

package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// TestWalkPath: the one resolution walks links and ".." by descriptor to
// the expected symlink-free path, holds one descriptor per directory above
// the last component (up to the first missing one), and releases them all.
func TestWalkPath(t *testing.T) {
	fsys, ws, _ := setup(t)
	mustLink(t, "sub", filepath.Join(ws, "in-link"))
	mustLink(t, ".", filepath.Join(ws, "dot"))
	mustLink(t, ws, filepath.Join(ws, "abs-root"))
	mustLink(t, "..", filepath.Join(ws, "sub", "up"))
	mustLink(t, "chain2", filepath.Join(ws, "chain1"))
	mustLink(t, "sub/b.txt", filepath.Join(ws, "chain2"))
	mustLink(t, "sub/deep/..", filepath.Join(ws, "dotdot-link"))
	mustLink(t, "new/../a.txt", filepath.Join(ws, "missing-dotdot"))
	fds := openFDs(t)
	tests := []struct {
		path    string
		rel     string // "" = an error
		exists  bool
		missing int // firstMissing when !exists
	}{
		{"", ".", true, 0},
		{".", ".", true, 0},
		{"a.txt", "a.txt", true, 0},
		{"sub/..", ".", true, 0},
		{"sub/deep/..", "sub", true, 0},
		{"sub/deep/../b.txt", "sub/b.txt", true, 0},
		{"in-link", "sub", true, 0},
		{"in-link/b.txt", "sub/b.txt", true, 0},
		{"in-link/..", ".", true, 0},
		{"dot/dot/a.txt", "a.txt", true, 0},
		{"abs-root/sub/deep", "sub/deep", true, 0},
		{filepath.Join(ws, "sub", "up", "a.txt"), "a.txt", true, 0},
		{"chain1", "sub/b.txt", true, 0},
		{"dotdot-link", "sub", true, 0},
		{"new", "new", false, 0},
		{"new/x/y", "new/x/y", false, 0},
		{"sub/new/x", "sub/new/x", false, 1},
		{"in-link/deep/new", "sub/deep/new", false, 2},
		{"missing-dotdot", "", false, 0},
		{"a.txt/x", "", false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			tg, err := fsys.resolve("file-read", tc.path)
			if tc.rel == "" {
				if err == nil {
					tg.close()
					t.Fatalf("resolved to %q, want an error", tg.rel)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer tg.close()
			if tg.rel != tc.rel || tg.exists != tc.exists || tg.abs != filepath.Join(ws, tc.rel) {
				t.Fatalf("rel %q exists %v abs %q, want %q %v", tg.rel, tg.exists, tg.abs, tc.rel, tc.exists)
			}
			if strings.Join(tg.names, "/") != strings.TrimPrefix(tc.rel, ".") {
				t.Fatalf("names %q", tg.names)
			}
			held := len(tg.names)
			if len(tg.names) == 0 {
				held = 1 // the root
			}
			if !tc.exists {
				if tg.firstMissing() != tc.missing {
					t.Fatalf("first missing %d, want %d", tg.firstMissing(), tc.missing)
				}
				held = tc.missing + 1
			}
			if len(tg.dirs) != held {
				t.Fatalf("%d directories held, want %d", len(tg.dirs), held)
			}
		})
	}
	if n := openFDs(t); n != fds {
		t.Fatalf("descriptors leaked: %d open, %d before", n, fds)
	}
}

// TestGitDirAboveNestedRoot: a workspace inside a writable home is checked
// relative to the home too, including git directories above the
// workspace's root (here the workspace is the hooks directory of a bare
// repository in the home), looked up by descriptor from the home's root.
func TestGitDirAboveNestedRoot(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	mkGitDir(t, filepath.Join(home, "bare.git"), false)
	mustMkdir(t, filepath.Join(home, "plain", "hooks"))
	for _, tc := range []struct {
		ws      string
		refused bool
	}{
		{filepath.Join(home, "bare.git", "hooks"), true},
		{filepath.Join(home, "plain", "hooks"), false},
	} {
		mustMkdir(t, tc.ws)
		p := &policy.Policy{Mode: policy.ModeStandard, Workspace: tc.ws, Write: []string{tc.ws, home}, Protected: policy.Protected}
		fsys, err := New(p, Root{Path: home, Writable: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = fsys.WriteFile("pre-commit", "#!/bin/sh\ntouch pwned\n")
		fsys.Close()
		_, statErr := os.Lstat(filepath.Join(tc.ws, "pre-commit"))
		if !tc.refused {
			if err != nil || statErr != nil {
				t.Fatalf("%s: %v %v", tc.ws, err, statErr)
			}
			continue
		}
		v := violation(t, err, KindProtected)
		if v.Rule != "hooks/" || v.Source != SourceGitDir || v.Detail != filepath.Join(home, "bare.git") {
			t.Fatalf("%s: %+v", tc.ws, v)
		}
		if !errors.Is(statErr, os.ErrNotExist) {
			t.Fatalf("%s: pre-commit was written", tc.ws)
		}
	}
}

// TestListDescribesByDescriptor: List describes a link entry as a link,
// with fstatat on the listed directory, and leaves denied entries out.
func TestListDescribesByDescriptor(t *testing.T) {
	fsys, ws, _ := setup(t)
	mustLink(t, "b.txt", filepath.Join(ws, "sub", "l"))
	mustWrite(t, filepath.Join(ws, "sub", "secrets.txt"), "k\n")
	l, err := fsys.List("sub")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range l.Entries {
		got = append(got, e.Name+":"+e.Type)
	}
	if strings.Join(got, ",") != "b.txt:file,deep:dir,l:symlink" {
		t.Fatalf("entries %v", got)
	}
}
