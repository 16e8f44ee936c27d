package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// module is the import path of cordon's module.
const module = "github.com/cordon-sandbox/cordon/"

// TestDependencies: each binary links only what it uses, as go list -deps
// says (every package the build links, the standard library's too). The
// helper, started in every sandbox, links neither net/http, the command
// line (cobra), YAML, the MCP SDK, nor cordon's planner, policy, config,
// probe, launcher or sibling discovery (the host finds the helper, never
// the reverse); cordon never links the MCP SDK, which cordon-mcp alone
// serves.
func TestDependencies(t *testing.T) {
	for _, tc := range []struct {
		bin       string
		forbidden []string
	}{
		{"cordon-helper", []string{"net/http", "github.com/spf13/cobra", "go.yaml.in/yaml", "github.com/modelcontextprotocol",
			module + "policy", module + "internal/plan", module + "internal/config", module + "internal/host/probe", module + "internal/launch", module + "internal/globscan",
			module + "internal/cli", module + "internal/mcp", module + "internal/host/sibling"}},
		{"cordon", []string{"github.com/modelcontextprotocol", module + "internal/mcp", module + "internal/helper"}},
	} {
		t.Run(tc.bin, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-deps", module+"cmd/"+tc.bin)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -deps: %v", err)
			}
			deps := strings.Fields(string(out))
			if len(deps) < 10 {
				t.Fatalf("go list -deps %s listed only %q", tc.bin, deps)
			}
			for _, d := range deps {
				for _, f := range tc.forbidden {
					if d == f || strings.HasPrefix(d, f+"/") {
						t.Errorf("%s links %s (forbidden: %s)", tc.bin, d, f)
					}
				}
			}
		})
	}
}
