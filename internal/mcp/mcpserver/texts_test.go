//go:build unix

package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentTexts: what the tools say reads naturally for an agent: ranges,
// missing files, binary files and counts in words, with no system call
// names (statat, openat, ...), and find_files and grep say when .gitignore
// kept paths out and how to include them.
func TestAgentTexts(t *testing.T) {
	e := start(t, "standard")
	for p, c := range map[string]string{
		"x.bin":              "x\x00y",
		"latin1.txt":         "ok\ncaf\xe9\n",
		".gitignore":         "build/\n*.log\n",
		"build/out.go":       "package out // Needle\n",
		"src/app.log":        "Needle\n",
		"src/pkg/y.go":       "package pkg\n\n// Needle too.\n",
		"src/sub/.gitignore": "gen/\n",
		"src/sub/gen/g.go":   "package gen // Needle\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(e.ws, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.ws, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		isError bool
		want    string // the whole text, or its start when it ends with "..."
	}{
		{ToolReadFile, map[string]any{"path": "a.txt", "start_line": 9, "end_line": 3}, true,
			"read_file: start_line 9 is after end_line 3: give start_line <= end_line, or leave end_line out to read to the end"},
		{ToolReadFile, map[string]any{"path": "missing.txt"}, true, "read 'missing.txt': no such file or directory"},
		{ToolFileInfo, map[string]any{"path": "missing.txt"}, true, "read 'missing.txt': no such file or directory"},
		{ToolListDir, map[string]any{"path": "nodir"}, true, "read 'nodir': no such file or directory"},
		{ToolFindFiles, map[string]any{"pattern": "*", "path": "nodir"}, true, "read 'nodir': no such file or directory"},
		{ToolReadFile, map[string]any{"path": "a.txt/x"}, true, "read 'a.txt/x': not a directory"},
		{ToolReadFile, map[string]any{"path": "x.bin"}, true,
			`'x.bin' is a binary file (3 bytes; it has NUL bytes): read_file shows text only; to see its bytes, use run_command with argv ["od","-A","d","-c","x.bin"] (file_info gives its size and type)`},
		{ToolReadFile, map[string]any{"path": "latin1.txt"}, true, "'latin1.txt' is not UTF-8 text: line 2 has the invalid byte 0xe9 at byte 4 of the line: ..."},
		{ToolReadFile, map[string]any{"path": "latin1.txt", "end_line": 1}, false, "1:..."},
		{ToolGrep, map[string]any{"pattern": "gamma"}, false, "a.txt:3:gamma\n[1 match in 1 file; 8 files searched, 3 paths ignored by .gitignore skipped]\n"},
		{ToolGrep, map[string]any{"pattern": "Needle"}, false,
			"src/pkg/x.go:3:// Needle is here.\nsrc/pkg/x.go:4:var Needle = 1\nsrc/pkg/y.go:3:// Needle too.\n[3 matches in 2 files; 8 files searched, 3 paths ignored by .gitignore skipped]\n"},
		{ToolGrep, map[string]any{"pattern": "Needle", "path": "src/sub"}, false,
			"[no matches; 1 file searched, 1 path ignored by .gitignore skipped: set include_ignored to search them too]\n"},
		{ToolGrep, map[string]any{"pattern": "Needle", "path": "src/sub", "include_ignored": true}, false,
			"src/sub/gen/g.go:1:package gen // Needle\n[1 match in 1 file; 2 files searched]\n"},
		{ToolGrep, map[string]any{"pattern": "nowhere"}, false, "[no matches; 8 files searched, 3 paths ignored by .gitignore skipped: set include_ignored to search them too]\n"},
		{ToolFindFiles, map[string]any{"pattern": "**/*.go"}, false,
			"src/main.go\nsrc/pkg/x.go\nsrc/pkg/y.go\n[3 paths found; 3 paths ignored by .gitignore skipped (include_ignored lists them)]\n"},
		{ToolFindFiles, map[string]any{"pattern": "**/*.go", "include_ignored": true}, false,
			"build/out.go\nsrc/main.go\nsrc/pkg/x.go\nsrc/pkg/y.go\nsrc/sub/gen/g.go\n"},
		{ToolFindFiles, map[string]any{"pattern": "**/*.log"}, false,
			"[no matches; 3 paths ignored by .gitignore skipped: set include_ignored to find them too]\n"},
		{ToolFindFiles, map[string]any{"pattern": "**/*.log", "include_ignored": true}, false, "src/app.log\n"},
		{ToolFindFiles, map[string]any{"pattern": "*.md"}, false, "[no matches; 3 paths ignored by .gitignore skipped: set include_ignored to find them too]\n"},
	} {
		out, isErr := e.call(t, tc.tool, tc.args)
		ok := out == tc.want
		if prefix, cut := strings.CutSuffix(tc.want, "..."); cut {
			ok = strings.HasPrefix(out, prefix)
		}
		if !ok || isErr != tc.isError {
			t.Errorf("%s %v:\n got isError=%v %q\nwant isError=%v %q", tc.tool, tc.args, isErr, out, tc.isError, tc.want)
		}
		for _, sys := range []string{"statat", "openat", "fstat", "readlinkat", "\uFFFD"} {
			if strings.Contains(out, sys) {
				t.Errorf("%s %v: %q has %q", tc.tool, tc.args, out, sys)
			}
		}
	}
}
