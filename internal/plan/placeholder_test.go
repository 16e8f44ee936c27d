package plan

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// TestPlaceholderKinds: every placeholder carries the kind the launcher
// must create, matching what bwrap binds over it (an empty or mask
// directory, an empty or mask file, the commondir file), masks of absent
// denied paths included.
func TestPlaceholderKinds(t *testing.T) {
	p, opts := testPolicy(t)
	ws := p.Workspace
	p.Deny = append(p.Deny, filepath.Join(ws, "private"), filepath.Join(ws, "keys.pem"))
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]PlaceholderKind{emptyDir: PlaceholderDir, maskDir: PlaceholderDir, emptyFile: PlaceholderFile, maskFile: PlaceholderFile, commondirFile: PlaceholderCommondir}
	seen := map[PlaceholderKind]bool{}
	for _, ph := range pl.Placeholders {
		i := slices.Index(pl.Argv, ph.Path)
		if i < 2 || pl.Argv[i-2] != "--ro-bind" {
			t.Errorf("placeholder %s is not bound read-only", ph.Path)
			continue
		}
		src := filepath.Base(pl.Argv[i-1])
		if k, ok := want[src]; !ok || ph.Kind != k {
			t.Errorf("placeholder %s (bound from %s) is a %q, want %q", ph.Path, src, ph.Kind, k)
		}
		seen[ph.Kind] = true
	}
	if !slices.Contains(pl.PlaceholderPaths(), filepath.Join(ws, "private")) {
		t.Errorf("no mask placeholder for the absent denied %s: %q", filepath.Join(ws, "private"), pl.PlaceholderPaths())
	}
	for _, k := range []PlaceholderKind{PlaceholderDir, PlaceholderFile, PlaceholderCommondir} {
		if !seen[k] {
			t.Errorf("no placeholder of kind %q in %+v", k, pl.Placeholders)
		}
	}
}

// TestPlaceholdersNoClutter: at the top of a writable root, a missing
// protected name gets a placeholder only where a tool on the host would
// read a new one without asking, and then one of its own kind: the
// editors' and agents' directories get empty directories; the names whose
// tool asks first (policy.AskFirst: .envrc, .mcp.json) get none, nor do
// the shell start-up files outside the home; in the home those stay empty
// files. No placeholder is a directory where the name is a file.
func TestPlaceholdersNoClutter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		home  bool
		files []string // the names that get an empty file
	}{
		{"workspace", false, nil},
		{"home", true, []string{".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, opts := testPolicy(t)
			p.Protected = slices.Clone(policy.Protected)
			root := p.Workspace
			if tc.home {
				root = opts.Home
				p.Write = append(p.Write, root)
			}
			pl, err := Build(p, []string{"true"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			var dirs, files []string
			for _, ph := range pl.Placeholders {
				if filepath.Dir(ph.Path) != root {
					continue
				}
				n := filepath.Base(ph.Path)
				if ph.Kind == PlaceholderDir {
					dirs = append(dirs, n)
				} else {
					files = append(files, n)
				}
			}
			for _, n := range dirs {
				// A directory name, or the first missing component of
				// one (.config of .config/fish/).
				isDir := slices.ContainsFunc(policy.ProtectedNames, func(pn string) bool { return strings.HasPrefix(pn, n+"/") })
				if n != ".git" && !isDir {
					t.Errorf("%s gets an empty directory, but is a file", n)
				}
			}
			for _, n := range []string{".envrc", ".mcp.json"} {
				if slices.Contains(dirs, n) || slices.Contains(files, n) {
					t.Errorf("%s gets a placeholder, but its tool asks before trusting a new one", n)
				}
			}
			slices.Sort(files)
			want := slices.Sorted(slices.Values(tc.files))
			if !slices.Equal(files, want) {
				t.Errorf("empty files %q, want %q", files, want)
			}
			for _, n := range []string{".vscode", ".idea", ".claude", ".cursor", ".codex", ".gemini"} {
				if !slices.Contains(dirs, n) {
					t.Errorf("no placeholder for %s (a tool reads it without asking): %q", n, dirs)
				}
			}
			t.Logf("%d placeholders at the top of %s: %q %q", len(dirs)+len(files), tc.name, dirs, files)
		})
	}
}
