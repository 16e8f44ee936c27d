package helperspec

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/enforce/landlock"
	"github.com/cordon-sandbox/cordon/internal/enforce/seccomp"
)

// TestDecode checks the spec's round trip through JSON, and that a spec
// the helper cannot apply in full is refused, never applied in part.
func TestDecode(t *testing.T) {
	full := Spec{
		Version:  Version,
		Binary:   "/opt/cordon/cordon-helper",
		Rlimits:  []Rlimit{{Name: "RLIMIT_CPU", Resource: 0, Value: 3}},
		Landlock: &landlock.Rules{ReadOnly: []string{"/"}, ReadWrite: []string{"/w"}, DenyNetwork: true},
		WaitGo:   true,
		Seccomp:  &seccomp.Options{Strict: true, DenyNetwork: true, DenyUnix: true},
		Env:      []string{"PATH=/usr/bin", "A=b"},
	}
	data, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, in string
		want     *Spec
		err      string
	}{
		{"full", string(data), &full, ""},
		{"empty", `{"version":5}`, &Spec{Version: Version}, ""},
		{"standard seccomp", `{"version":5,"seccomp":{}}`, &Spec{Version: Version, Seccomp: &seccomp.Options{}}, ""},
		{"unknown field", `{"version":5,"seccomp":{"strict":true},"deny_ptrace":true}`, nil, `unknown field "deny_ptrace"`},
		{"unknown seccomp option", `{"version":5,"seccomp":{"strictest":true}}`, nil, `unknown field "strictest"`},
		{"old string mode", `{"version":5,"seccomp":"strict"}`, nil, "cannot unmarshal string"},
		{"truncated", string(data[:len(data)-1]), nil, "unexpected end of JSON input"},
		{"too long", `{"env":["` + strings.Repeat("x", MaxSpec) + `"]}`, nil, "longer than"},
		// A launcher of another build: its version is checked before
		// any field it may have added or dropped.
		{"no version", `{"seccomp":{}}`, nil, "the helper binary is from another cordon build (spec version 5, cordon wants 0): install all binaries together"},
		{"newer version", `{"version":6,"binary":"/opt/cordon/cordon-helper","deny_ptrace":true}`, nil,
			"the helper /opt/cordon/cordon-helper is from another cordon build (spec version 5, cordon wants 6): install all binaries together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Decode: err %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, *tc.want) {
				t.Fatalf("Decode = %+v, %v; want %+v", got, err, *tc.want)
			}
		})
	}
}

// TestSpecJSON pins the wire names of the spec's seccomp options.
func TestSpecJSON(t *testing.T) {
	data, err := json.Marshal(Spec{Version: Version, Seccomp: &seccomp.Options{Strict: true, DenyUnix: true}, WaitGo: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":5,"wait_go":true,"seccomp":{"strict":true,"deny_unix":true}}`; string(data) != want {
		t.Errorf("spec JSON %s, want %s", data, want)
	}
}

// TestMessages checks that each status message the helper sends parses
// back on the host, and that a malformed one is an error, never a zero
// exit status.
func TestMessages(t *testing.T) {
	for _, tc := range []struct {
		name  string
		notes []string
	}{
		{"none", nil},
		{"one", []string{"Landlock: no TCP rules (ABI 3)"}},
		{"two", []string{"a", "b c"}},
	} {
		t.Run("ready "+tc.name, func(t *testing.T) {
			msg := ReadyMessage(tc.notes)
			if msg[0] != MsgReady {
				t.Fatalf("ready message %q", msg)
			}
			got, err := ParseReady(msg)
			if err != nil || !reflect.DeepEqual(got, tc.notes) {
				t.Errorf("ParseReady(%q) = %q, %v; want %q", msg, got, err, tc.notes)
			}
		})
	}
	for _, tc := range []struct {
		code int
		msg  string
	}{{127, "make: command not found inside the sandbox"}, {126, "x: permission denied"}, {125, ""}} {
		b := ExecFailedMessage(tc.code, tc.msg)
		code, msg, err := ParseExecFailed(b)
		if err != nil || code != tc.code || msg != tc.msg {
			t.Errorf("ParseExecFailed(%q) = %d %q %v", b, code, msg, err)
		}
	}
	for _, bad := range [][]byte{nil, []byte("E"), []byte("E x"), []byte("E0 ok"), []byte("E300 big"), []byte("R127 x")} {
		if code, _, err := ParseExecFailed(bad); err == nil {
			t.Errorf("ParseExecFailed(%q) = %d, want an error", bad, code)
		}
	}
	if _, err := ParseReady([]byte("E127 x")); err == nil {
		t.Error("ParseReady accepted an exec failure")
	}
	if !bytes.Equal(ExecFailedMessage(127, "a b"), []byte("E127 a b")) {
		t.Errorf("exec failure wire format changed: %q", ExecFailedMessage(127, "a b"))
	}
}
