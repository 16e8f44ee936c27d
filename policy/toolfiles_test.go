package policy

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the table of docs/tool-files.md from ToolFiles")

// Markers around the generated table in docs/tool-files.md.
const (
	toolFilesBegin = "<!-- tool-files table: generated from policy.ToolFiles by `go test ./policy -run TestToolFilesDoc -update-docs` -->\n"
	toolFilesEnd   = "<!-- end of the tool-files table -->\n"
)

// TestToolFilesDoc checks that docs/tool-files.md shows ToolFiles as they
// are: the page's table is the code's table.
func TestToolFilesDoc(t *testing.T) {
	path := filepath.Join("..", "docs", "tool-files.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	i, j := strings.Index(page, toolFilesBegin), strings.Index(page, toolFilesEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers of the generated table", path)
	}
	want := page[:i+len(toolFilesBegin)] + ToolFilesMarkdown() + page[j:]
	if *updateDocs {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if page != want {
		t.Errorf("%s's table differs from policy.ToolFiles: run go test ./policy -run TestToolFilesDoc -update-docs", path)
	}
}

// TestToolFilesRows checks each row is complete and well formed, and that
// the read-only rows are protected rules and names (one list).
func TestToolFilesRows(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range ToolFiles {
		if r.Path == "" || r.Tool == "" || r.Runs == "" || r.Why == "" {
			t.Errorf("row %q is incomplete", r.Path)
		}
		if seen[r.Path] {
			t.Errorf("row %q is listed twice", r.Path)
		}
		seen[r.Path] = true
		switch r.Answer {
		case AnswerReadOnly:
			if !strings.HasPrefix(r.Path, "**/") || IsGlob(strings.TrimPrefix(r.Path, "**/")) {
				t.Errorf("read-only row %q must be **/ and a plain name: the plan walks for it", r.Path)
			}
			if !slices.Contains(Protected, r.Path) {
				t.Errorf("read-only row %q is not in Protected", r.Path)
			}
			n := strings.TrimPrefix(r.Path, "**/")
			if !slices.Contains(ProtectedNames, n) || !ToolFileName(n) {
				t.Errorf("read-only row %q is not in ProtectedNames", r.Path)
			}
			if slices.Contains(FileToolRefused(), r.Path) {
				t.Errorf("read-only row %q is in FileToolRefused too", r.Path)
			}
		case AnswerDisarm, AnswerReport:
			if slices.Contains(Protected, r.Path) {
				t.Errorf("row %q (%s) must stay writable, not in Protected", r.Path, r.Answer)
			}
			if !slices.Contains(FileToolRefused(), r.Path) {
				t.Errorf("row %q is not refused to the file tools", r.Path)
			}
		default:
			t.Errorf("row %q has no known answer: %q", r.Path, r.Answer)
		}
	}
	for _, c := range []struct {
		rel, rule string
	}{
		{"sub/.cargo/config.toml", "**/.cargo/config.toml"},
		{".mvn/jvm.config", "**/.mvn/jvm.config"},
		{"a/b/.npmrc", "**/.npmrc"},
		{".yarn/releases/yarn-4.cjs", "**/.yarn/releases/"},
		{".venv/lib/python3.12/site-packages/x.pth", "**/site-packages/*.pth"},
		{".venv/bin/activate", "**/bin/activate"},
	} {
		if got := ProtectedBy(append(slices.Clone(Protected), FileToolRefused()...), c.rel); got != c.rule {
			t.Errorf("ProtectedBy(%q) = %q, want %q", c.rel, got, c.rule)
		}
	}
	for rel, want := range map[string]bool{
		"node_modules/rn-lib/android/gradle.properties": true,
		"a/node_modules/x/.npmrc":                       true,
		".venv/lib/python3.12/site-packages/p/pylintrc": true,
		"android/gradle.properties":                     false,
		"node_modules":                                  false,
		"pkg/node_modules.npmrc":                        false,
	} {
		if got := ToolFileSkipped(rel); got != want {
			t.Errorf("ToolFileSkipped(%q) = %v", rel, got)
		}
	}
	for _, rel := range []string{"src/config.toml", ".yarn/cache/x.zip", ".venv/lib/python3.12/site-packages/x.py"} {
		if got := ProtectedBy(append(slices.Clone(Protected), FileToolRefused()...), rel); got != "" {
			t.Errorf("ProtectedBy(%q) = %q, want none", rel, got)
		}
	}
}
