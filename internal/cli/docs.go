package cli

import "github.com/spf13/cobra"

// DocTree is cordon's command tree as the man pages and shell completions
// document it (see internal/gendoc): cordon's commands, with "cordon mcp"
// as cordon-mcp serves it (its flags; the command in cordon's own tree only
// hands over to cordon-mcp). It is never executed.
func DocTree() *cobra.Command {
	root := newRoot()
	for _, c := range root.Commands() {
		if c.Name() == "mcp" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(withExamples(newMCP(nil)))
	root.DisableAutoGenTag = true
	return root
}
