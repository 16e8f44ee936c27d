package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/cli"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestWrite: every command of the tree gets a man page with its flags and
// example, and every completion file names every command; bash accepts
// its completion script.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	if err := write(dir); err != nil {
		t.Fatal(err)
	}
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.IsAvailableCommand() || c.Parent() == nil {
			cmds = append(cmds, c)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(cli.DocTree())
	if len(cmds) < 12 {
		t.Fatalf("only %d commands in the tree", len(cmds))
	}
	for _, c := range cmds {
		page := filepath.Join(dir, "man", "man1", strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		b, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("%s: %v", c.CommandPath(), err)
			continue
		}
		text := strings.ReplaceAll(string(b), `\-`, "-") // roff's escaped hyphens, if any
		if !strings.Contains(text, ".SH EXAMPLE") {
			t.Errorf("%s has no example section", page)
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && !strings.Contains(text, "--"+f.Name) {
				t.Errorf("%s does not document --%s", page, f.Name)
			}
		})
	}
	for name := range completions {
		b, err := os.ReadFile(filepath.Join(dir, "completions", name))
		if err != nil || len(b) < 1000 {
			t.Errorf("completion %s: %v (%d bytes)", name, err, len(b))
		}
	}
	// The run page documents the policy flags as cordon run takes them.
	b, _ := os.ReadFile(filepath.Join(dir, "man", "man1", "cordon-run.1"))
	if run := strings.ReplaceAll(string(b), `\-`, "-"); !strings.Contains(run, "--allow-write") || !strings.Contains(run, "cordon run -- go test ./...") {
		t.Errorf("cordon-run.1 lacks --allow-write or its example:\n%s", b)
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		out, err := exec.Command(bash, "-n", filepath.Join(dir, "completions", "cordon.bash")).CombinedOutput()
		if err != nil {
			t.Errorf("bash -n cordon.bash: %v: %s", err, out)
		}
	}
}
