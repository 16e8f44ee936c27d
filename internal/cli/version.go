package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/suggest"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// BuildVersion is cordon's version: Version when the build set it, else the
// module version of the build info (v1.2.3 for `go install ...@v1.2.3`,
// "(devel)" from a checkout) followed by the VCS revision, abbreviated to
// 12 digits, and "-dirty" when the work tree had changes.
func BuildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if Version != "" {
		return Version
	}
	if !ok {
		return "(unknown)"
	}
	return versionOf(info)
}

// versionOf is version for the build info info.
func versionOf(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	// A version from the module proxy already names its revision
	// (v0.0.0-20261128003619-4b45c67e1234): do not repeat it.
	if strings.HasSuffix(v, rev) {
		return v
	}
	return v + " " + rev
}

// commandSuggestion rewrites cobra's unknown-command error, whose
// suggestions follow on lines of their own ("\n\nDid you mean
// this?\n\tstatus"), as one line: unknown command "stauts" for "cordon"
// (did you mean status?).
func commandSuggestion(msg string) string {
	if !strings.HasPrefix(msg, "unknown command ") {
		return msg
	}
	head, rest, _ := strings.Cut(msg, "\n\nDid you mean this?\n")
	head = strings.TrimSpace(head)
	names := strings.Fields(rest)
	if len(names) == 0 {
		return head + "; see 'cordon --help'"
	}
	return head + " (did you mean " + strings.Join(names, " or ") + "?); see 'cordon --help'"
}

// versionLine is what `cordon version` and `cordon --version` print.
func versionLine() string {
	return fmt.Sprintf("cordon %s (%s, %s/%s)", BuildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// flagSuggestion returns " (did you mean --NAME?)" when err is an unknown
// flag of c that is close to one of its flags, else "".
func flagSuggestion(c *cobra.Command, err error) string {
	// A single letter (unknown shorthand flag) has nothing useful near it.
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if s := suggest.Closest(name, names); s != "" {
		return " (did you mean --" + s + "?)"
	}
	return ""
}
