package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// commandExamples are the examples --help shows for each command, by the
// command's name: one table, applied by withExamples to the command tree
// of cordon and of cordon-mcp.
var commandExamples = map[string]string{
	"cordon": `  cordon run -- go test ./...      # run a command confined to this project
  cordon test -- npm install         # run it and report what was denied
  cordon status                      # what this machine can enforce`,
	"run": `  cordon run -- go test ./...
  cordon run --allow-net proxy.golang.org -- go mod download
  cordon run --credential github -- gh pr create --fill   # gh holds a placeholder; the proxy adds the token
  cordon run --allow-write ~/.cache/mytool --timeout 10m -- make
  cordon run --profile untrusted --mode strict -- ./script-from-the-web.sh`,
	"test": `  cordon test -- npm install
  cordon test --profile ci -- make check`,
	"learn": `  cordon learn -- make build > ~/.config/cordon/build.yaml   # outside the workspace
  cordon run --config ~/.config/cordon/build.yaml -- make build`,
	"policy": `  cordon policy                          # the effective policy as YAML (from any directory)
  cordon policy --explain -- go build    # and the sandbox plan for that command`,
	"status": `  cordon status --json`,
	"violations": `  cordon violations --since 24h
  cordon violations --session 7f3a9c --json`,
	"mcp": `  cordon mcp --workspace ~/src/project
  claude mcp add cordon -- cordon mcp --workspace "$PWD"`,
	"shell": `  cordon shell --allow-net github.com
  /sandbox status                        # inside: cordon's own commands start with /sandbox`,
	"cache": `  cordon cache
  cordon cache --clean`,
	"setup": `  cordon setup claude-code                 # Claude Code, for every project of this user
  cordon setup codex --project --dry-run   # print what it would write in this project
  cordon setup cursor --undo               # remove what setup added`,
	"hook": `  echo '{"hook_event_name":"PreToolUse","cwd":"/src/app","tool_name":"Read","tool_input":{"file_path":"/src/app/.env"}}' | cordon hook claude-code`,
	"version": `  cordon version
  cordon --version`,
	"bash":       `  source <(cordon completion bash)`,
	"zsh":        `  cordon completion zsh > "${fpath[1]}/_cordon"`,
	"fish":       `  cordon completion fish | source`,
	"powershell": `  cordon completion powershell | Out-String | Invoke-Expression`,
	"completion": `  cordon completion bash > /etc/bash_completion.d/cordon
  cordon completion zsh > "${fpath[1]}/_cordon"
  cordon completion fish > ~/.config/fish/completions/cordon.fish`,
}

// withExamples sets the example of every command of root's tree that
// commandExamples names, and returns root.
func withExamples(root *cobra.Command) *cobra.Command {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if ex, ok := commandExamples[c.Name()]; ok && c.Example == "" {
			c.Example = strings.TrimRight(ex, "\n")
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}
