package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cordon-sandbox/cordon/audit"
	"github.com/cordon-sandbox/cordon/mcpserver"
	"github.com/cordon-sandbox/cordon/plan"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

// newMCP is "cordon mcp": the MCP server on stdio.
func newMCP() *cobra.Command {
	pf := policyFlags{auditLogUsed: true}
	c := &cobra.Command{
		Use:   "mcp [flags]",
		Short: "MCP server on stdio exposing confined tools",
		Long: `Serve the Model Context Protocol on stdin/stdout. The file tools (read_file,
write_file, edit_file, replace_lines, list_dir, find_files, grep, file_info,
create_dir) are confined to the workspace by the policy; run_command runs in
the OS sandbox with the same policy; sandbox_status reports it. A violation is
a tool error starting "sandbox violation:" and is written to the audit log.
--no-sandbox (--mode off) lifts the confinement.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, h, err := pf.loadPolicy(cmd)
			if err != nil {
				return err
			}
			var lg *audit.Log
			if p.Audit.Enabled && p.Audit.LogDenied && p.Audit.LogFile != "" {
				if lg, err = audit.Open(p.Audit.LogFile); err != nil {
					return err
				}
				defer lg.Close()
			}
			srv, err := mcpserver.New(mcpserver.Options{
				Policy:    p,
				Audit:     lg,
				SessionID: audit.NewSessionID(),
				Version:   Version,
				Plan:      plan.Options{Home: h.Home, Getenv: h.Getenv, StateDir: stateDir(h)},
			})
			if err != nil {
				return err
			}
			defer srv.Close()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := srv.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
				return fmt.Errorf("mcp: %w", err)
			}
			return nil
		},
	}
	pf.register(c.Flags())
	return c
}
