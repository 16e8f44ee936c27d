package cli

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"

	"github.com/cordon-sandbox/cordon/internal/ask"
	"github.com/cordon-sandbox/cordon/internal/launch"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/spf13/cobra"
)

// askSession is the asking of a run with on_violation: ask: questions at
// the terminal, answers "for this workspace" saved in the user config.
// Without a terminal on stdin and stderr nobody is there to answer:
// --ask is refused, and on_violation: ask from a config file acts as
// block (nil session), so that the same config serves scripts.
func askSession(cmd *cobra.Command, p *policy.Policy, h policy.Host) (*ask.Session, error) {
	flag := cmd.Flags().Changed("ask")
	if runtime.GOOS != "linux" {
		if flag {
			return nil, errors.New("--ask is built for Linux only for now; drop it (the run then blocks as on_violation: block)")
		}
		return nil, nil
	}
	if !launch.IsTerminal(os.Stdin) || !launch.IsTerminal(os.Stderr) {
		if flag {
			return nil, errors.New("--ask needs a person at a terminal: stdin and stderr must be a terminal; drop --ask to refuse without asking")
		}
		return nil, nil
	}
	cfg := policy.UserConfigPath(h)
	// cordon's own files are never asked about: its config, its state
	// (the audit log, the masks) and every workspace's sandbox cache.
	never := []string{filepath.Dir(cfg), h.StateDir(), filepath.Dir(policy.SandboxCacheRoot(h))}
	return &ask.Session{Prompter: &ask.Console{}, ConfigPath: cfg, Workspace: p.Workspace, Never: never}, nil
}
