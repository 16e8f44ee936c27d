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

// fold is s as the rules match it: lower case where foldCase.
func fold(s string) string {
	if !foldCase {
		return s
	}
	return strings.ToLower(s)
}

// compileDeny compiles deny or deny_write entries as the package matches
// them: with "/" between names (filepath.ToSlash: "C:/Users/you/.ssh" on
// Windows) and folded (fold). Each rule keeps its entry as the policy
// wrote it (with "/"), for the messages that name it.
func compileDeny(entries []string) ([]*policy.DenyRule, error) {
	out := make([]*policy.DenyRule, 0, len(entries))
	for _, e := range entries {
		r, err := policy.CompileDeny(fold(filepath.ToSlash(e)))
		if err != nil {
			return nil, fmt.Errorf("deny entry %q: %w", e, err)
		}
		r.Entry = filepath.ToSlash(e)
		out = append(out, r)
	}
	return out, nil
}
