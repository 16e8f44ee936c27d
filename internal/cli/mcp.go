package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/cordon-sandbox/cordon/internal/host/sibling"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/result"
	"github.com/spf13/cobra"
)

// MCPBinary is the name of the MCP server's program (cmd/cordon-mcp),
// installed beside cordon.
const MCPBinary = "cordon-mcp"

const (
	mcpUse   = "mcp [flags]"
	mcpShort = "MCP server on stdio exposing confined tools"
)

// MCPServer serves the Model Context Protocol on stdin and stdout under
// the policy p, loaded from the flags with the host's facts h, until
// stdin ends or a signal asks it to stop. cmd/cordon-mcp provides it, so
// that the MCP SDK is linked into cordon-mcp only.
type MCPServer func(p *policy.Policy, h policy.Host) error

// MainMCP runs cordon-mcp: "cordon mcp [flags]" served by serve, with the
// same flags, help and exit statuses. args are its arguments, with or
// without the "mcp" that cordon passes on (an MCP client may start
// either program).
func MainMCP(args []string, serve MCPServer) int {
	if len(args) > 0 && args[0] == "mcp" {
		args = args[1:]
	}
	root := &cobra.Command{Use: "cordon", SilenceErrors: true, SilenceUsage: true}
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(newMCP(serve))
	withExamples(root)
	return execute(root, append([]string{"mcp"}, args...))
}

// newMCP is "cordon mcp" as cordon-mcp runs it: the MCP server on stdio.
func newMCP(serve MCPServer) *cobra.Command {
	pf := policyFlags{auditLogUsed: true}
	c := &cobra.Command{
		Use:   mcpUse,
		Short: mcpShort,
		Long: `Serve the Model Context Protocol on stdin/stdout. The file tools (read_file,
write_file, edit_file, replace_lines, list_dir, find_files, grep, file_info,
create_dir) are confined to the workspace by the policy; run_command runs in
the OS sandbox with the same policy; sandbox_status reports it. A violation is
a tool error starting "sandbox violation:" and is written to the audit log.
A client that supports MCP elicitation is asked first where cordon run --ask
would ask: a file tool's path outside the policy, run_command's connection
to a host no rule names.
--no-sandbox (--mode off) lifts the confinement. The server is the program
cordon-mcp beside cordon: an MCP client may start either "cordon mcp" or
"cordon-mcp".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("ask") {
				return errors.New("cordon mcp asks through the MCP client, not a terminal: drop --ask (the file tools and run_command's network connections ask the client when it supports elicitation)")
			}
			p, h, err := pf.loadPolicy(cmd)
			if err != nil {
				return err
			}
			return serve(p, h)
		},
	}
	pf.register(c.Flags())
	return c
}

// newMCPExec is "cordon mcp" in cordon: it executes cordon-mcp beside
// cordon (found and checked by package sibling) with the same arguments
// and environment, so cordon itself never links the MCP SDK. Its flags,
// help (also "cordon help mcp") and errors are cordon-mcp's.
func newMCPExec() *cobra.Command {
	c := &cobra.Command{
		Use:                mcpUse,
		Short:              mcpShort,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			return execMCP(args)
		},
	}
	c.SetHelpFunc(func(*cobra.Command, []string) {
		err := execMCP([]string{"--help"})
		fmt.Fprintln(os.Stderr, "cordon: "+oneLine(err.Error()))
		os.Exit(result.ExitSetup)
	})
	return c
}

// execMCP replaces cordon with "cordon-mcp mcp ARGS...", executing the
// checked descriptor itself; it returns only with an error.
func execMCP(args []string) error {
	b, err := sibling.Find(MCPBinary)
	var se *sibling.Error
	if errors.As(err, &se) {
		return fmt.Errorf("the MCP server %w", err)
	}
	if err != nil {
		return fmt.Errorf("finding the MCP server: %w", err)
	}
	argv := append([]string{b.Path, "mcp"}, args...)
	// execProgram returns only with an error.
	err = execProgram(b.ExecPath(), argv)
	return fmt.Errorf("starting the MCP server %s: %w", b.Path, err)
}
