package backend

import (
	"encoding/json"
	"testing"
)

func TestChoose(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Facts
		want Name
	}{
		{"bwrap works", Facts{OS: "linux", Bwrap: true, Landlock: true}, Bwrap},
		{"landlock only", Facts{OS: "linux", Landlock: true}, Landlock},
		{"nothing", Facts{OS: "linux"}, None},
		{"mac", Facts{OS: "darwin", Seatbelt: true, Bwrap: true}, Seatbelt},
		{"mac without sandbox-exec", Facts{OS: "darwin"}, None},
		{"windows", Facts{OS: "windows"}, Job},
	} {
		if got := Choose(tc.f); got != tc.want {
			t.Errorf("%s: Choose = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestNameJSON: a Name marshals as the plain string, so the JSON of
// cordon status, cordon run --json and the MCP tools is unchanged.
func TestNameJSON(t *testing.T) {
	b, err := json.Marshal(struct {
		Backend Name `json:"backend"`
	}{Landlock})
	if err != nil || string(b) != `{"backend":"landlock"}` {
		t.Errorf("%s, %v", b, err)
	}
	for _, n := range []Name{"", Auto} {
		if !n.IsAuto() {
			t.Errorf("%q is not auto", n)
		}
	}
	if Bwrap.IsAuto() || len(Names()) != 6 {
		t.Errorf("names %q", Names())
	}
}
