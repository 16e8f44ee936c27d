// Command gendoc writes cordon's man pages and shell completions, generated
// from the command tree of package cli (cli.DocTree: the same flags, help
// texts and examples as --help), into a directory: man/man1/cordon*.1 and
// completions/{cordon.bash,_cordon,cordon.fish,cordon.ps1}. The release
// script ships them beside the binaries. Run it with:
//
//	go run ./internal/gendoc -out DIR
//
// It owns nothing but the writing, with cobra's own generators, so that
// cordon itself does not link them: the texts are the commands' own.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cordon-sandbox/cordon/internal/cli"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func main() {
	out := flag.String("out", "", "directory to write man/ and completions/ into (created)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "gendoc: usage: go run ./internal/gendoc -out DIR")
		os.Exit(2)
	}
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}

// completions are the completion files written, by name, with their
// generators.
var completions = map[string]func(*cobra.Command, string) error{
	"cordon.bash": func(c *cobra.Command, f string) error { return c.GenBashCompletionFileV2(f, true) },
	"_cordon":     (*cobra.Command).GenZshCompletionFile,
	"cordon.fish": func(c *cobra.Command, f string) error { return c.GenFishCompletionFile(f, true) },
	"cordon.ps1":  (*cobra.Command).GenPowerShellCompletionFileWithDesc,
}

// write writes the man pages into dir/man/man1 and the completions into
// dir/completions, creating the directories.
func write(dir string) error {
	root := cli.DocTree()
	man := filepath.Join(dir, "man", "man1")
	comp := filepath.Join(dir, "completions")
	for _, d := range []string{man, comp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	hdr := &doc.GenManHeader{Title: "CORDON", Section: "1", Source: "cordon " + cli.BuildVersion(), Manual: "cordon manual"}
	if err := doc.GenManTree(root, hdr, man); err != nil {
		return fmt.Errorf("writing the man pages: %w", err)
	}
	for name, gen := range completions {
		if err := gen(root, filepath.Join(comp, name)); err != nil {
			return fmt.Errorf("writing the %s completion: %w", name, err)
		}
	}
	return nil
}
