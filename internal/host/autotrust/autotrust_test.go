package autotrust

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTrusts(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string // relative to the home ("ROOT" is the root)
		env   map[string]string
		want  map[string]string // name -> a phrase the reason holds
	}{
		{name: "nothing set", want: map[string]string{}},
		{name: "direnv prefix above the root", files: map[string]string{".config/direnv/direnv.toml": "[whitelist]\nprefix = [ \"~/src\" ]\n"},
			want: map[string]string{".envrc": "[whitelist] prefix"}},
		{name: "direnv prefix elsewhere", files: map[string]string{".config/direnv/direnv.toml": "[whitelist]\nprefix = [\"~/other\", \"relative\"]\n"},
			want: map[string]string{}},
		{name: "direnv exact .envrc", files: map[string]string{".config/direnv/direnv.toml": "[whitelist]\nexact = [\"ROOT/.envrc\"]\n"},
			want: map[string]string{".envrc": "[whitelist] exact"}},
		{name: "direnv's older config.toml", files: map[string]string{".config/direnv/config.toml": "[whitelist]\nprefix = [\"ROOT\"]\n"},
			want: map[string]string{".envrc": "config.toml"}},
		{name: "direnv under XDG_CONFIG_HOME", files: map[string]string{"xdg/direnv/direnv.toml": "[whitelist]\nprefix = [\"/\"]\n"},
			env: map[string]string{"XDG_CONFIG_HOME": "HOME/xdg"}, want: map[string]string{".envrc": "prefix /"}},
		{name: "direnv unparseable", files: map[string]string{".config/direnv/direnv.toml": "[whitelist\nprefix = \n"},
			want: map[string]string{".envrc": "could not be parsed"}},
		{name: "direnv without a whitelist", files: map[string]string{".config/direnv/direnv.toml": "[global]\nwarn_timeout = \"1m\"\n"},
			want: map[string]string{}},
		{name: "claude approves all (user settings)", files: map[string]string{".claude/settings.json": "{\n  \"enableAllProjectMcpServers\" : true\n}"},
			want: map[string]string{".mcp.json": "enableAllProjectMcpServers"}},
		{name: "claude approves by name (project settings)", files: map[string]string{"ROOT/.claude/settings.local.json": `{"enabledMcpjsonServers": [ "github" ]}`},
			want: map[string]string{".mcp.json": "enabledMcpjsonServers"}},
		{name: "claude's defaults in ~/.claude.json", files: map[string]string{".claude.json": `{"projects":{"/x":{"enabledMcpjsonServers":[],"disabledMcpjsonServers":["a"],"enableAllProjectMcpServers":false}}}`},
			want: map[string]string{}},
		{name: "a project's approval in ~/.claude.json", files: map[string]string{".claude.json": `{"projects":{"/x":{"enabledMcpjsonServers":[ ],"enableAllProjectMcpServers":true}}}`},
			want: map[string]string{".mcp.json": "enableAllProjectMcpServers in"}},
		{name: "CLAUDE_CONFIG_DIR", files: map[string]string{"cc/settings.json": `{"enableAllProjectMcpServers":true}`, ".claude/settings.json": `{}`},
			env: map[string]string{"CLAUDE_CONFIG_DIR": "HOME/cc"}, want: map[string]string{".mcp.json": "cc/settings.json"}},
		{name: "both", files: map[string]string{".config/direnv/direnv.toml": "[whitelist]\nprefix=[\"~\"]\n", ".claude/settings.json": `{"enableAllProjectMcpServers":true}`},
			want: map[string]string{".envrc": "prefix", ".mcp.json": "enableAll"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			root := filepath.Join(home, "src", "proj")
			subst := strings.NewReplacer("ROOT", root, "HOME", home)
			for rel, content := range tc.files {
				p := subst.Replace(rel)
				if !filepath.IsAbs(p) {
					p = filepath.Join(home, p)
				}
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(subst.Replace(content)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			getenv := func(k string) (string, bool) {
				v, ok := tc.env[k]
				return subst.Replace(v), ok
			}
			got := Trusts(Host{Home: home, Getenv: getenv}, root, []string{".envrc", ".mcp.json"})
			if len(got) != len(tc.want) {
				t.Fatalf("Trusts = %q, want names %q", got, tc.want)
			}
			for n, phrase := range tc.want {
				if !strings.Contains(got[n], phrase) {
					t.Errorf("%s: %q does not say %q", n, got[n], phrase)
				}
			}
		})
	}
}
