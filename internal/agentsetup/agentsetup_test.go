package agentsetup

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const cordon = "/opt/cordon's bin/cordon"

// fake is a fake home and project with the user's own settings in them.
type fake struct {
	home, ws string
}

func newFake(t *testing.T) *fake {
	t.Helper()
	root := t.TempDir()
	f := &fake{home: filepath.Join(root, "home"), ws: filepath.Join(root, "home", "proj")}
	if err := os.MkdirAll(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fake) write(t *testing.T, rel, content string) string {
	t.Helper()
	p := filepath.Join(f.home, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs setup and returns its output.
func (f *fake) run(t *testing.T, agent string, project, dry, undo bool) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := Run(Options{Agent: agent, Project: project, DryRun: dry, Undo: undo, Cordon: cordon, Home: f.home, Workspace: f.ws, Out: &out})
	return out.String(), err
}

// snapshot reads every file below the home.
func (f *fake) snapshot(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(f.home, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			m[strings.TrimPrefix(p, f.home)] = string(b)
		}
		return nil
	})
	return m
}

func same(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The user's own settings, in the layout setup writes back (two-space
// indentation), so that an undo must give them back byte for byte.
var userFiles = map[string]map[string]string{
	"claude-code": {
		".claude/settings.json": `{
  "model": "opus",
  "permissions": {
    "allow": [
      "Bash(ls:*)"
    ]
  },
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Write",
        "hooks": [
          {
            "type": "command",
            "command": "prettier --write"
          }
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "my-audit",
            "timeout": 30
          }
        ]
      }
    ]
  },
  "zz": 1.50
}
`,
		".claude.json": `{
  "numStartups": 42,
  "mcpServers": {
    "other": {
      "command": "npx",
      "args": [
        "-y",
        "other <&>"
      ]
    }
  }
}
`,
	},
	"codex": {
		".codex/config.toml": "# my codex config\nmodel = \"gpt-5-codex\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n",
		".codex/hooks.json":  "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"notify\"\n          }\n        ]\n      }\n    ]\n  }\n}\n",
	},
	"gemini": {
		".gemini/settings.json": "{\n  \"theme\": \"Dracula\",\n  \"mcpServers\": {\n    \"gh\": {\n      \"httpUrl\": \"https://example.com/mcp\"\n    }\n  }\n}\n",
	},
	"cursor": {
		".cursor/hooks.json": "{\n  \"version\": 1,\n  \"hooks\": {\n    \"afterFileEdit\": [\n      {\n        \"command\": \"./fmt.sh\"\n      }\n    ]\n  }\n}\n",
		".cursor/mcp.json":   "{\n  \"mcpServers\": {\n    \"db\": {\n      \"url\": \"http://127.0.0.1:9000/mcp\"\n    }\n  }\n}\n",
	},
}

// TestSetupUndo: for each agent, on a home holding the user's own
// settings: --dry-run writes nothing and prints what setup then writes;
// setup keeps every other key; a second run changes nothing and says so;
// --undo gives back the user's files byte for byte; on an empty home,
// setup then --undo leaves nothing.
func TestSetupUndo(t *testing.T) {
	for _, agent := range Names() {
		t.Run(agent, func(t *testing.T) {
			f := newFake(t)
			for rel, c := range userFiles[agent] {
				f.write(t, rel, c)
			}
			before := f.snapshot(t)
			dry, err := f.run(t, agent, false, true, false)
			if err != nil {
				t.Fatal(err)
			}
			if !same(before, f.snapshot(t)) {
				t.Fatal("--dry-run wrote")
			}
			if _, err := f.run(t, agent, false, false, false); err != nil {
				t.Fatal(err)
			}
			after := f.snapshot(t)
			for rel, c := range after {
				if !strings.Contains(dry, "would write ~"+rel+":\n"+c) {
					t.Errorf("--dry-run did not print %s as written:\n%s\nprinted:\n%s", rel, c, dry)
				}
				if !strings.Contains(c, "cordon") {
					t.Errorf("%s has nothing of cordon's:\n%s", rel, c)
				}
			}
			for rel, c := range before {
				for _, line := range strings.Split(c, "\n") {
					if !strings.Contains(after[rel], strings.TrimSpace(line)) {
						t.Errorf("%s lost %q:\n%s", rel, line, after[rel])
					}
				}
			}
			out, err := f.run(t, agent, false, false, false)
			if err != nil || strings.Count(out, "nothing changed") != strings.Count(out, "\n")-strings.Count(out, "cordon: warning: ") || !same(after, f.snapshot(t)) {
				t.Fatalf("second run changed something: %v\n%s", err, out)
			}
			if _, err := f.run(t, agent, false, false, true); err != nil {
				t.Fatal(err)
			}
			if got := f.snapshot(t); !same(before, got) {
				t.Fatalf("--undo did not restore the user's files:\nbefore %q\nafter %q", before, got)
			}
			out, _ = f.run(t, agent, false, false, true)
			if !strings.Contains(out, "nothing changed") {
				t.Errorf("second undo: %s", out)
			}

			// An empty project: setup, then undo, leaves nothing.
			g := newFake(t)
			if _, err := g.run(t, agent, true, false, false); err != nil {
				t.Fatal(err)
			}
			if len(g.snapshot(t)) == 0 {
				t.Fatal("--project wrote nothing")
			}
			for rel := range g.snapshot(t) {
				if !strings.HasPrefix(rel, "/proj/") {
					t.Errorf("--project wrote %s outside the project", rel)
				}
			}
			if _, err := g.run(t, agent, true, false, true); err != nil {
				t.Fatal(err)
			}
			if s := g.snapshot(t); len(s) != 0 {
				t.Fatalf("undo left %v", s)
			}
		})
	}
}

// TestSetupClaudeCodeLayout: the hooks Claude Code runs: one PreToolUse
// group for Bash and one for the file tools, each running cordon hook
// claude-code by its absolute path, quoted; the MCP server in
// ~/.claude.json; a hook of the user's on Bash is kept beside cordon's.
func TestSetupClaudeCodeLayout(t *testing.T) {
	f := newFake(t)
	for rel, c := range userFiles["claude-code"] {
		f.write(t, rel, c)
	}
	out, err := f.run(t, "claude-code", false, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "cordon: warning: ~/.claude/settings.json has other PreToolUse hooks on Bash (\"my-audit\")") {
		t.Errorf("no warning of the user's own Bash hook:\n%s", out)
	}
	s := f.snapshot(t)
	settings := s["/.claude/settings.json"]
	o, err := parseJSON([]byte(settings))
	if err != nil {
		t.Fatal(err)
	}
	groups, _ := hookGroups(o, "PreToolUse", false)
	var matchers []string
	for _, g := range *groups {
		m, _ := g.get("matcher")
		matchers = append(matchers, m.(string))
	}
	if strings.Join(matchers, ",") != "Bash,Bash,"+claudeFiles {
		t.Errorf("matchers %q", matchers)
	}
	want := `"command": "'/opt/cordon'\\''s bin/cordon' hook claude-code"`
	if strings.Count(settings, want) != 2 || !strings.Contains(settings, "my-audit") {
		t.Errorf("settings.json:\n%s", settings)
	}
	if !strings.Contains(s["/.claude.json"], "\"cordon\": {\n      \"command\": \"/opt/cordon's bin/cordon\",\n      \"args\": [\n        \"mcp\"\n      ]") {
		t.Errorf(".claude.json:\n%s", s["/.claude.json"])
	}
	// Moved binary: a second setup from elsewhere updates the command.
	var moved bytes.Buffer
	if err := Run(Options{Agent: "claude-code", Cordon: "/usr/local/bin/cordon", Home: f.home, Workspace: f.ws, Out: &moved}); err != nil {
		t.Fatal(err)
	}
	if got := f.snapshot(t)["/.claude/settings.json"]; strings.Contains(got, "opt/cordon") || strings.Count(got, "'/usr/local/bin/cordon' hook claude-code") != 2 {
		t.Errorf("after a move:\n%s", got)
	}
}

// TestSetupRefuses: a file setup cannot parse, or an MCP server named
// cordon that setup did not write, is refused with the file named, and
// nothing is written (not even the other files).
func TestSetupRefuses(t *testing.T) {
	for _, tc := range []struct {
		agent, rel, content, want string
	}{
		{"claude-code", ".claude/settings.json", "{\n  \"model\": \"opus\",\n}\n", "~/.claude/settings.json: not valid JSON (line 3"},
		{"claude-code", ".claude/settings.json", `{"hooks": []}`, `"hooks" is not an object`},
		{"claude-code", ".claude.json", `{"mcpServers": {"cordon": {"command": "npx", "args": ["cordon-mcp"]}}}`, "already an MCP server setup did not write"},
		{"gemini", ".gemini/settings.json", "// comment\n{}", "not valid JSON"},
		{"codex", ".codex/config.toml", "[mcp_servers.cordon]\ncommand = \"x\"\n", "already defines mcp_servers.cordon"},
		{"codex", ".codex/config.toml", "a = \"\xff\"\n", "not UTF-8"},
		{"cursor", ".cursor/hooks.json", `{"version": 1, "hooks": {"beforeReadFile": {}}}`, "is not a list"},
	} {
		t.Run(tc.agent+" "+tc.want, func(t *testing.T) {
			f := newFake(t)
			f.write(t, tc.rel, tc.content)
			before := f.snapshot(t)
			_, err := f.run(t, tc.agent, false, false, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing was written") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v", err)
			}
			if !same(before, f.snapshot(t)) {
				t.Fatal("wrote despite the refusal")
			}
		})
	}
}

// TestSetupProjectInHome: --project run in the home directory is refused.
func TestSetupProjectInHome(t *testing.T) {
	f := newFake(t)
	var out bytes.Buffer
	err := Run(Options{Agent: "claude-code", Project: true, Cordon: cordon, Home: f.home, Workspace: f.home, Out: &out})
	if err == nil || !strings.Contains(err.Error(), "--project in the home directory") || len(f.snapshot(t)) != 0 {
		t.Fatalf("got %v", err)
	}
}

// TestSetupFollowsLink: a settings file that is a symbolic link (a
// dotfiles repository) stays a link; its target is written.
func TestSetupFollowsLink(t *testing.T) {
	f := newFake(t)
	target := f.write(t, "dotfiles/claude-settings.json", "{\n  \"model\": \"opus\"\n}\n")
	link := filepath.Join(f.home, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink("../dotfiles/claude-settings.json", link); err != nil {
		t.Fatal(err)
	}
	if _, err := f.run(t, "claude-code", false, false, false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced")
	}
	b, _ := os.ReadFile(target)
	if !strings.Contains(string(b), "hook claude-code") {
		t.Fatalf("target not written:\n%s", b)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
	}
}

// TestIsOurs: only a cordon binary running hook AGENT is setup's.
func TestIsOurs(t *testing.T) {
	for cmd, want := range map[string]bool{
		hookCommand(cordon, "codex"):           true,
		"/usr/bin/cordon hook codex":           true,
		"'/x/cordon' hook codex":               true,
		"cordon hook codex":                    true,
		"/usr/bin/cordon hook claude-code":     false,
		"/usr/bin/notcordon hook codex":        false,
		"rm -rf ~; /usr/bin/cordon hook codex": false,
		"$(evil)/cordon hook codex":            false,
	} {
		if isOurs(cmd, "codex") != want {
			t.Errorf("isOurs(%q) = %v", cmd, !want)
		}
	}
}
