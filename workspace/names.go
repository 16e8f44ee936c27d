package workspace

import (
	"fmt"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

// reservedNames are Windows' device names: a file component named so,
// whatever its extension and case, opens the device, not a file.
var reservedNames = map[string]bool{
	"CON": true, "PRN": true, "AUX": true, "NUL": true, "CONIN$": true, "CONOUT$": true,
	"COM1": true, "COM2": true, "COM3": true, "COM4": true, "COM5": true, "COM6": true, "COM7": true, "COM8": true, "COM9": true,
	"COM¹": true, "COM²": true, "COM³": true,
	"LPT1": true, "LPT2": true, "LPT3": true, "LPT4": true, "LPT5": true, "LPT6": true, "LPT7": true, "LPT8": true, "LPT9": true,
	"LPT¹": true, "LPT²": true, "LPT³": true,
}

// protectedComponents are the names the protected rules match on (".git"
// and the components of policy.ProtectedNames), for the comparison
// without case of CheckName.
var protectedComponents = func() []string {
	out := []string{".git"}
	for _, n := range policy.ProtectedNames {
		for c := range strings.SplitSeq(strings.TrimSuffix(n, "/"), "/") {
			// A tool file's plain directory names (gradle/wrapper,
			// .yarn/plugins, .cargo/config) are common words: "Plugins"
			// or "Config" is no other name for a protected file.
			if policy.ToolFileName(n) && strings.Contains(n, "/") && !strings.Contains(c, ".") {
				continue
			}
			out = append(out, c)
		}
	}
	return out
}()

// CheckName checks the user path p, as given to a file tool, for the
// names that the file system of goos (runtime.GOOS of the server) would
// read otherwise than the protected and deny rules do, and returns why it
// is refused, or "" when it is not. It is pure Go, so that the rules of
// every system are tested on any of them.
//
// On windows it refuses a path relative to a drive's current directory
// ("C:foo"; a full path such as "C:\x" is checked name by name), UNC and
// device paths ("\\server\share", "\\?\C:\x",
// "\\.\pipe\x"), a component that is a reserved device name (CON, NUL,
// COM1, LPT1, also "con.txt" and with trailing dots or spaces), one that
// ends in a dot or a space (Windows drops them, so "x." is "x"), one
// with a colon (an alternate data stream, "file:stream"), a short 8.3
// name ("GIT~1", "PROGRA~1", which may be another name for a protected
// one such as .git) and the characters Windows refuses in names. On
// windows and darwin, whose file systems usually ignore case, it refuses
// a component that differs only in case from a protected name (".GIT",
// ".Envrc"): the rules compare names exactly. On linux it refuses nothing.
func CheckName(goos, p string) string {
	if goos != "windows" && goos != "darwin" {
		return ""
	}
	if goos == "windows" {
		if len(p) >= 2 && p[1] == ':' && isASCIILetter(p[0]) {
			if len(p) == 2 || (p[2] != '\\' && p[2] != '/') {
				return fmt.Sprintf("it names a drive's current directory (%q); give a path inside the workspace, relative or in full (%s\\...)", p, p[:2])
			}
			p = p[2:] // C:\x: the names after the drive are checked
		}
		if strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, `//`) || strings.HasPrefix(p, `/\`) || strings.HasPrefix(p, `\/`) {
			return "it is a UNC or device path (\\\\server\\share, \\\\?\\, \\\\.\\); give a path inside the workspace"
		}
	}
	for c := range strings.FieldsFuncSeq(p, func(r rune) bool { return r == '/' || (goos == "windows" && r == '\\') }) {
		if c == "." || c == ".." {
			continue
		}
		if goos == "windows" {
			if why := windowsComponent(c); why != "" {
				return why
			}
		}
		for _, n := range protectedComponents {
			if c != n && strings.EqualFold(strings.TrimRight(c, ". "), n) {
				return fmt.Sprintf("its name %q differs only in case from the protected name %q, which is the same file on a file system that ignores case; use %q", c, n, n)
			}
		}
	}
	return ""
}

// windowsComponent says why Windows would read the path component c as
// something other than the plain name it is, or "".
func windowsComponent(c string) string {
	if strings.IndexByte(c, ':') >= 0 {
		return fmt.Sprintf("its name %q has a colon, which names an alternate data stream on Windows", c)
	}
	if i := strings.IndexAny(c, `<>"|?*`); i >= 0 {
		return fmt.Sprintf("its name %q has %q, which Windows refuses in names", c, c[i])
	}
	for _, r := range c {
		if r < 0x20 {
			return fmt.Sprintf("its name %q has a control character, which Windows refuses in names", c)
		}
	}
	if strings.HasSuffix(c, ".") || strings.HasSuffix(c, " ") {
		return fmt.Sprintf("its name %q ends in a dot or a space, which Windows drops (it would be another name for %q)", c, strings.TrimRight(c, ". "))
	}
	base, _, _ := strings.Cut(c, ".")
	if reservedNames[strings.ToUpper(strings.TrimRight(base, " "))] {
		return fmt.Sprintf("its name %q is the Windows device %s, not a file", c, strings.ToUpper(strings.TrimRight(base, " ")))
	}
	if i := strings.LastIndexByte(base, '~'); i >= 0 && i+1 < len(base) && allDigits(base[i+1:]) {
		return fmt.Sprintf("its name %q looks like a Windows short (8.3) name, which may be another name for a protected file such as .git (GIT~1); use the long name", c)
	}
	return ""
}

func isASCIILetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
