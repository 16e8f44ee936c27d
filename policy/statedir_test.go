package policy

import "testing"

// TestStateDir: the one state directory of the CLI, the MCP server and
// the library, as the XDG Base Directory specification has it.
func TestStateDir(t *testing.T) {
	env := func(vals map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vals[k]; return v, ok }
	}
	for _, tc := range []struct {
		name string
		h    Host
		want string
	}{
		{"default", Host{Home: "/home/u"}, "/home/u/.local/state/cordon"},
		{"field", Host{Home: "/home/u", XDGStateHome: "/s"}, "/s/cordon"},
		{"variable", Host{Home: "/home/u", Getenv: env(map[string]string{"XDG_STATE_HOME": "/v"})}, "/v/cordon"},
		{"field wins", Host{Home: "/home/u", XDGStateHome: "/s", Getenv: env(map[string]string{"XDG_STATE_HOME": "/v"})}, "/s/cordon"},
		{"relative ignored", Host{Home: "/home/u", XDGStateHome: "rel", Getenv: env(map[string]string{"XDG_STATE_HOME": "rel2"})}, "/home/u/.local/state/cordon"},
	} {
		if got := tc.h.StateDir(); got != tc.want {
			t.Errorf("%s: StateDir() = %q, want %q", tc.name, got, tc.want)
		}
		if got, want := DefaultAuditLog(tc.h), tc.want+"/audit.jsonl"; got != want {
			t.Errorf("%s: DefaultAuditLog = %q, want %q", tc.name, got, want)
		}
	}
}
