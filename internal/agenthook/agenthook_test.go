package agenthook

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testenv"
	"github.com/cordon-sandbox/cordon/policy"
)

// tricky are shell commands whose every character must reach bash as
// written: quotes, substitutions, newlines, backticks, globs, a NUL-free
// binary-ish string.
var tricky = []string{
	`echo hello`,
	`echo "it's" 'single' "dou\"ble"`,
	`echo $(id -u) ${HOME} $((1+2))`,
	"echo `whoami`; echo done",
	"printf 'a\\nb'\necho second line\n\techo tab",
	`'; touch /tmp/pwned; echo '`,
	`\'' ; touch pwned ; '`,
	`echo * ? [a] ~ {a,b} && false || true | cat > /dev/null &`,
	`echo ''''`,
	"echo \x01\x7f é 日本",
}

// TestQuote: bash gets each string back, byte for byte, from Quote.
func TestQuote(t *testing.T) {
	bash := testenv.Tool(t, "bash", "apt-get install -y bash")
	for _, s := range tricky {
		out, err := exec.Command(bash, "-c", "printf %s "+Quote(s)).Output()
		if err != nil {
			t.Fatalf("Quote(%q): %v", s, err)
		}
		if string(out) != s {
			t.Errorf("Quote(%q) came back as %q", s, out)
		}
	}
}

// TestIsWrapped: exactly Wrap's output is confined; a command that adds
// anything outside the one quoted word is not.
func TestIsWrapped(t *testing.T) {
	const cordon, ws = "/usr/bin/cordon", "/w/it's"
	for _, s := range tricky {
		if w := Wrap(cordon, ws, s); !IsWrapped(w, cordon, ws) {
			t.Errorf("Wrap(%q) = %q not recognised", s, w)
		}
	}
	prefix := wrapPrefix(cordon, ws)
	for _, c := range []string{
		prefix,
		prefix + `'x' ; rm -rf ~`,
		prefix + `'x'$(id)`,
		prefix + `'x' 'y'`,
		prefix + `"x"`,
		prefix + `'x`,
		prefix + "'x'\n'y'",
		prefix + `'x'\`,
		Wrap(cordon, "/other", "ls"),
		Wrap("/tmp/cordon", ws, "ls"),
		"ls",
	} {
		if IsWrapped(c, cordon, ws) {
			t.Errorf("IsWrapped(%q) = true", c)
		}
	}
}

// hookEnv is a fake home with a secret, a workspace in it with a .env,
// an ordinary file, and links out of it.
type hookEnv struct {
	home, ws string
	env      Env
}

func newHookEnv(t *testing.T) *hookEnv {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &hookEnv{home: filepath.Join(root, "home"), ws: filepath.Join(root, "home", "src", "proj")}
	for p, c := range map[string]string{
		".ssh/id_rsa":           "KEY",
		".bashrc":               "rc",
		"src/proj/main.go":      "package main",
		"src/proj/.env":         "TOKEN=1",
		"src/proj/sub/a.txt":    "a",
		"src/other/notes.txt":   "n",
		"src/proj/sub2/.env":    "T=2",
		"src/proj/pkg/a.go":     "package pkg",
		"src/proj/pkg2/b.go":    "package pkg2",
		"src/proj/pkg3/c.go":    "package pkg3",
		".config/cordon/.keep":  "",
		"src/proj/node/.keep":   "",
		"src/proj/.git/HEAD":    "ref: refs/heads/main\n",
		"src/proj/.git/config":  "",
		"src/proj/docs/READ.md": "r",
	} {
		p = filepath.Join(h.home, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"src/proj/key":     filepath.Join(h.home, ".ssh", "id_rsa"),
		"src/proj/up":      "../..",
		"src/proj/sshdir":  "../../.ssh",
		"src/proj/loop":    "loop",
		"src/proj/sub/env": "../.env",
		"src/proj/pkg2/o":  "../../other",
		"src/proj/pkg3/l":  "../sub2",
		"src/proj/sub2/up": "../pkg3",
	} {
		if err := os.Symlink(target, filepath.Join(h.home, link)); err != nil {
			t.Fatal(err)
		}
	}
	home := h.home
	h.env = Env{
		Cordon: "/opt/cordon/bin/cordon",
		Home:   home,
		Decider: func(ws, cwd string) (*policy.Decider, error) {
			p, err := policy.Load(policy.Options{Host: policy.Host{Home: home, Cwd: cwd}, Workspace: ws, SkipUserConfig: true})
			if err != nil {
				return nil, err
			}
			return p.Decider(home), nil
		},
	}
	return h
}

// serve runs one hook call of agent with input and returns the exit
// status, stdout (decoded when not empty) and stderr.
func (h *hookEnv) serve(t *testing.T, agent string, input any) (int, map[string]any, string) {
	t.Helper()
	var in []byte
	switch v := input.(type) {
	case string:
		in = []byte(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		in = b
	}
	var out, errb bytes.Buffer
	code := Serve(agent, bytes.NewReader(in), &out, &errb, h.env)
	var ans map[string]any
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
			t.Fatalf("answer %q is not JSON: %v", out.String(), err)
		}
		if bytes.Count(bytes.TrimSpace(out.Bytes()), []byte("\n")) != 0 {
			t.Fatalf("answer is not one line: %q", out.String())
		}
	}
	return code, ans, errb.String()
}

// claudeCall is a PreToolUse input as Claude Code's hooks reference
// documents it.
func (h *hookEnv) claudeCall(tool string, input map[string]any) map[string]any {
	return map[string]any{
		"session_id":      "abc123",
		"transcript_path": filepath.Join(h.home, ".claude/projects/proj/00893aaf.jsonl"),
		"cwd":             h.ws,
		"permission_mode": "default",
		"hook_event_name": "PreToolUse",
		"tool_name":       tool,
		"tool_input":      input,
		"tool_use_id":     "toolu_01ABC123",
	}
}

// decision is hookSpecificOutput.permissionDecision and its reason.
func decision(ans map[string]any) (string, string) {
	o, _ := ans["hookSpecificOutput"].(map[string]any)
	d, _ := o["permissionDecision"].(string)
	r, _ := o["permissionDecisionReason"].(string)
	return d, r
}
