package workspace

import (
	"strings"
	"testing"
)

// TestCheckName checks the name rules of each system on any system: the
// Windows pitfalls, the comparison of protected names without case on
// Windows and macOS, and nothing refused on Linux.
func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		goos, path string
		want       string // "" accepted; else a substring of the reason
	}{
		{"windows", "src/main.go", ""},
		{"windows", `src\main.go`, ""},
		{"windows", "a/../b.txt", ""},
		{"windows", "C:foo", "names a drive's current directory"},
		{"windows", "C:", "names a drive's current directory"},
		{"windows", `C:\x`, ""},
		{"windows", "c:/Windows/x", ""},
		{"windows", `C:\proj\.GIT\config`, "differs only in case"},
		{"windows", `C:\proj\x:stream`, "alternate data stream"},
		{"windows", `\\server\share\x`, "UNC or device"},
		{"windows", `\\?\C:\x`, "UNC or device"},
		{"windows", `\\.\pipe\x`, "UNC or device"},
		{"windows", "//server/share", "UNC or device"},
		{"windows", "CON", "device CON"},
		{"windows", "nul", "device NUL"},
		{"windows", "sub/com1", "device COM1"},
		{"windows", "LPT1.log", "device LPT1"},
		{"windows", "con.txt", "device CON"},
		{"windows", "con .txt", "device CON"},
		{"windows", "con.", "ends in a dot"},
		{"windows", "aux ", "ends in a dot or a space"},
		{"windows", "x.txt.", "ends in a dot"},
		{"windows", "console.txt", ""},
		{"windows", "com10", ""},
		{"windows", "file:stream", "alternate data stream"},
		{"windows", "file.txt::$DATA", "alternate data stream"},
		{"windows", "GIT~1/hooks/pre-commit", "short (8.3) name"},
		{"windows", "PROGRA~1", "short (8.3) name"},
		{"windows", "notes~draft", ""},
		{"windows", "a~", ""},
		{"windows", "a?b", "Windows refuses"},
		{"windows", ".GIT/hooks/pre-commit", `protected name ".git"`},
		{"windows", `.Git\config`, `protected name ".git"`},
		{"windows", ".git/hooks/pre-commit", ""},
		{"windows", ".ENVRC", `protected name ".envrc"`},
		{"darwin", ".GIT/hooks/pre-commit", `protected name ".git"`},
		{"darwin", "sub/.VSCode/settings.json", `protected name ".vscode"`},
		{"darwin", ".CONFIG/fish/config.fish", `protected name ".config"`},
		{"darwin", "con.txt", ""},
		{"darwin", "C:foo", ""},
		{"darwin", "file:stream", ""},
		{"linux", ".GIT/hooks/pre-commit", ""},
		{"linux", "C:foo", ""},
		{"linux", "con.txt", ""},
		{"linux", `\\server\x`, ""},
	} {
		got := CheckName(tc.goos, tc.path)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("CheckName(%s, %q) = %q, want %q", tc.goos, tc.path, got, tc.want)
		}
	}
}
