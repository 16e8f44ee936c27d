package workspace

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

// foldCase is set where the file system usually ignores case (NTFS, and
// APFS as macOS formats it): ".ENV" there is the file ".env", so the deny
// and protected rules are matched without case. On a volume that does
// respect case this denies more than the rule names, never less.
const foldCase = runtime.GOOS == "windows" || runtime.GOOS == "darwin"

// fold is s as the rules match it where foldCase: upper-cased, then
// lower-cased, so that letters NTFS takes for one (it compares names in
// upper case: σ and ς, µ and μ) fold to one. On a volume whose case table
// maps fewer letters together this denies more than the rule names, never
// less. (A glob's character class is folded too: [A-Z] becomes [a-z].)
func fold(s string) string {
	if !foldCase {
		return s
	}
	return strings.ToLower(strings.ToUpper(s))
}

// denyRule is a compiled deny or deny_write entry, matched in folded form,
// with the entry as the policy wrote it (with "/") for the messages.
type denyRule struct {
	*policy.DenyRule
	entry string
}

// compileDeny compiles deny or deny_write entries as the package matches
// them: with "/" between names (filepath.ToSlash: "C:/Users/you/.ssh" on
// Windows) and folded (fold). On Windows an absolute entry without a
// drive ("/etc/shadow" of a built-in profile, "\\x") names a path on the
// workspace's drive, as Windows reads it: volume ("C:") is put before it,
// so that it matches what it names.
func compileDeny(entries []string, volume string) ([]denyRule, error) {
	out := make([]denyRule, 0, len(entries))
	for _, e := range entries {
		s := filepath.ToSlash(e)
		if volume != "" && strings.HasPrefix(s, "/") {
			s = volume + s
		}
		r, err := policy.CompileDeny(fold(s))
		if err != nil {
			return nil, fmt.Errorf("deny entry %q: %w", e, err)
		}
		out = append(out, denyRule{r, s})
	}
	return out, nil
}
