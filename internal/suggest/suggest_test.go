package suggest

import "testing"

func TestClosest(t *testing.T) {
	flags := []string{"allow-read", "allow-write", "allow-net", "deny", "deny-write", "json", "profile"}
	for word, want := range map[string]string{
		"allow-wirte": "allow-write", "alow-net": "allow-net", "jsno": "json", "prof": "profile",
		"deny-wrte": "deny-write", "x": "", "network": "", "allow": "",
	} {
		if got := Closest(word, flags); got != want {
			t.Errorf("Closest(%q) = %q, want %q", word, got, want)
		}
	}
}

func TestUnknown(t *testing.T) {
	names := []string{"claude-code", "codex", "cursor", "gemini"}
	for word, want := range map[string]string{
		"claud-code": `unknown agent "claud-code" (did you mean claude-code?): use one of claude-code, codex, cursor, gemini`,
		"aider":      `unknown agent "aider": use one of claude-code, codex, cursor, gemini`,
		"":           `no agent named: use one of claude-code, codex, cursor, gemini`,
	} {
		if got := Unknown("agent", word, names); got != want {
			t.Errorf("Unknown(%q) = %q, want %q", word, got, want)
		}
	}
}
