package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/agenthook"
	"github.com/cordon-sandbox/cordon/internal/agentsetup"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/spf13/cobra"
)

// cordonPath is the absolute path of the running cordon binary, which the
// hooks and the rewritten commands run.
func cordonPath() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding cordon's own path: %w", err)
	}
	return filepath.Abs(p)
}

func newSetup() *cobra.Command {
	var o agentsetup.Options
	c := &cobra.Command{
		Use:   "setup AGENT [--project] [--dry-run] [--undo]",
		Short: "put cordon in front of an agent (" + strings.Join(agentsetup.Names(), ", ") + ")",
		Long: `Write the agent's own configuration so that its shell commands run under
cordon and its file tools obey cordon's policy (cordon hook AGENT), and register
cordon's MCP server. User-level by default; --project writes the current
project's files. A second run changes nothing; --undo removes what setup added.
See docs/agents.md.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("name one agent: cordon setup AGENT, with AGENT one of %s", strings.Join(agentsetup.Names(), ", "))
			}
			return nil
		},
		ValidArgs: agentsetup.Names(),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := host()
			if err != nil {
				return err
			}
			self, err := cordonPath()
			if err != nil {
				return err
			}
			o.Agent, o.Cordon, o.Home, o.Workspace, o.Getenv, o.Out = args[0], self, h.Home, h.Cwd, os.Getenv, cmd.OutOrStdout()
			return agentsetup.Run(o)
		},
	}
	c.Flags().BoolVar(&o.Project, "project", false, "write the project's configuration (the current directory) instead of the user's")
	c.Flags().BoolVar(&o.DryRun, "dry-run", false, "print each file setup would write, whole, and write nothing")
	c.Flags().BoolVar(&o.Undo, "undo", false, "remove what setup added")
	return c
}

func newHook() *cobra.Command {
	return &cobra.Command{
		Use:   "hook AGENT",
		Short: "serve that agent's hook: its hook JSON on stdin, its answer on stdout",
		Long: `Serve one call of the agent's hook, as cordon setup configures it: a shell
command is rewritten to run under cordon run, a file tool's path is decided by
the workspace's policy. Input it cannot parse is refused with exit status 2,
which every agent takes as "block". See docs/agents.md.`,
		// Flags are not parsed: a bad one would fail with cordon's
		// usual status 125, which the agents take as "go on".
		DisableFlagParsing: true,
		ValidArgs:          agenthook.Names(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
				return cmd.Help()
			}
			agent := ""
			if len(args) == 1 {
				agent = args[0]
			}
			code := agenthook.Serve(agent, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), hookEnv())
			if code != 0 {
				return &exitError{code}
			}
			return nil
		},
	}
}

// hookEnv is the environment of cordon hook: this binary, the user's home,
// and the policy cordon run would load for a workspace.
func hookEnv() agenthook.Env {
	self, _ := cordonPath()
	home, _ := os.UserHomeDir()
	return agenthook.Env{
		Cordon: self,
		Home:   home,
		Getenv: os.Getenv,
		Decider: func(ws, cwd string) (*policy.Decider, error) {
			if home == "" {
				return nil, fmt.Errorf("no home directory")
			}
			p, err := policy.Load(policy.Options{Host: policy.Host{Home: home, Cwd: cwd, Getenv: os.LookupEnv, Environ: os.Environ}, Workspace: ws})
			if err != nil {
				return nil, err
			}
			return p.Decider(home), nil
		},
	}
}
