package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/testenv"
	"github.com/cordon-sandbox/cordon/result"
)

// documentedKeys reads docs/json.md's schema table: for each output (its
// first two words, "cordon status"), its top-level keys, each with
// whether it may be left out ("?").
func documentedKeys(t *testing.T) map[string]map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `(cordon [a-z]+)[^|]*\\| (.*) \\|$")
	key := regexp.MustCompile("^`([a-z_]+)(\\??)`")
	out := map[string]map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		keys := map[string]bool{}
		// Top-level keys only: what a parenthesis says is about a value.
		depth := 0
		var top strings.Builder
		for _, r := range m[2] {
			switch r {
			case '(':
				depth++
			case ')':
				depth--
			default:
				if depth == 0 {
					top.WriteRune(r)
				}
			}
		}
		for _, f := range strings.Split(top.String(), ",") {
			if k := key.FindStringSubmatch(strings.TrimSpace(f)); k != nil {
				keys[k[1]] = k[2] == "?"
			}
		}
		out[m[1]] = keys
	}
	for _, c := range []string{"cordon status", "cordon policy", "cordon cache", "cordon violations", "cordon run"} {
		if len(out[c]) == 0 {
			t.Fatalf("docs/json.md documents no keys for %s", c)
		}
	}
	return out
}

// checkKeys compares an object's keys with the documented ones: every key
// present is documented, every documented key not marked "?" is present.
func checkKeys(t *testing.T, what string, doc map[string]bool, got map[string]json.RawMessage) {
	t.Helper()
	for k := range got {
		if _, ok := doc[k]; !ok {
			t.Errorf("%s prints %q, which docs/json.md does not document", what, k)
		}
	}
	for k, optional := range doc {
		if _, ok := got[k]; !ok && !optional {
			t.Errorf("%s lacks %q, which docs/json.md documents as always there", what, k)
		}
	}
}

// tagKeys are the JSON keys of struct type v's fields, each with whether
// it is omitted when empty.
func tagKeys(v any) map[string]bool {
	out := map[string]bool{}
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = strings.Contains(opts, "omitempty")
	}
	return out
}

// runJSONCommand runs cordon ARGS in process with a fake home and returns
// its stdout.
func runJSONCommand(t *testing.T, args ...string) []byte {
	t.Helper()
	root := newRoot()
	root.SetArgs(args)
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	if err := root.Execute(); err != nil {
		t.Fatalf("cordon %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes()
}

// TestJSONSchemas: what each command prints with --json (and run's
// --json-out) has the keys docs/json.md documents, as one object.
func TestJSONSchemas(t *testing.T) {
	doc := documentedKeys(t)
	h := testenv.FakeHome(t)
	h.Setenv(t)
	ws := h.Workspace
	one := func(what string, b []byte) map[string]json.RawMessage {
		t.Helper()
		var m map[string]json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%s: not a JSON object: %v\n%s", what, err, b)
		}
		if dec.More() {
			t.Fatalf("%s: more than one JSON value:\n%s", what, b)
		}
		return m
	}
	checkKeys(t, "cordon status --json", doc["cordon status"], one("status", runJSONCommand(t, "status", "--json")))
	checkKeys(t, "cordon policy --json", doc["cordon policy"], one("policy", runJSONCommand(t, "policy", "--json", "--workspace", ws)))
	checkKeys(t, "cordon cache --json", doc["cordon cache"], one("cache", runJSONCommand(t, "cache", "--json")))
	// The policy's own keys are the YAML's.
	var pol struct {
		Policy map[string]json.RawMessage `json:"policy"`
	}
	if err := json.Unmarshal(runJSONCommand(t, "policy", "--json", "--workspace", ws), &pol); err != nil || !slices.ContainsFunc([]string{"mode", "workspace", "read", "write", "deny", "network"}, func(k string) bool { _, ok := pol.Policy[k]; return ok }) {
		t.Errorf("policy --json's policy: %v %v", err, pol.Policy)
	}
	// An audit record, every field set, as violations --json prints it.
	rec, err := json.Marshal(audit.Record{Timestamp: time.Now(), SessionID: "s", Command: "c", Operation: "network-connect", Path: "/p", Host: "h", Port: 1, Credential: "c", Method: "GET", Address: "a", Action: "denied", Rule: "r", Mode: "standard"})
	if err != nil {
		t.Fatal(err)
	}
	checkKeys(t, "an audit record", doc["cordon violations"], one("record", rec))
	// The result of a run: every field of result.Result is documented, and
	// marked "?" exactly when it is left out when empty.
	res := tagKeys(result.Result{})
	if !reflect.DeepEqual(res, doc["cordon run"]) {
		t.Errorf("cordon run --json-out: result.Result's keys %v, docs/json.md %v", res, doc["cordon run"])
	}
}
