package cli

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestVersionOf(t *testing.T) {
	rev := "4b45c67e1234567890abcdef4b45c67e12345678"
	tests := []struct {
		name     string
		version  string
		settings map[string]string
		want     string
	}{
		{"checkout", "(devel)", map[string]string{"vcs.revision": rev, "vcs.modified": "false"}, "(devel) 4b45c67e1234"},
		{"dirty checkout", "(devel)", map[string]string{"vcs.revision": rev, "vcs.modified": "true"}, "(devel) 4b45c67e1234-dirty"},
		{"go install @version", "v1.2.3", nil, "v1.2.3"},
		{"pseudo-version names its revision", "v0.0.0-20261128003619-4b45c67e1234", map[string]string{"vcs.revision": rev}, "v0.0.0-20261128003619-4b45c67e1234"},
		{"no version at all", "", nil, "(devel)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info := &debug.BuildInfo{Main: debug.Module{Version: tc.version}}
			for k, v := range tc.settings {
				info.Settings = append(info.Settings, debug.BuildSetting{Key: k, Value: v})
			}
			if got := versionOf(info); got != tc.want {
				t.Errorf("versionOf = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestVersionCommands: cordon --version and cordon version print the same
// line, naming cordon once.
func TestVersionCommands(t *testing.T) {
	var outs []string
	for _, args := range [][]string{{"--version"}, {"version"}} {
		root := newRoot()
		root.SetArgs(args)
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		outs = append(outs, out.String())
	}
	if outs[0] != outs[1] || !strings.HasPrefix(outs[0], "cordon ") || strings.Count(outs[0], "cordon") != 1 {
		t.Errorf("--version %q, version %q", outs[0], outs[1])
	}
}

// TestSuggestions: a mistyped flag, value or command is answered with
// what was probably meant, on one line, naming the command once.
func TestSuggestions(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--allow-wirte", "x", "--", "true"}, "unknown flag: --allow-wirte (did you mean --allow-write?); see 'cordon run --help'"},
		{[]string{"run", "--prof", "ci", "--", "true"}, "(did you mean --profile?)"},
		{[]string{"status", "--jsn"}, "unknown flag: --jsn (did you mean --json?); see 'cordon status --help'"},
		{[]string{"--bogus"}, "unknown flag: --bogus; see 'cordon --help'"},
		{[]string{"policy", "--mode", "strct"}, `--mode "strct": unknown value (did you mean strict?); use one of off, permissive, standard, strict`},
		{[]string{"policy", "--profile", "dev"}, `(did you mean development?)`},
		{[]string{"policy", "--net", "nothing"}, `--net "nothing": unknown value; use one of deny, open, loopback`},
		{[]string{"stauts"}, `unknown command "stauts" for "cordon" (did you mean status?); see 'cordon --help'`},
		{[]string{"xyzzy"}, `unknown command "xyzzy" for "cordon"; see 'cordon --help'`},
		{[]string{"completion", "bashh"}, `unknown shell "bashh" (did you mean bash?): use one of bash, fish, powershell, zsh`},
		{[]string{"setup", "claud-code"}, `unknown agent "claud-code" (did you mean claude-code?)`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRoot()
			root.SetArgs(tc.args)
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			err := root.Execute()
			if err == nil {
				t.Fatal("no error")
			}
			got := oneLine(commandSuggestion(err.Error()))
			if !strings.Contains(got, tc.want) {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		})
	}
}

// TestEveryCommandHasAnExample: --help of every command of cordon and of
// cordon-mcp shows an example (commandExamples); a hidden one (the walk
// server's) is no user's to type.
func TestEveryCommandHasAnExample(t *testing.T) {
	mcpRoot := &cobra.Command{Use: "cordon"}
	mcpRoot.AddCommand(newMCP(nil))
	for _, root := range []*cobra.Command{newRoot(), withExamples(mcpRoot)} {
		var walk func(c *cobra.Command)
		walk = func(c *cobra.Command) {
			if c.Name() != "help" && !c.Hidden && c.Example == "" {
				t.Errorf("%q has no example", c.CommandPath())
			}
			for _, sub := range c.Commands() {
				walk(sub)
			}
		}
		walk(root)
	}
}
